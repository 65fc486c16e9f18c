"""Importing the integrations without their frameworks: each check runs in a fresh
interpreter in which the framework's import is blocked (sys.modules[name] = None)."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("torch", "transformers", "lightning", "pytorch_lightning", "accelerate", "mmengine")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_package_and_base_import_no_framework() -> None:
    completed = run_python(
        "import sys\n"
        f"for name in {FRAMEWORKS!r}: sys.modules[name] = None\n"
        "import ocms_integrations, ocms_integrations.base\n"
        "from ocms_integrations.base import OcmsMixin\n"
        "loaded = sorted(n for n in sys.modules if n.split('.')[0] in "
        f"{FRAMEWORKS!r} and sys.modules[n] is not None)\n"
        "print('loaded:', loaded)\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "loaded: []"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("hf", ("transformers",), "hf"),
        ("lightning", ("lightning", "pytorch_lightning"), "lightning"),
        ("accelerate", ("accelerate",), "accelerate"),
        ("mmengine", ("mmengine",), "mmengine"),
    ],
)
def test_missing_framework_names_the_extra_to_install(
    module: str, blocked: tuple[str, ...], extra: str
) -> None:
    completed = run_python(
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "try:\n"
        f"    import ocms_integrations.{module}\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
        "else:\n"
        "    print('imported')\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("ImportError ")
    assert f"pip install 'ocms-tui[{extra}]'" in completed.stdout


@pytest.mark.integration
def test_lightning_callback_falls_back_to_pytorch_lightning_alone() -> None:
    completed = run_python(
        "import sys\n"
        "sys.modules['lightning'] = None\n"
        "import pytorch_lightning\n"
        "from ocms_integrations.lightning import OcmsCallback\n"
        "print(issubclass(OcmsCallback, pytorch_lightning.Callback),"
        " 'lightning' in {c.__module__.split('.')[0] for c in OcmsCallback.__mro__})\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["True", "False"]
