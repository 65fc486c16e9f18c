"""The libcst edit that records a plain loop's wirings (`init_wiring`): fresh names bound
before a statement and read in its place, the `ocms_log(...)` call right after the site's
own statement (a line of several statements is split there), or after a guard it was
moved out of, and an added step counter at the top of a loop. Every other byte of the
file stays as it was. No Textual.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ocms_tui.onboard.init_wiring import Wiring
from ocms_tui.onboard.steps import ADDED_COUNTER

Position = tuple[int, int]  # (line, column in characters), as libcst counts


@dataclass
class LoopEdits:
    before: dict[Position, list[str]] = field(default_factory=dict)
    after: dict[Position, list[str]] = field(default_factory=dict)
    prologue: dict[Position, list[str]] = field(default_factory=dict)
    replace: list[tuple[Position, Position, str, str]] = field(default_factory=list)
    done: set[Position] = field(default_factory=set)


def _character_position(lines: Sequence[str], line: int, byte_column: int) -> Position:
    """ast counts columns in UTF-8 bytes, libcst in characters."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return line, len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))


def _normal(code: str) -> str:
    try:
        return ast.unparse(ast.parse(code.strip(), mode="eval"))
    except (SyntaxError, ValueError, RecursionError):
        return code


def loop_edits(source: str, wirings: Sequence[Wiring], output_dir_expr: str | None) -> LoopEdits:
    lines = source.splitlines()
    edits = LoopEdits()

    def at(node: ast.AST) -> Position:
        return _character_position(lines, node.lineno, node.col_offset)  # type: ignore[attr-defined]

    counted: set[Position] = set()
    for wiring in wirings:
        call = wiring.call(output_dir_expr)
        if call is None:
            continue
        if wiring.joined_into is not None:
            call = None  # a later site's call records these values
        for hoist in wiring.hoists:
            written = ast.get_source_segment(source, hoist.node) or ""
            if "\n" in written or not written:
                written = ast.unparse(hoist.node)
            edits.before.setdefault(at(wiring.statement), []).append(f"{hoist.name} = {written}")
            end = _character_position(
                lines, hoist.node.end_lineno or 0, hoist.node.end_col_offset or 0
            )
            edits.replace.append((at(hoist.node), end, ast.unparse(hoist.node), hoist.name))
        if call is None:
            continue
        edits.after.setdefault(at(wiring.anchor), []).append(call)
        loop = wiring.step.counter_loop
        if loop is not None and at(loop) not in counted:
            counted.add(at(loop))
            edits.prologue.setdefault(at(loop), []).append(f"{ADDED_COUNTER} = ocms_count()")
    return edits


class LoopEditor(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, edits: LoopEdits) -> None:
        super().__init__()
        self.edits = edits

    def _start(self, node: cst.CSTNode) -> Position:
        position: CodeRange = self.get_metadata(PositionProvider, node)
        return position.start.line, position.start.column

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, cst.BaseExpression) and self.edits.replace:
            span: CodeRange = self.get_metadata(PositionProvider, original_node)
            start = (span.start.line, span.start.column)
            end = (span.end.line, span.end.column)
            for index, (first, last, code, name) in enumerate(self.edits.replace):
                if start <= first and last <= end:
                    written = cst.Module([]).code_for_node(original_node)
                    if _normal(written) == _normal(code):
                        del self.edits.replace[index]
                        return cst.Name(name)
        return result

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        return self._with_prologue(original_node, updated_node)

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        return self._with_prologue(original_node, updated_node)

    def _with_prologue(self, original, updated):  # type: ignore[no-untyped-def]
        added = self.edits.prologue.get(self._start(original))
        if not added or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        self.edits.done.add(self._start(original))
        body = updated.body
        return updated.with_changes(body=body.with_changes(body=[*_parsed(added), *body.body]))

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._rewrite(original_node.body, updated_node.body))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._rewrite(original_node.body, updated_node.body))

    def _rewrite(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> list[cst.BaseStatement]:
        body: list[cst.BaseStatement] = []
        for before, after in zip(original, updated, strict=True):
            if not isinstance(before, cst.SimpleStatementLine) or not isinstance(
                after, cst.SimpleStatementLine
            ):
                body.append(after)
                key = self._start(before)
                if key in self.edits.after:
                    self.edits.done.add(key)
                    body.extend(_parsed(self.edits.after[key]))
                continue
            body.extend(self._split_line(before, after))
        return body

    def _split_line(
        self, before: cst.SimpleStatementLine, after: cst.SimpleStatementLine
    ) -> list[cst.BaseStatement]:
        keys = [self._start(small) for small in before.body]
        if not any(key in self.edits.before or key in self.edits.after for key in keys):
            return [after]
        out: list[cst.BaseStatement] = []
        chunk: list[cst.BaseSmallStatement] = []
        leading = after.leading_lines

        def emit(statements: list[cst.BaseStatement]) -> None:
            nonlocal leading
            if statements and leading:
                statements[0] = statements[0].with_changes(leading_lines=leading)  # type: ignore[call-arg]
                leading = ()
            out.extend(statements)

        def flush(last: bool) -> None:
            if not chunk:
                return
            small = [*chunk[:-1], chunk[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]
            line = cst.SimpleStatementLine(
                body=small,
                trailing_whitespace=after.trailing_whitespace if last else cst.TrailingWhitespace(),
            )
            emit([line])
            chunk.clear()

        count = len(keys)
        for index, (key, small) in enumerate(zip(keys, after.body, strict=True)):
            if key in self.edits.before:
                flush(False)
                emit(_parsed(self.edits.before[key]))
            chunk.append(small)
            if key in self.edits.after:
                self.edits.done.add(key)
                flush(index == count - 1)
                emit(_parsed(self.edits.after[key]))
        flush(True)
        return out


def _parsed(code: Sequence[str]) -> list[cst.BaseStatement]:
    return list(cst.parse_module("".join(line + "\n" for line in code)).body)


def apply_loop_edits(module: cst.Module, edits: LoopEdits) -> tuple[cst.Module, list[Position]]:
    """The edited module, and the places whose edit found no statement (left undone)."""
    edited = MetadataWrapper(module).visit(LoopEditor(edits))
    wanted = set(edits.after) | set(edits.prologue)
    return edited, sorted(wanted - edits.done)
