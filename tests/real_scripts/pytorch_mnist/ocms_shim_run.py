"""Runs a pytorch/examples MNIST script unchanged with a stand-in torchvision: MNIST is
generated (fixed seed), not downloaded; save_image writes nothing. Also used for vae/.
Usage: python ocms_shim_run.py main.py [main.py's arguments]."""

import runpy
import sys
import types

import torch


class GeneratedMNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, download=False, transform=None):
        generator = torch.Generator().manual_seed(0 if train else 1)
        size = 256 if train else 128
        self.images = torch.rand(size, 1, 28, 28, generator=generator)
        self.labels = torch.randint(0, 10, (size,), generator=generator)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], int(self.labels[index])


def _identity(*arguments, **options):
    return lambda image: image


torchvision = types.ModuleType("torchvision")
torchvision.datasets = types.SimpleNamespace(MNIST=GeneratedMNIST)
torchvision.transforms = types.SimpleNamespace(
    Compose=_identity, ToTensor=_identity, Normalize=_identity
)
torchvision.utils = types.SimpleNamespace(save_image=lambda *arguments, **options: None)
sys.modules["torchvision"] = torchvision
sys.modules["torchvision.utils"] = torchvision.utils
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
