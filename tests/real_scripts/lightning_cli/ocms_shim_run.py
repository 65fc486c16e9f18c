"""Runs a LightningCLI script unchanged on generated MNIST (no download, no torchvision):
the demo MNIST dataset is replaced before the script imports it. Usage:
python ocms_shim_run.py SCRIPT [LightningCLI arguments]."""

import builtins
import runpy
import sys
import types

import lightning.pytorch.demos.mnist_datamodule as mnist_datamodule
import torch


class GeneratedMNIST(torch.utils.data.Dataset):
    """60000 (train) or 10000 images, each made from its index: the same every run."""

    def __init__(self, root, train=True, download=False, transform=None):
        self.size = 60000 if train else 10000
        self.offset = 0 if train else 60000

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(self.offset + index)
        return torch.rand(1, 28, 28, generator=generator), (self.offset + index) % 10


mnist_datamodule.MNIST = GeneratedMNIST
# Without torchvision the script never imports `transforms`; it only calls ToTensor().
builtins.transforms = types.SimpleNamespace(ToTensor=lambda: None)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
