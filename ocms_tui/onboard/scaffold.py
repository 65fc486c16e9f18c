"""`ocms-tui init`: add the recorder to a training project, as the integration guide's
steps 2 and 3 do by hand.

It copies the packaged `ocms_recorder.py` byte for byte into
`PROJECT_DIR/migrate_to_cloudrobo/`, with the framework's hook made standalone (the hook
modules of `ocms_integrations`, their imports rewritten to the copied files: training
images do not have ocms-tui installed), and edits the code `scan` found with libcst, which
keeps every other byte of the file as it was. Without `--write` it only prints the edit as
a unified diff. A second run changes nothing; a file libcst cannot parse is never touched.
No Textual here.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.util import find_spec
from pathlib import Path
from typing import TextIO, TypeVar

import libcst as cst
import ocms_recorder
from libcst.metadata import MetadataWrapper, PositionProvider

from ocms_tui.follow.report import ExitCode, encodable, printable
from ocms_tui.onboard.scan import ScanResult, chart_groups_source, read_project_file, scan_project
from ocms_tui.onboard.scan_sites import (
    ACCELERATOR,
    HF_TRAINER,
    LIGHTNING_TRAINER,
    LOGGER,
    METRICS_DICT,
    MM_CUSTOM_HOOKS,
    MM_DEFAULT_HOOKS,
    PRINT,
    TB_SCALAR,
    TB_SCALARS,
    WANDB,
    Site,
)

TARGET_DIR = "migrate_to_cloudrobo"
RECORDER_FILE = "ocms_recorder.py"
LOOP_MODULE = "ocms_loop"  # the generated helper a plain loop calls
HOOK_PREFIX = "ocms_"  # ocms_integrations/<name>.py is copied as ocms_<name>.py
# The hook module (of ocms_integrations) and the class each framework's edit uses.
FRAMEWORK_HOOKS = {"hf": ("hf", "OcmsCallback"), "lightning": ("lightning", "OcmsCallback")}
MMENGINE_HOOK_MODULE = "mmengine"
# In a function with several kinds of site, the first kind of this list is the one
# recorded: it carries the most complete metrics (a wandb dict over a printed loss).
LOOP_SITE_PRIORITY = (WANDB, ACCELERATOR, TB_SCALAR, TB_SCALARS, METRICS_DICT, LOGGER, PRINT)
MARK = "ocms-tui init"
_Listed = TypeVar("_Listed", cst.Arg, cst.BaseElement)  # what a call or a list holds

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

Only rank 0 writes (the recorder reads the rank); nothing here raises into training.
"""

from ocms_recorder import DEFAULT_CHART_GROUPS, OcmsRecorder

_ocms_default = dict(DEFAULT_CHART_GROUPS)
{chart_groups}
_recorder = None
_next_step = 0


def ocms_log(step, metrics, output_dir=None):
    """recorder.log(step=step, metrics=metrics); a step of None means the one after the last."""
    global _recorder, _next_step
    if _recorder is None:
        _recorder = OcmsRecorder.from_output_dir(output_dir, chart_groups=chart_groups)
    if step is None:
        step = _next_step
    try:
        _next_step = int(step) + 1
    except Exception:  # a step the recorder refuses (and says so once)
        pass
    _recorder.log(step=step, metrics=metrics)


def ocms_finish():
    if _recorder is not None:
        _recorder.finish()
'''


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

    @property
    def pending(self) -> list[FileChange]:
        return [change for change in self.changes if change.changed]


# ---------------------------------------------------------------------------------------
# Copied files
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Edits (libcst)
# ---------------------------------------------------------------------------------------


def _statements(code: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(code).body)


def _appended(items: Sequence[_Listed], new: _Listed) -> list[_Listed]:
    """`items` and then `new`, laid out like the items: one per line stays one per line, a
    trailing comma stays trailing (the last item's comma moves to `new`)."""
    if not items:
        return [new]
    separator = (
        items[-2].comma if len(items) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    )
    last = items[-1]
    return [*items[:-1], last.with_changes(comma=separator), new.with_changes(comma=last.comma)]


def _with_argument(call: cst.Call, argument: cst.Arg) -> cst.Call:
    return call.with_changes(args=_appended(call.args, argument))


def _with_element(node: cst.List, element: cst.BaseExpression) -> cst.List:
    return node.with_changes(elements=_appended(node.elements, cst.Element(element)))


class _ScriptEditor(cst.CSTTransformer):
    """Inserts statements after the statements on given lines, adds an argument to the
    calls on given lines, and the import block after the module's imports."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        after_lines: dict[int, list[cst.BaseStatement]],
        call_lines: dict[tuple[int, str], Callable[[cst.Call], cst.Call]],
        imports: list[cst.BaseStatement],
    ) -> None:
        super().__init__()
        self.after_lines = after_lines
        self.call_lines = call_lines
        self.imports = imports
        self.done: set[int] = set()

    def _lines(self, node: cst.CSTNode) -> range:
        position = self.get_metadata(PositionProvider, node)
        return range(position.start.line, position.end.line + 1)

    def _insert_after(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> list[cst.BaseStatement]:
        body: list[cst.BaseStatement] = []
        for before, after in zip(original, updated, strict=True):
            body.append(after)
            if isinstance(before, cst.SimpleStatementLine):
                for line in self._lines(before):
                    if line in self.after_lines and line not in self.done:
                        self.done.add(line)
                        body.extend(self.after_lines[line])
        return body

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(
            body=self._insert_after(original_node.body, updated_node.body)
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        line = self.get_metadata(PositionProvider, original_node).start.line
        callee = cst.helpers.get_full_name_for_node(original_node.func) or ""
        edit = self.call_lines.pop((line, callee), None)  # once: a second visit finds none
        return updated_node if edit is None else edit(updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._insert_after(original_node.body, updated_node.body)
        if self.imports:
            position = _import_position(body)
            body[position:position] = self.imports
        return updated_node.with_changes(body=body)


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(part, (cst.Import, cst.ImportFrom)) for part in statement.body
    )


def _import_position(body: Sequence[cst.BaseStatement]) -> int:
    """Just after the module's last top-level import; after its docstring if it has none."""
    imports = [index for index, statement in enumerate(body) if _is_import_line(statement)]
    if imports:
        return imports[-1] + 1
    first = body[0] if body else None
    if (
        isinstance(first, cst.SimpleStatementLine)
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        return 1
    return 0


def _imports_module(module: cst.Module, names: Sequence[str]) -> bool:
    """True when the module imports one of `names` at its top level (already set up)."""
    return any(
        isinstance(part, cst.ImportFrom)
        and part.module is not None
        and cst.helpers.get_full_name_for_node(part.module) in names
        for statement in module.body
        if isinstance(statement, cst.SimpleStatementLine)
        for part in statement.body
    )


def _top_level_imports(module: cst.Module) -> set[str]:
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for part in statement.body:
                if isinstance(part, cst.Import):
                    for alias in part.names:
                        if alias.asname is None:
                            names.add(cst.helpers.get_full_name_for_node(alias.name) or "")
    return names


def _path_setup(
    module: cst.Module, script: Path, project: Path, import_line: str
) -> list[cst.BaseStatement]:
    """The lines that make the copied files importable from `script`, wherever it is."""
    relative = os.path.relpath(project / TARGET_DIR, script.parent).split(os.sep)
    parts = ", ".join(repr(part) for part in relative)
    have = _top_level_imports(module)
    code = "".join(f"import {name}\n" for name in ("os", "sys") if name not in have)
    code += (
        f"# {MARK}: the recorder and hooks copied into {TARGET_DIR}/\n"
        f"sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), {parts}))\n"
        f"{import_line}  # noqa: E402\n"
    )
    return _statements(code)


def _keyword(name: str, value: str) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=cst.parse_expression(value),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def _add_callback(hook: str) -> Callable[[cst.Call], cst.Call]:
    def edit(call: cst.Call) -> cst.Call:
        for index, argument in enumerate(call.args):
            if argument.keyword is not None and argument.keyword.value == "callbacks":
                value = argument.value
                if isinstance(value, cst.List):
                    new_value: cst.BaseExpression = _with_element(value, cst.parse_expression(hook))
                else:
                    code = cst.Module([]).code_for_node(value)
                    new_value = cst.parse_expression(f"[*({code} or []), {hook}]")
                arguments = list(call.args)
                arguments[index] = argument.with_changes(value=new_value)
                return call.with_changes(args=arguments)
        return _with_argument(call, _keyword("callbacks", f"[{hook}]"))

    return edit


def _loop_call(site: Site, output_dir_expr: str | None) -> str | None:
    """The `ocms_log(step, metrics)` line recorded after a loop's own logging call."""
    metrics = _metrics_expression(site)
    if metrics is None:
        return None
    extra = f", output_dir={output_dir_expr}" if output_dir_expr else ""
    return f"ocms_log({site.step or 'None'}, {metrics}{extra})"


def _metrics_expression(site: Site) -> str | None:
    if site.kind in (WANDB, ACCELERATOR, METRICS_DICT) and site.metrics_expression:
        return site.metrics_expression
    if site.kind == TB_SCALARS and site.metrics_expression and site.tag_expression:
        return (
            f"{{{site.tag_expression} + '/' + key: value "
            f"for key, value in ({site.metrics_expression}).items()}}"
        )
    if site.values:
        return "{" + ", ".join(f"{key!r}: {value}" for key, value in site.values) + "}"
    if site.kind == TB_SCALAR and site.tag_expression and site.value_expression:
        return f"{{{site.tag_expression}: {site.value_expression}}}"
    return None


def loop_sites(sites: Sequence[Site]) -> list[Site]:
    """Per function, the sites of the kind that carries the most metrics."""
    by_function: dict[tuple[str, str], list[Site]] = {}
    for site in sites:
        if site.kind in LOOP_SITE_PRIORITY:
            by_function.setdefault((site.file, site.function), []).append(site)
    chosen = []
    for group in by_function.values():
        best = min(LOOP_SITE_PRIORITY.index(site.kind) for site in group)
        chosen += [site for site in group if LOOP_SITE_PRIORITY.index(site.kind) == best]
    return sorted(chosen, key=lambda site: (site.file, site.line))


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
    notes: list[str],
) -> tuple[bytes, bytes] | str:
    """(before, after) of one script, or why it is left alone; sites it could not edit
    are added to `notes`."""
    parsed = _read_module(project / file)
    if isinstance(parsed, str):
        return parsed
    before, module = parsed
    hook = FRAMEWORK_HOOKS.get(framework)
    import_names = [HOOK_PREFIX + hook[0]] if hook else [LOOP_MODULE]
    if _imports_module(module, [*import_names, "ocms_recorder"]):
        return "already set up"
    after_lines: dict[int, list[cst.BaseStatement]] = {}
    call_lines: dict[tuple[int, str], Callable[[cst.Call], cst.Call]] = {}
    if hook is not None:
        module_name, class_name = HOOK_PREFIX + hook[0], hook[1]
        argument = f"output_dir={output_dir_expr}" if output_dir_expr else ""
        for site in sites:
            if site.kind in (HF_TRAINER, LIGHTNING_TRAINER):
                call_lines[site.line, site.call] = _add_callback(f"{class_name}({argument})")
        import_line = f"from {module_name} import {class_name}"
    else:
        for site in loop_sites(sites):
            line = _loop_call(site, output_dir_expr)
            if line is None:
                continue
            # The call goes after the statement holding the site: a lambda's parameters
            # or a comprehension's variables are not defined there.
            undefined = _undefined_names(before, [site.line], line, also_defined={"ocms_log"})
            if undefined:
                return (
                    f"not edited: the call added after line {site.line} would read "
                    f"{', '.join(undefined)}, not defined there (the edited script would "
                    "raise NameError)"
                )
            after_lines.setdefault(site.line, []).extend(_statements(line + "\n"))
        import_line = f"from {LOOP_MODULE} import ocms_log"
    if not after_lines and not call_lines:
        return "nothing to record here"
    if output_dir_expr is not None:
        lines = sorted({line for line, _ in call_lines}) or sorted(after_lines)
        undefined = _undefined_names(before, lines, output_dir_expr)
        if undefined:
            return (
                f"not edited: --output-dir-expr reads {', '.join(undefined)}, which the code "
                f"at line {lines[0]} does not define (the edited script would raise NameError)"
            )
    wanted = set(after_lines) | {line for line, _ in call_lines}
    editor = _ScriptEditor(
        after_lines, call_lines, _path_setup(module, project / file, project, import_line)
    )
    edited = MetadataWrapper(module).visit(editor)
    # A site that is not a statement of its own (`if ok: wandb.log(m)`) or a call libcst
    # names differently gets no edit: without any, the import alone would be dead weight.
    missed = sorted(set(after_lines) - editor.done) + sorted(line for line, _ in editor.call_lines)
    if len(missed) == len(wanted):
        return "not edited: no site is a statement init can add a line after"
    if missed:
        notes.extend(f"{file}:{line}: not edited (add the call by hand)" for line in missed)
    return before, edited.bytes


def _undefined_names(
    source: bytes, lines: Sequence[int], expression: str, also_defined: Collection[str] = ()
) -> list[str]:
    """The names `expression` reads that are not defined where it goes at any of `lines`:
    not a builtin, a module-level name, or a parameter or local of an enclosing function
    (`self.output_dir` in a plain function). Generous: any assignment anywhere in an
    enclosing function counts. Empty when the source does not parse as Python here."""
    try:
        module = ast.parse(source)
        wanted = {
            node.id
            for node in ast.walk(ast.parse(expression, mode="eval"))
            if isinstance(node, ast.Name)
        }
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    module_names = (
        set(dir(builtins)) | set(also_defined) | _names_defined(module.body, nested=False)
    )
    undefined: set[str] = set()
    for line in lines:
        names = set(module_names)
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                node.lineno <= line <= (node.end_lineno or node.lineno)
            ):
                arguments = node.args
                names |= {
                    each.arg
                    for each in [
                        *arguments.posonlyargs,
                        *arguments.args,
                        *arguments.kwonlyargs,
                        arguments.vararg,
                        arguments.kwarg,
                    ]
                    if each is not None
                }
                names |= _names_defined(node.body, nested=True)
        undefined |= wanted - names
    return sorted(undefined)


_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _names_defined(body: Sequence[ast.stmt], nested: bool) -> set[str]:
    """Names bound by `body`: assigned, imported, defined, loop and `with` targets; inside
    nested functions and classes too when `nested` (a generous answer), else only theirs."""
    names: set[str] = set()
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if not nested:
                continue
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names |= set(node.names)
        elif isinstance(node, _OWN_SCOPES):
            continue  # their variables are theirs alone
        pending.extend(ast.iter_child_nodes(node))
    return names


def _mmengine_config_edit(module: cst.Module, output_dir_expr: str | None) -> cst.Module | str:
    """`custom_hooks` gains `dict(type="OcmsHook")` (created after `default_hooks` when the
    config has none) and `custom_imports` imports the copied hook."""
    hook_argument = f", output_dir={output_dir_expr}" if output_dir_expr else ""
    hook = cst.parse_expression(f'dict(type="OcmsHook"{hook_argument})')
    import_name = cst.SimpleString(f'"{TARGET_DIR}.{HOOK_PREFIX}{MMENGINE_HOOK_MODULE}"')
    found: dict[str, int] = {}
    body = list(module.body)
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(
            statement.body[0], cst.Assign
        ):
            assign = statement.body[0]
            target = assign.targets[0].target
            if isinstance(target, cst.Name):
                found.setdefault(target.value, index)
    edits: dict[int, cst.BaseStatement] = {}
    if MM_CUSTOM_HOOKS in found:
        index = found[MM_CUSTOM_HOOKS]
        assign = body[index].body[0]  # type: ignore[attr-defined]
        if not isinstance(assign.value, cst.List):
            return "custom_hooks is not a list literal; add dict(type='OcmsHook') to it by hand"
        edits[index] = body[index].with_changes(  # type: ignore[attr-defined]
            body=[assign.with_changes(value=_with_element(assign.value, hook))]
        )
    if "custom_imports" in found:
        index = found["custom_imports"]
        assign = body[index].body[0]  # type: ignore[attr-defined]
        call = assign.value
        imports = next(
            (
                arg
                for arg in getattr(call, "args", [])
                if arg.keyword and arg.keyword.value == "imports"
            ),
            None,
        )
        if imports is None or not isinstance(imports.value, cst.List):
            return "custom_imports has no list of imports; add the hook to it by hand"
        arguments = [
            arg.with_changes(value=_with_element(arg.value, import_name)) if arg is imports else arg
            for arg in call.args
        ]
        edits[index] = body[index].with_changes(  # type: ignore[attr-defined]
            body=[assign.with_changes(value=call.with_changes(args=arguments))]
        )
    for index, statement in edits.items():
        body[index] = statement
    added = []
    if MM_CUSTOM_HOOKS not in found:
        added.append(f"custom_hooks = [{cst.Module([]).code_for_node(hook)}]\n")
    if "custom_imports" not in found:
        added.append(
            f"custom_imports = dict(imports=[{import_name.value}], allow_failed_imports=False)\n"
        )
    if added:
        anchor = max(found.get(MM_DEFAULT_HOOKS, -1), found.get(MM_CUSTOM_HOOKS, -1)) + 1
        statements = _statements(
            f"# {MARK}: record training metrics for Octopus\n" + "".join(added)
        )
        body[anchor:anchor] = statements
    return module.with_changes(body=body)


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


# ---------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------


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


def plan_init(project: Path, output_dir_expr: str | None = None) -> InitPlan:
    """Everything `init` would write, computed without writing anything."""
    result = scan_project(project)
    plan = InitPlan(project, result)
    framework = result.framework
    if framework is None:
        return plan
    groups = (
        "chart_groups = None  # the default groups keep every metric the scan found"
        if result.suggested_chart_groups is None
        else "# Suggested by ocms-tui scan: the default groups would drop some metrics.\n"
        + chart_groups_source(result.suggested_chart_groups)
    )
    target = project / TARGET_DIR
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        # Writing through a link would put the files (and their edits) somewhere else.
        plan.refusal = (
            f"{TARGET_DIR} is a symbolic link or not a directory; "
            "init writes only inside the project"
        )
        return plan
    for name, content, source in copied_files(framework, groups):
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
    sites_by_file: dict[str, list[Site]] = {}
    for site in result.sites:
        sites_by_file.setdefault(site.file, []).append(site)
    for file, sites in sites_by_file.items():
        if framework == "mmengine":
            if not any(site.kind in (MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS) for site in sites):
                continue
            edit = partial(edit_config, project, file, output_dir_expr)
        else:
            edit = partial(edit_script, project, file, sites, framework, output_dir_expr, plan.notes)
        try:
            outcome = edit()
        except RecursionError:  # Python's parser takes nesting that libcst recurses over
            outcome = "not edited: nested too deeply for libcst"
        if isinstance(outcome, str):
            plan.notes.append(f"{file}: {outcome}")
        else:
            plan.changes.append(FileChange(project / file, *outcome))
    edited = [change for change in plan.changes if change.path.parent != target]
    if framework in FRAMEWORK_HOOKS and not edited and not _set_up_before(plan):
        # The Trainer is built where scan cannot see it (LightningCLI, a factory): the
        # hook is copied, the one line that uses it is the user's to add.
        module, class_name = FRAMEWORK_HOOKS[framework]
        plan.notes.append(
            f"no Trainer(...) call found to edit: add callbacks=[{class_name}()] where the "
            f"Trainer is made, after `from {HOOK_PREFIX}{module} import {class_name}` with "
            f"{TARGET_DIR}/ on sys.path"
        )
    return plan


def _set_up_before(plan: InitPlan) -> bool:
    return any(note.endswith(": already set up") for note in plan.notes)


def render_diff(plan: InitPlan) -> str:
    """The unified diff of every pending change; copies are named, not shown."""
    out: list[str] = []
    for change in plan.pending:
        name = change.path.relative_to(plan.project).as_posix()
        if change.copied_from is not None:
            how = (
                "byte for byte"
                if change.after == change.copied_from.read_bytes()
                else "imports rewritten"
            )
            out.append(printable(f"copy {change.copied_from} -> {name} ({how})") + "\n")
            continue
        before = [] if change.before is None else _text(change.before).splitlines(keepends=True)
        after = _text(change.after).splitlines(keepends=True)
        source = "/dev/null" if change.before is None else f"a/{name}"
        for line in difflib.unified_diff(before, after, source, f"b/{name}"):
            out.append(printable(line.rstrip("\n")) + "\n")
    return "".join(out)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def uncommitted_changes(project: Path) -> list[str] | None:
    """The `git status` lines of tracked files changed in the project's work tree; None
    when it is not in one (or git is not installed)."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        completed = subprocess.run(
            [
                git,
                "-C",
                str(project),
                *_no_project_commands(git, project),
                "status",
                "--porcelain",
                "--untracked-files=no",
                ".",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.splitlines()


def _no_project_commands(git: str, project: Path) -> list[str]:
    """`-c` options that keep `git status` from running commands the project's own git
    config names (a downloaded project is not trusted): `core.fsmonitor`, run on every
    status, and the clean/process filter drivers, run on files whose index stat is stale
    (every file of a just-unpacked project). Reading the config runs nothing."""
    options = ["-c", "core.fsmonitor=false"]
    try:
        listed = subprocess.run(
            [
                git,
                "-C",
                str(project),
                "config",
                "-z",
                "--get-regexp",
                r"^filter\..*\.(clean|process)$",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return options
    for entry in listed.stdout.split("\0"):
        key = entry.split("\n", 1)[0]
        if key:
            options += ["-c", f"{key}="]
    return options


def apply(plan: InitPlan) -> None:
    """Write every pending change: each file replaced atomically, keeping its mode.
    Nothing is written when a file changed since the plan read it (an edit is never lost)."""
    for change in plan.pending:
        try:
            unchanged = _read(change.path) == change.before
        except (OSError, ValueError):
            unchanged = False
        if not unchanged:
            raise OSError(
                0, "changed while init ran; nothing written, run init again", str(change.path)
            )
    for change in plan.pending:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        mode = change.path.stat().st_mode & 0o7777 if change.before is not None else 0o644
        # A fresh name made with O_EXCL: a fixed name could be a symlink the project
        # already holds, and writing through it would replace a file outside the project.
        descriptor, temp_name = tempfile.mkstemp(
            prefix=f".{change.path.name}.", suffix=".ocms-init.tmp", dir=change.path.parent
        )
        temp = Path(temp_name)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(change.after)
            os.chmod(temp, mode)
            os.replace(temp, change.path)
        finally:
            temp.unlink(missing_ok=True)


def run_init(
    project: Path, write: bool = False, output_dir_expr: str | None = None, force: bool = False
) -> int:
    def say(text: str, stream: TextIO = sys.stdout) -> None:
        stream.write(encodable(text, stream))

    try:
        is_directory = project.is_dir()
    except OSError:
        is_directory = False
    if not is_directory:
        say(printable(f"ocms-tui init: {project} is not a directory") + "\n", sys.stderr)
        return ExitCode.USAGE
    if output_dir_expr is not None:
        try:
            cst.parse_expression(output_dir_expr)
        except cst.ParserSyntaxError:
            say(
                printable(
                    f"ocms-tui init: --output-dir-expr {output_dir_expr!r} is not a Python expression"
                )
                + "\n",
                sys.stderr,
            )
            return ExitCode.USAGE
    plan = plan_init(project, output_dir_expr)
    if plan.scan.framework is None:
        say(
            "ocms-tui init: no metric-logging site found; nothing to integrate (see ocms-tui scan)\n"
        )
        return ExitCode.PROBLEMS
    if plan.refusal is not None:
        say(printable(f"ocms-tui init: {plan.refusal}; nothing written") + "\n", sys.stderr)
        return ExitCode.PROBLEMS
    say(f"framework: {plan.scan.framework}\n")
    for note in plan.notes:
        say(printable(note) + "\n")
    if not plan.pending:
        say("nothing to change: the project is already set up\n")
        return ExitCode.OK
    say(render_diff(plan))
    if not write:
        say("(dry run: apply with --write)\n")
        return ExitCode.OK
    if not force:
        dirty = uncommitted_changes(project)
        if dirty:
            say(
                "ocms-tui init: refusing to --write: uncommitted changes in git "
                "(commit or stash them, or pass --force):\n"
                + "".join(printable(line) + "\n" for line in dirty[:10]),
                sys.stderr,
            )
            return ExitCode.PROBLEMS
    try:
        apply(plan)
    except OSError as error:
        say(
            printable(f"ocms-tui init: cannot write {error.filename}: {error.strerror}") + "\n",
            sys.stderr,
        )
        return ExitCode.PROBLEMS
    say(f"wrote {len(plan.pending)} files\n")
    return ExitCode.OK
