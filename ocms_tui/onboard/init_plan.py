"""`ocms-tui init`'s plan: which files it copies, which edits it makes, and for each
metric-logging site what it records (file:line, step, series, charts) or why not.
Computed without writing anything (`init_apply` writes it). No Textual here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper

from ocms_tui.onboard.init_codemods import (
    _add_callback,
    _add_trainer_default,
    _imports_module,
    _mmengine_config_edit,
    _path_setup,
    _ScriptEditor,
    _undefined_names,
)
from ocms_tui.onboard.init_loop_edit import apply_loop_edits, loop_edits
from ocms_tui.onboard.init_templates import (
    FRAMEWORK_HOOKS,
    HOOK_PREFIX,
    LOOP_MODULE,
    TARGET_DIR,
    copied_files,
)
from ocms_tui.onboard.init_wiring import LOOP_SITE_PRIORITY, Wiring, wire_file
from ocms_tui.onboard.scan import (
    ScanResult,
    chart_groups_source,
    plan_keys,
    read_project_file,
    scan_project,
    suggest_chart_groups,
)
from ocms_tui.onboard.scan_sites import (
    HF_TRAINER,
    LIGHTNING_CLI,
    LIGHTNING_TRAINER,
    LOGGER,
    MM_CUSTOM_HOOKS,
    MM_DEFAULT_HOOKS,
    PRINT,
    Site,
)
from ocms_tui.onboard.steps import ADDED_COUNTER

# Scripts that do not train, by their name: left alone (their sites are listed).
TRAINING_NAME = re.compile(r"train|main|finetun|fit|run_")
NOT_TRAINING = ("bench", "sample", "generate", "inference", "predict", "demo", "test_", "conftest")


# TRL's trainers: an HF Trainer that logs more than the Trainer's own keys.
TRL_TRAINERS = frozenset(
    {
        "SFTTrainer",
        "DPOTrainer",
        "GRPOTrainer",
        "KTOTrainer",
        "RewardTrainer",
        "RLOOTrainer",
        "ORPOTrainer",
        "CPOTrainer",
        "PPOTrainer",
        "GKDTrainer",
        "OnlineDPOTrainer",
    }
)
TRL_KEYS = "SFT: entropy, mean_token_accuracy, num_tokens; DPO: rewards/*, logps/*, logits/*"


@dataclass
class FileChange:
    """One file init writes: `before` None for a new file."""

    path: Path
    before: bytes | None
    after: bytes
    copied_from: Path | None = None  # shown as a copy, not as a diff

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass
class InitPlan:
    project: Path
    scan: ScanResult
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # files left alone, and why
    refusal: str | None = None  # why init writes nothing at all
    wired: list[tuple[str, Wiring]] = field(default_factory=list)  # (file, wiring)
    hooked: list[str] = field(default_factory=list)  # "file:line: what was added"
    not_wired: list[str] = field(default_factory=list)  # "file:line: why"
    training_files: list[str] = field(default_factory=list)  # files that train

    @property
    def wired_nothing(self) -> bool:
        """A training script that init leaves recording nothing (and not set up before)."""
        set_up = any(note.endswith(": already set up") for note in self.notes)
        return bool(self.training_files) and not self.wired and not self.hooked and not set_up

    @property
    def pending(self) -> list[FileChange]:
        return [change for change in self.changes if change.changed]


def _read_module(path: Path) -> tuple[bytes, cst.Module] | str:
    """The file's bytes and libcst tree, or why it is not edited."""
    before = _read_to_edit(path)
    if isinstance(before, str):
        return before
    try:
        return before, cst.parse_module(before)
    except cst.ParserSyntaxError as error:
        return f"not edited: libcst cannot parse it ({error.message})"


def edit_script(
    project: Path,
    file: str,
    sites: Sequence[Site],
    framework: str,
    output_dir_expr: str | None,
    plan: InitPlan,
) -> tuple[bytes, bytes] | str:
    """(before, after) of one script, or why it is left alone; what it wired and what it
    did not go to `plan`."""
    parsed = _read_module(project / file)
    if isinstance(parsed, str):
        return parsed
    before, module = parsed
    hook = FRAMEWORK_HOOKS.get(framework)
    import_names = [HOOK_PREFIX + hook[0]] if hook else [LOOP_MODULE]
    if _imports_module(module, [*import_names, "ocms_recorder"]):
        return "already set up"
    if hook is None:
        return _edit_loop_script(project, file, sites, output_dir_expr, plan, before, module)
    call_lines: dict[tuple[int, str], Callable[[cst.Call], cst.Call]] = {}
    module_name, class_name = HOOK_PREFIX + hook[0], hook[1]
    argument = f"output_dir={output_dir_expr}" if output_dir_expr else ""
    for site in sites:
        if site.kind in (HF_TRAINER, LIGHTNING_TRAINER):
            call_lines[site.line, site.call] = _add_callback(f"{class_name}({argument})")
        elif site.kind == LIGHTNING_CLI:
            call_lines[site.line, site.call] = _add_trainer_default(f"{class_name}({argument})")
    if not call_lines:
        return "nothing to record here"
    if output_dir_expr is not None:
        lines = sorted({line for line, _ in call_lines})
        undefined = _undefined_names(before, lines, output_dir_expr)
        if undefined:
            return (
                f"not edited: --output-dir-expr reads {', '.join(undefined)}, which the code "
                f"at line {lines[0]} does not define (the edited script would raise NameError)"
            )
    wanted = set(call_lines)
    import_line = f"from {module_name} import {class_name}"
    editor = _ScriptEditor(call_lines, _path_setup(module, project / file, project, import_line))
    edited = MetadataWrapper(module).visit(editor)
    missed = sorted(line for line, _ in editor.call_lines)
    if len(missed) == len(wanted):
        reasons = sorted(set(editor.refused.values())) or ["no call init can add the callback to"]
        return "not edited: " + "; ".join(reasons)
    plan.not_wired.extend(
        f"{file}:{line}: not edited ({editor.refused.get(line, 'add the callback by hand')})"
        for line in missed
    )
    plan.hooked.extend(
        f"{file}:{line}: {call} gets {class_name}() (the framework's own step and metrics)"
        for line, call in sorted(wanted)
        if line not in missed
    )
    plan.not_wired.extend(
        f"{file}:{line}: {call} also logs keys of its own at run time ({TRL_KEYS}): "
        "the hook's default chart groups may drop some (`--check` names each dropped "
        "key, with the chart_groups line that keeps it)"
        for line, call in sorted(wanted)
        if line not in missed and call.rsplit(".", 1)[-1] in TRL_TRAINERS
    )
    return before, edited.bytes


def _edit_loop_script(
    project: Path,
    file: str,
    sites: Sequence[Site],
    output_dir_expr: str | None,
    plan: InitPlan,
    before: bytes,
    module: cst.Module,
) -> tuple[bytes, bytes] | str:
    loop = [site for site in sites if site.kind in LOOP_SITE_PRIORITY]
    if not loop:
        return "nothing to record here"
    try:
        tree = ast.parse(before)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "not edited: does not parse"
    wirings, notes = wire_file(tree, loop)
    plan.not_wired.extend(f"{file}:{note}" for note in notes)
    kept: list[Wiring] = []
    pending = [wiring for wiring in wirings if wiring.joined_into is None]
    while pending:
        wiring = pending.pop(0)
        call = wiring.call(output_dir_expr)
        assert call is not None
        hoisted = [hoist for w in [*wiring.joined, wiring] for hoist in w.hoists]
        defined = {"ocms_log", ADDED_COUNTER, *(hoist.name for hoist in hoisted)}
        undefined = _undefined_names(before, [wiring.anchor.lineno], call, also_defined=defined)
        if undefined and wiring.joined:
            # The shared call cannot be added: each neighbour gets its own again.
            for released in wiring.joined:
                released.joined_into = None
            pending[:0] = [*wiring.joined, wiring]
            wiring.joined = []
            continue
        if undefined:
            plan.not_wired.append(
                f"{file}:{wiring.site.line}: not wired: the call would read "
                f"{', '.join(undefined)}, not defined there (NameError)"
            )
            continue
        kept += [*wiring.joined, wiring]
    kept.sort(key=lambda wiring: wiring.site.line)
    if not kept:
        return "nothing wired (see below)"
    source = before.decode(module.encoding, "replace")
    edits = loop_edits(source, kept, output_dir_expr)
    counter = any(wiring.step.counter_loop is not None for wiring in kept)
    names = "ocms_count, ocms_log" if counter else "ocms_log"
    setup = _path_setup(module, project / file, project, f"from {LOOP_MODULE} import {names}")
    edited, missed = apply_loop_edits(module, edits)
    if missed:
        return f"not edited: lines {', '.join(str(line) for line, _ in missed)} were not found by libcst"
    edited = edited.with_changes(body=_with_imports(list(edited.body), setup))
    plan.wired.extend((file, wiring) for wiring in kept)
    return before, edited.bytes


def _with_imports(
    body: list[cst.BaseStatement], setup: list[cst.BaseStatement]
) -> list[cst.BaseStatement]:
    from ocms_tui.onboard.init_codemods import _import_position

    position = _import_position(body)
    return body[:position] + setup + body[position:]


def edit_config(project: Path, file: str, output_dir_expr: str | None) -> tuple[bytes, bytes] | str:
    parsed = _read_module(project / file)
    if isinstance(parsed, str):
        return parsed
    before, module = parsed
    if b"OcmsHook" in before:
        return "already set up"
    edited = _mmengine_config_edit(module, output_dir_expr)
    if isinstance(edited, str):
        return edited
    return before, edited.bytes


def _read(path: Path) -> bytes | None:
    """The bytes of a project file init may replace; None when there is none. Never
    through a symlink, never a blocking read of a FIFO: OSError or ValueError instead."""
    try:
        return read_project_file(path)
    except FileNotFoundError:
        return None


def _read_to_edit(path: Path) -> bytes | str:
    """The bytes of a file scan found, or why it is not edited (it changed since)."""
    try:
        before = _read(path)
    except (OSError, ValueError) as error:
        return f"not edited: {_why_unreadable(path, error)}"
    return "not edited: no longer there" if before is None else before


def _why_unreadable(path: Path, error: OSError | ValueError) -> str:
    if path.is_symlink():
        return "a symbolic link"
    return error.strerror or str(error) if isinstance(error, OSError) else str(error)


def trains(module: ast.Module) -> bool:
    """The module runs training: a backward pass, an optimizer step, a Trainer or a
    LightningCLI, a `.fit(`/`.train(` call."""
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("backward", "fit", "train") or name.endswith(("Trainer", "LightningCLI")):
                return True
            if (
                name == "step"
                and isinstance(func, ast.Attribute)
                and "optim" in ast.unparse(func.value).lower()
            ):
                return True
    return False


def _left_alone(project: Path, file: str, sites: Sequence[Site]) -> str | None:
    """Why a file with sites is not edited: it does not train (benchmarks, sampling). A
    file that logs to a metrics logger (wandb, TensorBoard, a Trainer) is taken as is."""
    name = Path(file).name.lower()
    if name.startswith(NOT_TRAINING):
        return (
            "its name says it does not train (benchmark, sampling, tests); "
            f"to record it anyway: init --include {file}"
        )
    if any(site.kind not in (PRINT, LOGGER) for site in sites) or TRAINING_NAME.search(name):
        return None
    try:
        module = ast.parse(read_project_file(project / file))
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError):
        return None  # the edit says why
    if not trains(module):
        return (
            "does not train (no backward pass, optimizer step, Trainer or fit); "
            f"to record it anyway: init --include {file}"
        )
    return None


def plan_init(
    project: Path, output_dir_expr: str | None = None, include: Sequence[str] = ()
) -> InitPlan:
    """Everything `init` would write, computed without writing anything. `include` names
    files (relative to the project, with '/') to wire even though they look like they do
    not train (a benchmark, a sampling script): the user asked."""
    result = scan_project(project)
    plan = InitPlan(project, result)
    framework = result.framework
    if framework is None:
        return plan
    target = project / TARGET_DIR
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        # Writing through a link would put the files (and their edits) somewhere else.
        plan.refusal = (
            f"{TARGET_DIR} is a symbolic link or not a directory; "
            "init writes only inside the project"
        )
        return plan
    sites_by_file: dict[str, list[Site]] = {}
    for site in result.sites:
        sites_by_file.setdefault(site.file, []).append(site)
    edits: list[FileChange] = []
    for file, sites in sites_by_file.items():
        if framework == "mmengine":
            if not any(site.kind in (MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS) for site in sites):
                continue
            edit = partial(edit_config, project, file, output_dir_expr)
        else:
            why = None if file in include else _left_alone(project, file, sites)
            if why is not None:
                plan.not_wired.append(f"{file}: left alone: {why}")
                continue
            plan.training_files.append(file)
            edit = partial(edit_script, project, file, sites, framework, output_dir_expr, plan)
        try:
            outcome = edit()
        except RecursionError:  # Python's parser takes nesting that libcst recurses over
            outcome = "not edited: nested too deeply for libcst"
        if isinstance(outcome, str):
            plan.notes.append(f"{file}: {outcome}")
        else:
            edits.append(FileChange(project / file, *outcome))
            if framework == "mmengine":
                plan.hooked.append(f"{file}: custom_hooks gets OcmsHook")
    plan.not_wired += [
        f"{file}: --include, but scan found no logging site in it"
        for file in include
        if file not in sites_by_file
    ]
    if (
        framework not in FRAMEWORK_HOOKS
        and framework != "mmengine"
        and not edits
        and not (_set_up_before(plan))
    ):
        return plan  # nothing wired: copying the recorder alone would record nothing
    for name, content, source in copied_files(framework, _chart_groups_code(plan, framework)):
        path = target / name
        try:
            before = _read(path)
        except (OSError, ValueError) as error:
            plan.notes.append(f"{TARGET_DIR}/{name}: {_why_unreadable(path, error)}; left as is")
            continue
        if before is not None and before != content:
            plan.notes.append(f"{TARGET_DIR}/{name}: differs from what init writes; left as is")
            continue
        plan.changes.append(FileChange(path, before, content, source))
    plan.changes.extend(edits)
    if framework in FRAMEWORK_HOOKS and not edits and not _set_up_before(plan):
        # The Trainer is built where scan cannot see it (a factory): the hook is copied,
        # the one line that uses it is the user's to add.
        module, class_name = FRAMEWORK_HOOKS[framework]
        plan.notes.append(
            f"no Trainer(...) call found to edit: add callbacks=[{class_name}()] where the "
            f"Trainer is made, after `from {HOOK_PREFIX}{module} import {class_name}` with "
            f"{TARGET_DIR}/ on sys.path"
        )
    return plan


def _set_up_before(plan: InitPlan) -> bool:
    return any(note.endswith(": already set up") for note in plan.notes)


def wired_keys(plan: InitPlan) -> list[str]:
    return list(dict.fromkeys(key for _, wiring in plan.wired for key in wiring.keys))


def _chart_groups_code(plan: InitPlan, framework: str) -> str:
    """The loop helper's chart groups: the defaults, or widened to keep every key wired
    (for a framework hook, every key the scan found)."""
    suggestion = (
        plan.scan.suggested_chart_groups
        if framework in FRAMEWORK_HOOKS or framework == "mmengine"
        else suggest_chart_groups(plan_keys(wired_keys(plan)))
    )
    if suggestion is None:
        return "chart_groups = None  # the default groups keep every metric init wired"
    return (
        "# Suggested by ocms-tui init: the default groups would drop some metrics.\n"
        + chart_groups_source(suggestion)
    )
