"""Questions `ocms-tui init` asks of a training script's syntax tree: is this guard an
optional logger's, is this key an x-axis counter, can this expression be read a second
time without running anything of the script. Pure `ast`; no edit is made here.
"""

from __future__ import annotations

import ast
import re

from ocms_tui.onboard.log_lines import STEP_WORDS

# A guard whose test names one of these is an optional logger's, off in a default run.
_OPTIONAL_LOGGER = re.compile(
    r"wandb|tracking|writer|tensorboard|(^|_)tb(_|$)|mlflow|comet|neptune|clearml|swanlab"
    r"|(^|_)aim(_|$)|report_to|use_logger|log_to",
    re.IGNORECASE,
)
_EPOCH_KEY = re.compile(r"(^|_)epoch(s)?$", re.IGNORECASE)
# Calls that have no effect, so the order they run in does not matter.
_EFFECT_FREE_FUNCTIONS = frozenset(
    {"len", "float", "int", "abs", "round", "min", "max", "str", "repr", "bool", "format"}
)
_EFFECT_FREE_METHODS = frozenset(
    {"item", "detach", "cpu", "float", "numpy", "tolist", "format", "get", "mean", "lower"}
)


def is_axis_key(key: str, value: ast.expr | None) -> bool:
    """`"iter": iter_num`, `"epoch": epoch`: a counter charted as the x axis, not a metric."""
    lowered = key.lower()
    return isinstance(value, ast.Name) and (
        lowered in STEP_WORDS or bool(_EPOCH_KEY.search(lowered))
    )


def is_optional_logger_guard(test: ast.expr) -> bool:
    return any(
        _OPTIONAL_LOGGER.search(node.id if isinstance(node, ast.Name) else node.attr)
        for node in ast.walk(test)
        if isinstance(node, (ast.Name, ast.Attribute))
    )


def rereadable(node: ast.expr) -> bool:
    """Names, constants, attributes, subscripts and arithmetic of them: reading them a
    second time runs nothing of the script."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return rereadable(node.value)
    if isinstance(node, ast.Subscript):
        return rereadable(node.value) and rereadable(node.slice)
    if isinstance(node, ast.BinOp):
        return rereadable(node.left) and rereadable(node.right)
    if isinstance(node, ast.UnaryOp):
        return rereadable(node.operand)
    if isinstance(node, ast.Tuple):
        return all(rereadable(element) for element in node.elts)
    return False


def has_effect(node: ast.AST) -> bool:
    if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id not in _EFFECT_FREE_FUNCTIONS
        if isinstance(func, ast.Attribute):
            return func.attr not in _EFFECT_FREE_METHODS
        return True
    return False


def position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def key_text(key: str) -> str:
    try:
        value = ast.literal_eval(key)
    except (ValueError, SyntaxError):
        return key
    return value if isinstance(value, str) else key


def literal_items(node: ast.expr | None) -> list[tuple[str, ast.expr]]:
    if isinstance(node, ast.Dict):
        return [
            (repr(key.value), value)
            for key, value in zip(node.keys, node.values, strict=True)
            if isinstance(key, ast.Constant) and isinstance(key.value, str)
        ]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(repr(item.arg), item.value) for item in node.keywords if item.arg]
    return []


def names_assigned(node: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
