"""Runs a pytorch/examples MNIST script unchanged with a stand-in torchvision: MNIST is
generated (fixed seed), not downloaded; save_image writes nothing. Also used for vae/.
Usage: python ocms_shim_run.py main.py [main.py's arguments]. `OCMS_SHIM_MNIST_TRAIN`
sets the number of training images (256), for scripts whose batch size is a constant;
`OCMS_SHIM_SEED` seeds torch, numpy and random first, for scripts that set no seed."""

import os
import runpy
import sys
import types

import torch


class GeneratedMNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, download=False, transform=None):
        generator = torch.Generator().manual_seed(0 if train else 1)
        size = int(os.environ.get("OCMS_SHIM_MNIST_TRAIN", "256")) if train else 128
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
torchvision.transforms = types.ModuleType("torchvision.transforms")
vars(torchvision.transforms).update(
    Compose=_identity, ToTensor=_identity, Normalize=_identity, Resize=_identity
)
torchvision.utils = types.SimpleNamespace(save_image=lambda *arguments, **options: None)
sys.modules["torchvision"] = torchvision
sys.modules["torchvision.utils"] = torchvision.utils
sys.modules["torchvision.transforms"] = torchvision.transforms
if "OCMS_SHIM_SEED" in os.environ:
    import random

    import numpy

    seed = int(os.environ["OCMS_SHIM_SEED"])
    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
