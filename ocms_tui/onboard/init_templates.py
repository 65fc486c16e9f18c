"""What `ocms-tui init` copies into a project: the recorder byte for byte, the framework's
hook made standalone (its imports rewritten to the copied files: training images do not
have ocms-tui installed), and for a plain loop the small `ocms_loop` helper. No Textual.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import libcst as cst
import ocms_recorder

TARGET_DIR = "migrate_to_cloudrobo"


RECORDER_FILE = "ocms_recorder.py"


LOOP_MODULE = "ocms_loop"  # the generated helper a plain loop calls


HOOK_PREFIX = "ocms_"  # ocms_integrations/<name>.py is copied as ocms_<name>.py


# The hook module (of ocms_integrations) and the class each framework's edit uses.
FRAMEWORK_HOOKS = {"hf": ("hf", "OcmsCallback"), "lightning": ("lightning", "OcmsCallback")}


MMENGINE_HOOK_MODULE = "mmengine"


MARK = "ocms-tui init"


PACKAGE_INIT = f'''"""Copied by `{MARK}`: the ocms recorder and its framework hooks, standalone.

Importing this package (as MMEngine's custom_imports does) puts this directory on sys.path,
so that its modules import each other by the names the integration guide uses.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
'''


LOOP_TEMPLATE = '''"""Written by `{mark}`: one OcmsRecorder for a training loop, created on first use.

    from ocms_loop import ocms_log
    ocms_log(step, metrics)                 # after the loop's own logging
    ocms_log(step, metrics, output_dir=...)  # $METRICS, else <output_dir>/ocms_metrics
    ocms_log(None, metrics)                 # at the last step recorded (an evaluation)
    step = ocms_count()                     # a step counter, where the script has none

Only rank 0 writes (the recorder reads the rank); nothing here raises into training.
"""

from ocms_recorder import DEFAULT_CHART_GROUPS, OcmsRecorder

_ocms_default = dict(DEFAULT_CHART_GROUPS)
{chart_groups}
_recorder = None
_last_step = None
_count = -1


def ocms_count():
    """0, 1, 2...: one more at each call, across epochs (init calls it once per iteration)."""
    global _count
    _count += 1
    return _count


def ocms_log(step, metrics, output_dir=None):
    """recorder.log(step=step, metrics=metrics); a step of None means the last step
    recorded (0 before any)."""
    global _recorder, _last_step
    try:
        if _recorder is None:
            _recorder = OcmsRecorder.from_output_dir(output_dir, chart_groups=chart_groups)
        if step is None:
            step = 0 if _last_step is None else _last_step
        else:
            _last_step = step
        _recorder.log(step=step, metrics=metrics)
    except Exception:  # the recorder says what it refuses; training goes on
        pass


def ocms_finish():
    if _recorder is not None:
        _recorder.finish()
'''


def recorder_source() -> Path:
    """The recorder module this ocms-tui runs: the file `init` copies."""
    return Path(ocms_recorder.__file__)


def integration_source(name: str) -> Path:
    spec = find_spec("ocms_integrations")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the ocms_integrations package is not installed")
    return Path(next(iter(spec.submodule_search_locations)), f"{name}.py")


class _StandaloneImports(cst.CSTTransformer):
    """`from ocms_integrations.base import X` -> `from ocms_base import X`; `needs` collects
    the ocms_integrations modules imported, which must be copied too."""

    def __init__(self) -> None:
        super().__init__()
        self.needs: list[str] = []

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        module = updated_node.module
        if module is None or updated_node.relative:
            return updated_node
        dotted = cst.helpers.get_full_name_for_node(module) or ""
        if dotted.startswith("ocms_integrations."):
            imported = dotted.split(".", 1)[1]
            self.needs.append(imported)
            return updated_node.with_changes(module=cst.Name(HOOK_PREFIX + imported))
        return updated_node


def standalone_hook(name: str) -> tuple[bytes, list[str]]:
    """An `ocms_integrations` module as a file that imports only the copied files, and the
    ocms_integrations modules it imports (to be copied with it)."""
    source = integration_source(name)
    imports = _StandaloneImports()
    module = cst.parse_module(source.read_bytes()).visit(imports)
    header = f"# Copied by `{MARK}` from ocms_integrations/{name}.py; imports rewritten.\n"
    return header.encode() + module.bytes, imports.needs


def copied_files(framework: str | None, chart_groups: str) -> list[tuple[str, bytes, Path | None]]:
    """(name in migrate_to_cloudrobo/, content, source it is copied from)."""
    files: list[tuple[str, bytes, Path | None]] = [
        ("__init__.py", PACKAGE_INIT.encode(), None),
        (RECORDER_FILE, recorder_source().read_bytes(), recorder_source()),
    ]
    hook = FRAMEWORK_HOOKS.get(framework or "", (None, None))[0]
    if framework == "mmengine":
        hook = MMENGINE_HOOK_MODULE
    if hook is not None:
        # The hook and every ocms_integrations module it needs, shown as copies: they are
        # the packaged hooks.
        wanted, copied = [hook], set()
        while wanted:
            name = wanted.pop()
            if name in copied:
                continue
            copied.add(name)
            content, needs = standalone_hook(name)
            files.append((HOOK_PREFIX + name + ".py", content, integration_source(name)))
            wanted.extend(needs)
    else:
        loop = LOOP_TEMPLATE.format(mark=MARK, chart_groups=chart_groups)
        files.append((LOOP_MODULE + ".py", loop.encode(), None))
    return files
