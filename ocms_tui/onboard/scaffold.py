"""`ocms-tui init`: add the recorder to a training project, as the integration guide's
steps 2 and 3 do by hand, without changing what the training does.

It copies the packaged `ocms_recorder.py` byte for byte into
`PROJECT_DIR/migrate_to_cloudrobo/` with the framework's hook made standalone
(`init_templates`), decides for each metric-logging site where and at which step it is
recorded (`init_wiring`, `steps`), edits the code with libcst (`init_codemods`,
`init_loop_edit`), and shows its plan (`init_plan`) before writing it (`init_apply`).
This module keeps the names the command and its tests use. No Textual here.
"""

from __future__ import annotations

from ocms_tui.onboard.init_apply import apply, run_init, uncommitted_changes
from ocms_tui.onboard.init_plan import (
    FileChange,
    InitPlan,
    edit_config,
    edit_script,
    plan_init,
)
from ocms_tui.onboard.init_report import render_diff, render_plan
from ocms_tui.onboard.init_templates import (
    FRAMEWORK_HOOKS,
    HOOK_PREFIX,
    LOOP_MODULE,
    LOOP_TEMPLATE,
    MARK,
    PACKAGE_INIT,
    RECORDER_FILE,
    TARGET_DIR,
    copied_files,
    integration_source,
    recorder_source,
    standalone_hook,
)

__all__ = [
    "FRAMEWORK_HOOKS",
    "HOOK_PREFIX",
    "LOOP_MODULE",
    "LOOP_TEMPLATE",
    "MARK",
    "PACKAGE_INIT",
    "RECORDER_FILE",
    "TARGET_DIR",
    "FileChange",
    "InitPlan",
    "apply",
    "copied_files",
    "edit_config",
    "edit_script",
    "integration_source",
    "plan_init",
    "recorder_source",
    "render_diff",
    "render_plan",
    "run_init",
    "standalone_hook",
    "uncommitted_changes",
]
