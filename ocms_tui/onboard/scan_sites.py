"""The metric-logging sites of one Python module, found in its syntax tree (`ast`).

What the integration guide's step 1 searches for by eye: `wandb.log`, TensorBoard scalars,
`accelerator.log`, Lightning's `self.log`, `trainer.log_metrics`, lines that print or log a
loss, `metrics = {...}`, Trainer constructions and MMEngine hook configs. Each site keeps
what `ocms-tui init` needs to record the same metrics (step and value expressions).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocms_tui.onboard.log_lines import STEP_WORDS, read_log_line
from ocms_tui.onboard.steps import Tree, choose_step

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
TQDM = "tqdm.set_postfix"
HF_TRAINER = "transformers.Trainer(...)"
LIGHTNING_TRAINER = "lightning.Trainer(...)"
LIGHTNING_CLI = "LightningCLI(...)"
MM_CUSTOM_HOOKS = "custom_hooks"
MM_DEFAULT_HOOKS = "default_hooks"

_LOGGER_METHODS = frozenset({"info", "debug", "warning", "log"})
# Methods that show one line: tqdm's bar text and `tqdm.write`, `accelerator.print`.
_LINE_METHODS = frozenset({"set_description", "set_postfix_str", "write", "print"})


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
    column: int = field(default=0, compare=False)  # the call's (ast) column on `line`
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
            "step": self.step,  # the step expression init would record with, if known
        }


# ---------------------------------------------------------------------------------------
# Finding sites in one file
# ---------------------------------------------------------------------------------------


def _code(node: ast.AST) -> str:
    """A node as source code (normalised by `ast.unparse`)."""
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return "?"


def _parse_expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


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


def _formatted_values(
    node: ast.expr, call: ast.Call, function: str
) -> tuple[list[tuple[str, str]], str | None] | None:
    """(key, value source) pairs of a log line and the source of the step it prints, if
    any (see `log_lines`). None when the line names no loss."""
    line = read_log_line(node, call, function)
    if line is None:
        return None
    step = None if line.step is None else _code(line.step)
    return [(key, _code(value)) for key, value in line.values], step


class _SiteFinder(ast.NodeVisitor):
    """Walks one module, keeping the enclosing function's qualified name."""

    def __init__(self, file_name: str, imports: frozenset[str], tree: Tree) -> None:
        self.tree = tree
        self.file_name = file_name
        self.imports = imports
        self.scope: list[str] = []
        self.class_bases: list[list[str]] = []
        self.functions: list[ast.AST] = []
        self.wandb_runs: set[str] = {"wandb", "wandb.run"}  # receivers of a wandb `log`
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

    def _step_of(
        self, node: ast.AST, step: ast.expr | None, values: Sequence[tuple[str, str]]
    ) -> str | None:
        """The step init records this site at (see `steps.choose_step`)."""
        keyed = None
        if isinstance(node, ast.Call):
            for key, value in values:
                if key in STEP_WORDS:
                    keyed = _parse_expression(value)
                    break
        return choose_step(self.tree, node, step, keyed).expression

    @property
    def function(self) -> str:
        return ".".join(self.scope) if self.scope else "<module>"

    def _add(
        self,
        node: ast.AST,
        call: str,
        kind: str,
        values: Sequence[tuple[str, str]] = (),
        step: ast.expr | str | None = None,
        keys: Sequence[str] | None = None,
        metrics: ast.AST | None = None,
        tag: ast.AST | None = None,
        value: ast.AST | None = None,
    ) -> None:
        pairs = tuple(values)
        if isinstance(step, str):
            step = _parse_expression(step)
        step_text = self._step_of(node, step, pairs)
        self.sites.append(
            Site(
                file=self.file_name,
                line=node.lineno,
                column=getattr(node, "col_offset", 0),
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
        if isinstance(value, ast.Call) and _code(value.func) == "wandb.init":
            self.wandb_runs.update(_code(target) for target in targets)  # run = wandb.init()
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
        # print, and a project's own print0/print_rank_0/print_master
        if isinstance(func, ast.Name) and func.id.startswith("print") and node.args:
            found = _formatted_values(node.args[0], node, self.function)
            if found is not None:
                self._add(node, callee, PRINT, found[0], found[1])
            return
        if _name_of_call(func) == "LightningCLI":
            self._add(node, callee, LIGHTNING_CLI, keys=())
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
        elif method == "log" and _code(func.value) in self.wandb_runs:
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
        elif method in _LINE_METHODS and node.args:
            found = _formatted_values(node.args[0], node, self.function)
            if found is not None:
                self._add(node, callee, LOGGER, found[0], found[1])
        elif method == "set_postfix":
            items = _dict_items(_argument(node, 0, "ordered_dict"))
            items += [(item.arg, _code(item.value)) for item in node.keywords if item.arg]
            items = [(key, value) for key, value in items if key != "refresh"]
            if any("loss" in key for key, _ in items):
                self._add(node, callee, TQDM, items)
        elif method in _LOGGER_METHODS and "log" in receiver.lower() and node.args:
            message = node.args[1] if method == "log" and len(node.args) > 1 else node.args[0]
            found = _formatted_values(message, node, self.function)
            if found is not None:
                self._add(node, callee, LOGGER, found[0], found[1])

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


def _name_of_call(func: ast.expr) -> str:
    return _name_of(func) if isinstance(func, (ast.Name, ast.Attribute)) else ""


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
    finder = _SiteFinder(file_name, imports, Tree(module))
    try:
        finder.visit(module)
    except RecursionError:
        raise ValueError("nested too deeply to scan") from None
    return sorted(finder.sites, key=lambda site: site.line), imports
