"""The libcst edits `ocms-tui init` makes: statements added around a site, an argument
added to a call, the import block, MMEngine config edits. libcst keeps every other byte of
the file as it was. No Textual.
"""

from __future__ import annotations

import ast
import builtins
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TypeVar

import libcst as cst
from libcst.metadata import PositionProvider

from ocms_tui.onboard.init_templates import HOOK_PREFIX, MARK, MMENGINE_HOOK_MODULE, TARGET_DIR
from ocms_tui.onboard.scan_sites import MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS

_Listed = TypeVar(
    "_Listed", cst.Arg, cst.BaseElement, cst.BaseDictElement
)  # what a call or a list holds


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
    """Edits the calls on given lines (a framework's callback added) and puts the import
    block after the module's opening imports."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        call_lines: dict[tuple[int, str], Callable[[cst.Call], cst.Call]],
        imports: list[cst.BaseStatement],
    ) -> None:
        super().__init__()
        self.call_lines = call_lines
        self.imports = imports
        self.refused: dict[int, str] = {}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        line = self.get_metadata(PositionProvider, original_node).start.line
        callee = cst.helpers.get_full_name_for_node(original_node.func) or ""
        edit = self.call_lines.get((line, callee))
        if edit is None:
            return updated_node
        try:
            edited = edit(updated_node)
        except _CannotEdit as why:
            self.refused[line] = str(why)
            return updated_node
        del self.call_lines[line, callee]  # once: a second visit finds none
        return edited

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = list(updated_node.body)
        if self.imports:
            position = _import_position(body)
            body[position:position] = self.imports
        return updated_node.with_changes(body=body)


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(part, (cst.Import, cst.ImportFrom)) for part in statement.body
    )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _import_position(body: Sequence[cst.BaseStatement]) -> int:
    """Just after the module's opening docstring and imports: before any code, so that
    every use sees the added import (an import further down, after a loop at module
    level, would come too late for it)."""
    position = 1 if body and _is_docstring(body[0]) else 0
    while position < len(body) and _is_import_line(body[position]):
        position += 1
    return position


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
    have = _top_level_imports(
        module.with_changes(body=module.body[: _import_position(module.body)])
    )
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


def _merged_callbacks(code: str, hook: str, simple: bool) -> str:
    """A dict that is `code` with `hook` added to its "callbacks", evaluating `code` once."""
    if simple:
        return f'{{**{code}, "callbacks": [*({code}.get("callbacks") or []), {hook}]}}'
    return (
        f'(lambda _ocms_kwargs: {{**_ocms_kwargs, "callbacks": '
        f'[*(_ocms_kwargs.get("callbacks") or []), {hook}]}})({code})'
    )


def _is_simple(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) or (
        isinstance(node, cst.Attribute) and _is_simple(node.value)
    )


def _callbacks_value(value: cst.BaseExpression, hook: str) -> cst.BaseExpression:
    if isinstance(value, cst.List):
        return _with_element(value, cst.parse_expression(hook))
    code = cst.Module([]).code_for_node(value)
    return cst.parse_expression(f"[*({code} or []), {hook}]")


def _add_callback(hook: str) -> Callable[[cst.Call], cst.Call]:
    """`callbacks=[..., hook]`; merged into a `**kwargs` dict that may hold callbacks."""

    def edit(call: cst.Call) -> cst.Call:
        arguments = list(call.args)
        for index, argument in enumerate(arguments):
            if argument.keyword is not None and argument.keyword.value == "callbacks":
                arguments[index] = argument.with_changes(
                    value=_callbacks_value(argument.value, hook)
                )
                return call.with_changes(args=arguments)
        spread = [index for index, argument in enumerate(arguments) if argument.star == "**"]
        if len(spread) > 1:
            raise _CannotEdit("several **dicts: add the callback to the one that holds them")
        if spread:
            argument = arguments[spread[0]]
            code = cst.Module([]).code_for_node(argument.value)
            merged = _merged_callbacks(code, hook, _is_simple(argument.value))
            arguments[spread[0]] = argument.with_changes(value=cst.parse_expression(merged))
            return call.with_changes(args=arguments)
        return _with_argument(call, _keyword("callbacks", f"[{hook}]"))

    return edit


def _add_trainer_default(hook: str) -> Callable[[cst.Call], cst.Call]:
    """LightningCLI(..., trainer_defaults={"callbacks": [hook]}): the CLI adds these
    callbacks to those of its config, and the saved config stays the user's."""

    def edit(call: cst.Call) -> cst.Call:
        arguments = list(call.args)
        for index, argument in enumerate(arguments):
            if argument.keyword is not None and argument.keyword.value == "trainer_defaults":
                value = argument.value
                if isinstance(value, cst.Dict):
                    elements = list(value.elements)
                    for position, element in enumerate(elements):
                        key = getattr(element, "key", None)
                        if isinstance(key, cst.SimpleString) and key.evaluated_value == "callbacks":
                            elements[position] = element.with_changes(
                                value=_callbacks_value(element.value, hook)
                            )
                            break
                    else:
                        entry = cst.DictElement(
                            cst.SimpleString('"callbacks"'), cst.parse_expression(f"[{hook}]")
                        )
                        elements = _appended(elements, entry)
                    new_value: cst.BaseExpression = value.with_changes(elements=elements)
                else:
                    code = cst.Module([]).code_for_node(value)
                    new_value = cst.parse_expression(
                        _merged_callbacks(code, hook, _is_simple(value))
                    )
                arguments[index] = argument.with_changes(value=new_value)
                return call.with_changes(args=arguments)
        if any(argument.star == "**" for argument in arguments):
            raise _CannotEdit("trainer_defaults may come from a **dict: add the callback by hand")
        return _with_argument(call, _keyword("trainer_defaults", f'{{"callbacks": [{hook}]}}'))

    return edit


class _CannotEdit(Exception):
    """A call init cannot add to without guessing; the plan says so."""


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
