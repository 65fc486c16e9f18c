"""`ocms-tui scan`: find where a training project logs metrics, without running it.

Reads every Python file of a project as text and parses it with `ast` (never imports or
runs it), finds the metric-logging sites the integration guide tells people to look for,
names the framework, and shows what the recorder would chart: the plan comes from the
recorder's own routing (`OcmsRecorder.preview`), so groups, sanitizing, collisions and the
6-chart limit are the recorder's, not a copy. No Textual here.
"""

from __future__ import annotations

import ast
import contextlib
import io
import logging
import os
import re
import stat
import tokenize
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ocms_recorder import (
    DEFAULT_CHART_GROUPS,
    MAX_CHART_NAME_LENGTH,
    MAX_CHARTS,
    ChartGroup,
    OcmsRecorder,
    sanitize_key,
)

# Directories that hold no code of the project: version control, environments, builds,
# and what `ocms-tui init` itself copies in.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "__pycache__",
        "node_modules",
        "site-packages",
        "dist-packages",
        "build",
        "dist",
        "venv",
        ".venv",
        "migrate_to_cloudrobo",
    }
)
MAX_FILE_BYTES = 2_000_000  # a training script is far smaller; a bigger .py is data
MAX_FILES = 20_000  # bounds a scan of a mistaken root (a home directory)
MAX_DEPTH = 64  # directories below the root; os.walk recurses per level (limit near 1000)
MAX_CALL_TEXT = 80  # longest callee text shown for a site

# Site kinds: what the guide's Step 1 searches for.
WANDB = "wandb.log"
TB_SCALAR = "SummaryWriter.add_scalar"
TB_SCALARS = "SummaryWriter.add_scalars"
ACCELERATOR = "accelerator.log"
SELF_LOG = "self.log"
SELF_LOG_DICT = "self.log_dict"
LOG_METRICS = "trainer.log_metrics"
LOGGER = "logger.info"
PRINT = "print"
METRICS_DICT = "metrics dict"
HF_TRAINER = "transformers.Trainer(...)"
LIGHTNING_TRAINER = "lightning.Trainer(...)"
MM_CUSTOM_HOOKS = "custom_hooks"
MM_DEFAULT_HOOKS = "default_hooks"

FRAMEWORKS = ("mmengine", "hf", "lightning", "accelerate", "custom")
_LOGGER_METHODS = frozenset({"info", "debug", "warning", "log"})
# Words of a printed line that name the X axis, not a metric.
_STEP_WORDS = frozenset({"step", "steps", "global_step", "iter", "iteration", "it", "batch"})
# Names a training loop gives its step counter, most telling first.
_STEP_COUNTERS = ("global_step", "step", "iteration", "global_iter", "iter_num", "it", "i")
_LABELLED_VALUE = re.compile(
    r"([A-Za-z_][\w/.-]*)\s*[:=]\s*(?:%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]|\{[^{}]*\})"
)
_PERCENT_PLACEHOLDER = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]")
_BRACE_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Site:
    """One metric-logging call (or framework construction) found in the project."""

    file: str  # relative to the project root, with '/'
    line: int
    call: str  # the callee as written: `self.writer.add_scalar`, `L.Trainer`, `print`
    kind: str  # one of the kinds above
    function: str  # qualified name of the enclosing function, `<module>` at top level
    keys: tuple[str, ...]
    # For `ocms-tui init`: the step expression and (key, value expression) pairs when the
    # site states them, as source text. Not part of the report.
    step: str | None = field(default=None, compare=False)
    values: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    metrics_expression: str | None = field(default=None, compare=False)  # the dict logged
    tag_expression: str | None = field(default=None, compare=False)  # add_scalar(s)' tag
    value_expression: str | None = field(default=None, compare=False)  # add_scalar's value

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "call": self.call,
            "kind": self.kind,
            "function": self.function,
            "keys": list(self.keys),
        }


@dataclass(frozen=True)
class PlanEntry:
    key: str
    chart: str | None
    y_axis: str | None


@dataclass(frozen=True)
class SuggestedGroup:
    """A chart of the suggested chart_groups: the default group of that name (if any)
    widened by exact keys."""

    chart: str
    extends_default: bool
    keys: tuple[str, ...]


@dataclass
class ScanResult:
    root: Path
    framework: str | None
    sites: list[Site]
    plan: list[PlanEntry]
    suggested_chart_groups: list[SuggestedGroup] | None
    suggested_plan: list[PlanEntry] | None
    skipped: list[tuple[str, str]]  # (file, why it was not read)
    files_read: int

    @property
    def found(self) -> bool:
        return bool(self.sites)

    def as_json(self) -> dict[str, object]:
        def plan_json(plan: list[PlanEntry] | None) -> list[dict[str, object]] | None:
            if plan is None:
                return None
            return [{"key": e.key, "chart": e.chart, "y_axis": e.y_axis} for e in plan]

        groups = self.suggested_chart_groups
        return {
            "root": str(self.root),
            "framework": self.framework,
            "files_read": self.files_read,
            "sites": [site.as_json() for site in self.sites],
            "plan": plan_json(self.plan),
            "suggested_chart_groups": None
            if groups is None
            else [
                {"chart": g.chart, "extends_default": g.extends_default, "keys": list(g.keys)}
                for g in groups
            ],
            "suggested_plan": plan_json(self.suggested_plan),
            "suggested_chart_groups_source": None
            if groups is None
            else chart_groups_source(groups),
            "skipped": [{"file": name, "reason": reason} for name, reason in self.skipped],
        }


# ---------------------------------------------------------------------------------------
# Reading the project
# ---------------------------------------------------------------------------------------


def python_files(root: Path, skipped: list[tuple[str, str]]) -> Iterator[Path]:
    """The project's .py files, in a stable order. Never follows a symlink (no loops, no
    files outside the project); virtual environments and build output are left out."""
    count = 0

    def unreadable(error: OSError) -> None:
        name = relative_name(root, Path(error.filename)) if error.filename else "."
        skipped.append((name or ".", error.strerror or str(error)))

    for directory, dir_names, file_names in os.walk(root, onerror=unreadable):
        if dir_names and len(Path(directory).relative_to(root).parts) >= MAX_DEPTH:
            skipped.append((relative_name(root, Path(directory)), "nested too deeply"))
            dir_names.clear()  # os.walk recurses per level: a deeper tree would crash it
        dir_names[:] = sorted(
            name
            for name in dir_names
            if name not in SKIPPED_DIRS
            and not name.endswith(".egg-info")
            and not os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
        )
        for name in sorted(file_names):
            if not name.endswith(".py"):
                continue
            count += 1
            if count > MAX_FILES:
                skipped.append((relative_name(root, Path(directory, name)), "too many files"))
                return
            yield Path(directory, name)


def relative_name(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def read_project_file(path: Path) -> bytes:
    """The bytes of a regular file of the project, not through a symlink, at most
    MAX_FILE_BYTES. Raises OSError (unreadable, a symlink: ELOOP) or ValueError (a FIFO,
    a device, too large) instead of blocking or reading without end."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags)  # O_NONBLOCK: a FIFO named x.py must not block us
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise ValueError("not a regular file")
        if status.st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
    return data


def read_source(path: Path) -> str:
    """The file's text, decoded as Python decodes source (PEP 263 cookie, else UTF-8).
    Raises ValueError with the reason when it is not a readable source file."""
    data = read_project_file(path)
    if b"\x00" in data:
        raise ValueError("binary file (NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot decode: {error}") from None


def parse_source(text: str, name: str) -> ast.Module:
    """`ast.parse`, with every way a hostile file fails it turned into ValueError."""
    try:
        return ast.parse(text, filename=name)
    except SyntaxError as error:
        raise ValueError(f"does not parse (line {error.lineno}: {error.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ValueError("does not parse (nested too deeply)") from None


# ---------------------------------------------------------------------------------------
# Finding sites in one file
# ---------------------------------------------------------------------------------------


def _code(node: ast.AST) -> str:
    """A node as source code (normalised by `ast.unparse`)."""
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return "?"


def _optional_code(node: ast.AST | None) -> str | None:
    return None if node is None else _code(node)


def _source_text(node: ast.AST) -> str:
    """A node as source, shortened for display."""
    text = _code(node)
    return text if len(text) <= MAX_CALL_TEXT else text[: MAX_CALL_TEXT - 3] + "..."


def _receiver_name(node: ast.expr) -> str:
    """The last name of a call's receiver: `self.tb.writer` -> `writer`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _argument(call: ast.Call, position: int | None, keyword: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if position is None:
        return None
    if len(call.args) > position and not any(
        isinstance(arg, ast.Starred) for arg in call.args[: position + 1]
    ):
        return call.args[position]
    return None


def _dict_items(node: ast.AST | None) -> list[tuple[str, str]]:
    """(key, value source) of a dict literal or `dict(k=v)` call with string keys."""
    if isinstance(node, ast.Dict):
        return [
            (key, _code(value))
            for key_node, value in zip(node.keys, node.values, strict=True)
            if (key := _string(key_node)) is not None
        ]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(item.arg, _code(item.value)) for item in node.keywords if item.arg]
    return []


def _label_keys(template: str) -> list[str]:
    keys = []
    for match in _LABELLED_VALUE.finditer(template):
        key = match.group(1).lower()
        if key not in _STEP_WORDS and key not in keys:
            keys.append(key)
    return keys


def _formatted_values(node: ast.expr, call: ast.Call) -> list[tuple[str, str]] | None:
    """(key, value source) pairs of a log line: `f"loss={loss:.3f}"`, `"loss=%f" % loss`,
    `"loss: %f", loss` (logging's arguments). None when the line names no loss."""
    pairs: list[tuple[str, str]] = []
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                label = _label_keys(text + "{}")
                key = label[-1] if label and text.rstrip().endswith((":", "=")) else None
                if key and key not in dict(pairs):
                    pairs.append((key, _code(part.value)))
                text += "{}"
            else:
                text += str(part.value) if isinstance(part, ast.Constant) else ""
        template = text
    else:
        arguments: list[ast.expr]
        placeholder = _PERCENT_PLACEHOLDER
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            template = _string(node.left) or ""
            right = node.right
            arguments = list(right.elts) if isinstance(right, ast.Tuple) else [right]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and (template := _string(node.func.value)) is not None
        ):
            arguments, placeholder = list(node.args), _BRACE_PLACEHOLDER
        elif (template := _string(node)) is not None:
            arguments = list(call.args[1:])
        else:
            return None
        placeholders = [m for m in placeholder.finditer(template) if m.group() != "%%"]
        for match in _LABELLED_VALUE.finditer(template):
            key = match.group(1).lower()
            index = next(
                (i for i, p in enumerate(placeholders) if p.start() >= match.start()), None
            )
            if key in _STEP_WORDS or index is None or index >= len(arguments):
                continue
            if key not in dict(pairs):
                pairs.append((key, _code(arguments[index])))
    if "loss" not in template.lower() and not any("loss" in value for _, value in pairs):
        return None
    return [(key, value) for key, value in pairs if key not in _STEP_WORDS]


class _SiteFinder(ast.NodeVisitor):
    """Walks one module, keeping the enclosing function's qualified name."""

    def __init__(self, file_name: str, imports: frozenset[str]) -> None:
        self.file_name = file_name
        self.imports = imports
        self.scope: list[str] = []
        self.class_bases: list[list[str]] = []
        self.functions: list[ast.AST] = []
        self.loops: list[ast.For | ast.AsyncFor] = []
        self.sites: list[Site] = []

    # -- scopes ----------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.class_bases.append([_source_text(base) for base in node.bases])
        self.generic_visit(node)
        self.class_bases.pop()
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.loops.append(node)
        self.generic_visit(node)
        self.loops.pop()

    visit_AsyncFor = visit_For

    def _guess_step(self, node: ast.AST) -> str | None:
        """The step a site without one most likely means: a step counter the function
        assigns before it, else the innermost loop variable."""
        scope = self.functions[-1] if self.functions else None
        if scope is not None:
            assigned = {
                target.id
                for statement in ast.walk(scope)
                if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and getattr(statement, "lineno", 0) <= node.lineno  # type: ignore[attr-defined]
                for target in (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
                if isinstance(target, ast.Name)
            }
            arguments = {
                argument.arg for argument in ast.walk(scope) if isinstance(argument, ast.arg)
            }
            for name in _STEP_COUNTERS:
                if name in assigned or name in arguments:
                    return name
        for loop in reversed(self.loops):
            names = [target.id for target in ast.walk(loop.target) if isinstance(target, ast.Name)]
            preferred = [name for name in names if name in _STEP_COUNTERS]
            if preferred or names:
                return (preferred or names)[0]
        return None

    @property
    def function(self) -> str:
        return ".".join(self.scope) if self.scope else "<module>"

    def _add(
        self,
        node: ast.AST,
        call: str,
        kind: str,
        values: Sequence[tuple[str, str]] = (),
        step: ast.expr | None = None,
        keys: Sequence[str] | None = None,
        metrics: ast.AST | None = None,
        tag: ast.AST | None = None,
        value: ast.AST | None = None,
    ) -> None:
        pairs = tuple(values)
        step_text = _code(step) if step is not None else self._guess_step(node)
        self.sites.append(
            Site(
                file=self.file_name,
                line=node.lineno,
                call=call,
                kind=kind,
                function=self.function,
                keys=tuple(keys if keys is not None else dict(pairs)),
                step=step_text,
                values=pairs,
                metrics_expression=_optional_code(metrics),
                tag_expression=_optional_code(tag),
                value_expression=_optional_code(value),
            )
        )

    # -- what is found ---------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assignment(node, node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assignment(node, [node.target], node.value)
        self.generic_visit(node)

    def _assignment(self, node: ast.stmt, targets: list[ast.expr], value: ast.expr) -> None:
        names = [_receiver_name(target) for target in targets]
        if not self.scope and self.imports & {"mmengine", "<config>"}:
            for name in names:
                if name in (MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS) and isinstance(
                    value, (ast.List, ast.Dict, ast.Call, ast.Tuple)
                ):
                    self._add(node, name, name, keys=())
        for name in names:
            if name.lower().endswith("metrics") and isinstance(value, (ast.Dict, ast.Call)):
                items = _dict_items(value)
                if items or isinstance(value, ast.Dict):
                    target = targets[0]
                    call = f"{_source_text(target)} = {{...}}"
                    self._add(node, call, METRICS_DICT, items, metrics=target)

    def visit_Call(self, node: ast.Call) -> None:
        self._call(node)
        self.generic_visit(node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        callee = _source_text(func)
        if isinstance(func, ast.Name) and func.id == "print" and node.args:
            pairs = _formatted_values(node.args[0], node)
            if pairs is not None:
                self._add(node, callee, PRINT, pairs)
            return
        if isinstance(func, (ast.Name, ast.Attribute)) and _name_of(func).endswith("Trainer"):
            if self.imports & _LIGHTNING:
                self._add(node, callee, LIGHTNING_TRAINER, keys=())
            elif self.imports & {"transformers", "trl"}:
                self._add(node, callee, HF_TRAINER, keys=())
            return
        if not isinstance(func, ast.Attribute):
            return
        method, receiver = func.attr, _receiver_name(func.value)
        if method in ("add_scalar", "add_scalars"):
            tag_node = _argument(node, 0, "tag" if method == "add_scalar" else "main_tag")
            tag = _string(tag_node)
            step = _argument(node, 2, "global_step")
            if method == "add_scalar":
                value = _argument(node, 1, "scalar_value")
                pairs = [(tag, _code(value))] if tag and value is not None else []
                keys = [tag] if tag else []
                self._add(node, callee, TB_SCALAR, pairs, step, keys, tag=tag_node, value=value)
            else:
                scalars = _argument(node, 1, "tag_scalar_dict")
                items = self._resolve_dict(scalars, node)
                keys = [f"{tag}/{key}" if tag else key for key, _ in items]
                self._add(node, callee, TB_SCALARS, (), step, keys, metrics=scalars, tag=tag_node)
        elif method == "log" and receiver == "wandb":
            data = _argument(node, 0, "data")
            items = self._resolve_dict(data, node)
            step = _argument(node, None, "step")
            self._add(node, callee, WANDB, items, step, keys=dict(items), metrics=data)
        elif method == "log" and "accelerator" in receiver.lower():
            data = _argument(node, 0, "values")
            items = self._resolve_dict(data, node)
            step = _argument(node, 1, "step")
            self._add(node, callee, ACCELERATOR, items, step, keys=dict(items), metrics=data)
        elif receiver == "self" and method in ("log", "log_dict") and self._in_lightning():
            if method == "log":
                name = _string(_argument(node, 0, "name"))
                self._add(node, callee, SELF_LOG, keys=[name] if name else [])
            else:
                items = self._resolve_dict(_argument(node, 0, "dictionary"), node)
                self._add(node, callee, SELF_LOG_DICT, items)
        elif method == "log_metrics" and "trainer" in receiver.lower():
            items = self._resolve_dict(_argument(node, 1, "metrics"), node)
            self._add(node, callee, LOG_METRICS, items)
        elif method in _LOGGER_METHODS and "log" in receiver.lower() and node.args:
            message = node.args[1] if method == "log" and len(node.args) > 1 else node.args[0]
            pairs = _formatted_values(message, node)
            if pairs is not None:
                self._add(node, callee, LOGGER, pairs)

    def _in_lightning(self) -> bool:
        return bool(self.imports & _LIGHTNING) or any(
            base.endswith("LightningModule") for bases in self.class_bases for base in bases
        )

    def _resolve_dict(self, node: ast.expr | None, call: ast.Call) -> list[tuple[str, str]]:
        """The keys of a dict argument: a literal, or a name whose literal value (plus
        `name["key"] = ...` stores) the enclosing function assigns before the call."""
        if not isinstance(node, ast.Name):
            return _dict_items(node)
        scope = self.functions[-1] if self.functions else None
        if scope is None:
            return []
        items: dict[str, str] = {}
        for statement in ast.walk(scope):
            if getattr(statement, "lineno", call.lineno + 1) > call.lineno:
                continue
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name) and target.id == node.id:
                        items.update(_dict_items(statement.value))
                    elif (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == node.id
                        and (key := _string(target.slice)) is not None
                    ):
                        items[key] = _source_text(statement.value)
        return list(items.items())


_LIGHTNING = frozenset({"lightning", "pytorch_lightning"})


def _name_of(func: ast.Name | ast.Attribute) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr


def imported_packages(module: ast.Module) -> frozenset[str]:
    """Top-level packages a module imports (`from transformers import X` -> transformers)."""
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    if _looks_like_mmengine_config(module):
        names.add("<config>")
    return frozenset(names)


def _looks_like_mmengine_config(module: ast.Module) -> bool:
    """An OpenMMLab config: top-level assignments only, among them `default_hooks`,
    `custom_hooks`, `_base_` or `train_cfg`."""
    names = {
        _receiver_name(target)
        for node in module.body
        if isinstance(node, ast.Assign)
        for target in node.targets
    }
    no_code = not any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For))
        for node in module.body
    )
    return no_code and bool(names & {"_base_", MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS, "train_cfg"})


def find_sites(module: ast.Module, file_name: str) -> tuple[list[Site], frozenset[str]]:
    """The metric-logging sites of one parsed module, and the packages it imports."""
    imports = imported_packages(module)
    finder = _SiteFinder(file_name, imports)
    try:
        finder.visit(module)
    except RecursionError:
        raise ValueError("nested too deeply to scan") from None
    return sorted(finder.sites, key=lambda site: site.line), imports


# ---------------------------------------------------------------------------------------
# The project: framework, plan, suggestions
# ---------------------------------------------------------------------------------------


def detect_framework(sites: Sequence[Site], imports: set[str]) -> str | None:
    """The framework to integrate with, most specific first."""
    kinds = {site.kind for site in sites}
    if not kinds:
        return None
    if kinds & {MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS}:
        return "mmengine"
    if HF_TRAINER in kinds:
        return "hf"
    if kinds & {LIGHTNING_TRAINER, SELF_LOG, SELF_LOG_DICT}:
        return "lightning"
    if ACCELERATOR in kinds or "accelerate" in imports:
        return "accelerate"
    return "custom"


@contextlib.contextmanager
def _quiet_recorder() -> Iterator[None]:
    """The recorder says 'matches no chart group' once per key: right for a training run,
    noise for a preview that reports the same thing in its plan."""
    recorder_logger = logging.getLogger("ocms_recorder")
    was_disabled, recorder_logger.disabled = recorder_logger.disabled, True
    try:
        yield
    finally:
        recorder_logger.disabled = was_disabled


def plan_keys(keys: Sequence[str], chart_groups: list[ChartGroup] | None = None) -> list[PlanEntry]:
    """Where the recorder would write each key, asked of the recorder itself."""
    with _quiet_recorder():
        recorder = OcmsRecorder(enabled=False, chart_groups=chart_groups, mirror_to_ocms=False)
        return [PlanEntry(*route) for route in recorder.preview(keys)]


# A dropped key joins the first default chart whose family it belongs to.
_FAMILIES = (
    ("loss", re.compile(r"loss", re.IGNORECASE)),
    ("learning_rate", re.compile(r"(^|[/_.])(lr|learning_rate)($|[/_.])", re.IGNORECASE)),
    ("epoch", re.compile(r"epoch", re.IGNORECASE)),
    ("timing", re.compile(r"time|timing|throughput|per_second", re.IGNORECASE)),
    ("eval_score", re.compile(r"acc|score|f1|map|iou|eval|val|top\d", re.IGNORECASE)),
    ("grad_norm", re.compile(r"grad", re.IGNORECASE)),
)
_OTHER_CHART = "other"


def suggest_chart_groups(plan: Sequence[PlanEntry]) -> list[SuggestedGroup] | None:
    """Chart groups that keep every key within MAX_CHARTS charts, or None when the
    defaults already keep them all. The default groups stay (keys the scan cannot see, like
    a Trainer's own, still reach them); a dropped key widens the default chart of its
    family, else a chart named after its prefix (`reward/mean` -> `reward`)."""
    dropped = [entry.key for entry in plan if entry.chart is None]
    if not dropped:
        return None
    used = {entry.chart for entry in plan if entry.chart is not None}
    extra: dict[str, list[str]] = {}
    for key in dropped:
        family = next((name for name, pattern in _FAMILIES if pattern.search(key)), None)
        chart = family or _chart_name_for(key)
        extra.setdefault(chart, []).append(key)
    defaults = [name for name, _ in DEFAULT_CHART_GROUPS]
    new_charts = [name for name in extra if name not in defaults]
    # Default charts that nothing found uses give way first when the limit is reached.
    keep = [name for name in defaults if name in used or name in extra]
    spare = [name for name in defaults if name not in keep]
    room = MAX_CHARTS - len(keep)
    if len(new_charts) > room:  # fold the rest into one chart
        folded = new_charts[room - 1 :] if room > 0 else new_charts
        kept_new = new_charts[: room - 1] if room > 0 else []
        extra[_OTHER_CHART] = [key for name in folded for key in extra.pop(name)]
        new_charts = [*kept_new, _OTHER_CHART]
    charts = [name for name in defaults if name in keep or name in spare[: room - len(new_charts)]]
    groups = [SuggestedGroup(name, True, tuple(extra.get(name, ()))) for name in charts]
    groups += [SuggestedGroup(name, False, tuple(extra[name])) for name in new_charts]
    return groups[:MAX_CHARTS]


def _chart_name_for(key: str) -> str:
    prefix = key.split("/", 1)[0] if "/" in key else key
    return sanitize_key(prefix)[:MAX_CHART_NAME_LENGTH]


def chart_groups_from(groups: Sequence[SuggestedGroup]) -> list[ChartGroup]:
    """The suggestion as real chart groups (what chart_groups_source() writes as code)."""
    defaults = dict(DEFAULT_CHART_GROUPS)
    return [
        (
            group.chart,
            _predicate(defaults[group.chart] if group.extends_default else None, group.keys),
        )
        for group in groups
    ]


def _predicate(default: Callable[[str], bool] | None, keys: Sequence[str]) -> Callable[[str], bool]:
    accepted = frozenset(keys)
    if default is None:
        return accepted.__contains__
    return lambda key: default(key) or key in accepted


def chart_groups_source(groups: Sequence[SuggestedGroup], indent: str = "") -> str:
    """Python source of the suggestion, for a training script that imports the recorder."""
    lines = [f"{indent}chart_groups = ["]
    for group in groups:
        keys = "{" + ", ".join(repr(key) for key in group.keys) + "}"
        if group.extends_default and group.keys:
            test = f"_ocms_default[{group.chart!r}](k) or k in {keys}"
        elif group.extends_default:
            test = f"_ocms_default[{group.chart!r}](k)"
        else:
            test = f"k in {keys}"
        lines.append(f"{indent}    ({group.chart!r}, lambda k: {test}),")
    lines.append(f"{indent}]")
    return "\n".join(lines)


def scan_project(root: Path) -> ScanResult:
    """Scan a project directory (which must exist) without importing anything of it."""
    root = Path(root)
    skipped: list[tuple[str, str]] = []
    sites: list[Site] = []
    imports: set[str] = set()
    files_read = 0
    for path in python_files(root, skipped):
        name = relative_name(root, path)
        if path.is_symlink():
            skipped.append((name, "symbolic link (not followed)"))
            continue
        try:
            module = parse_source(read_source(path), name)
            found, file_imports = find_sites(module, name)
        except (OSError, ValueError) as error:
            skipped.append(
                (
                    name,
                    str(error) if isinstance(error, ValueError) else error.strerror or str(error),
                )
            )
            continue
        files_read += 1
        sites.extend(found)
        imports |= file_imports
    keys = list(dict.fromkeys(key for site in sites for key in site.keys))
    plan = plan_keys(keys)
    suggestion = suggest_chart_groups(plan)
    suggested_plan = None if suggestion is None else plan_keys(keys, chart_groups_from(suggestion))
    return ScanResult(
        root=root,
        framework=detect_framework(sites, imports),
        sites=sites,
        plan=plan,
        suggested_chart_groups=suggestion,
        suggested_plan=suggested_plan,
        skipped=sorted(skipped),
        files_read=files_read,
    )


# ---------------------------------------------------------------------------------------
# Text output
# ---------------------------------------------------------------------------------------


def format_text(result: ScanResult) -> str:
    """A table a person reads in ten seconds. Every file-controlled text is escaped."""
    from ocms_tui.report import printable

    lines = [f"framework: {result.framework or 'none found'}   ({result.files_read} files read)"]
    if result.sites:
        lines.append(f"sites ({len(result.sites)}):")
        rows = [
            (
                f"{site.file}:{site.line}",
                site.call,
                site.function,
                ", ".join(site.keys) or "-",
            )
            for site in result.sites
        ]
        lines += _table(rows, ("where", "call", "function", "keys"))
    else:
        lines.append("no metric-logging site found")
    if result.plan:
        lines.append("plan (default chart groups):")
        lines += _table(
            [(e.key, e.chart or "-", e.y_axis or "not written") for e in result.plan],
            ("key", "chart", "y_axis"),
        )
    if result.suggested_chart_groups is not None:
        lines.append("suggested chart_groups (keep every key):")
        lines.append("  _ocms_default = dict(DEFAULT_CHART_GROUPS)")
        lines += chart_groups_source(result.suggested_chart_groups, "  ").splitlines()
    for name, reason in result.skipped:
        lines.append(f"skipped {name}: {reason}")
    return "\n".join(printable(line) for line in lines) + "\n"


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
