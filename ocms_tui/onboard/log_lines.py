"""The values a training script prints or logs, read from the line's syntax tree.

`print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms")`, `"loss %.3f" % x`,
`"Loss: {:.6f}".format(x)`, `logger.info("loss %f", x)`, `print("loss", x)`: each value
takes its label from the words written just before it (`train loss {a}` -> `train_loss`).
A printed step (`iter {iter_num}`) is the x axis, not a metric; an epoch index is neither;
an evaluation line (`Test set: Average loss`, or a line printed by `def test`) names its
values `test_loss`, apart from the training loss; a count of correct answers printed as
`Accuracy: {}/{} ({:.0f}%)` is the percentage the script divides for its own print.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# Words of a label that name the x axis: its value is the step.
STEP_WORDS = frozenset(
    {"step", "steps", "global_step", "iter", "iter_num", "iteration", "it", "batch", "update"}
)
# Words of a label that name an epoch index: neither a step nor a metric.
_EPOCH = re.compile(r"(^|_)epoch(s)?$")
# Adjectives that say how the script averaged, not what the value is.
_FILLER = frozenset({"current", "the", "set"})
# How an evaluation averaged: dropped there (`Test set: Average loss` is the test loss);
# kept in training, where `Average loss` of an epoch is not the per-batch loss.
_AVERAGE = frozenset({"average", "avg", "mean"})
# Words that join a sentence, not name a value (`done in {t}s`, `at {step}`).
_NOT_LABELS = frozenset({"at", "in", "of", "on", "to", "for", "after", "by", "with", "from", "and"})
_SPLIT_LABEL = re.compile(r"([A-Za-z_][\w/.-]*(?:[ \t]+[A-Za-z_][\w/.-]*){0,3})$")
_PERCENT = re.compile(r"%(\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
_BRACE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_EVAL_PREFIXES = (
    ("test", re.compile(r"\btest", re.IGNORECASE)),
    ("val", re.compile(r"\bval(id|idation)?\b", re.IGNORECASE)),
    ("eval", re.compile(r"\beval(uat\w*)?\b", re.IGNORECASE)),
)
_SPLIT_PREFIXES = ("train", "val", "valid", "test", "eval", "dev")
# A line reports a loss: `loss`, or `cost` as some tutorials call it.
_LOSS_WORD = re.compile(r"loss|\bcosts?\b", re.IGNORECASE)
_EVAL_FUNCTION = re.compile(r"(^|_)(test|eval|evaluate|evaluation|valid|validate|validation)($|_)")


@dataclass(frozen=True)
class Placeholder:
    """A value of the line and the literal text written between it and the one before."""

    before: str
    value: ast.expr


@dataclass(frozen=True)
class LogLine:
    values: tuple[tuple[str, ast.expr], ...]  # (key, value node), in the line's order
    step: ast.expr | None  # the value printed after `iter`/`step`, if any
    text: str  # the line's literal text, placeholders as {}


def placeholders(node: ast.expr, call: ast.Call) -> list[Placeholder] | None:
    """The line's values with the text before each, for the forms above; None otherwise."""
    if isinstance(node, ast.JoinedStr):
        found, text = [], ""
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                found.append(Placeholder(text, part.value))
                text = ""
            elif isinstance(part, ast.Constant):
                text += str(part.value)
        return found
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        template = _string(node.left)
        right = node.right
        if template is None or isinstance(right, ast.Dict):
            return None
        return _fill(
            template, _PERCENT, list(right.elts) if isinstance(right, ast.Tuple) else [right]
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and (template := _string(node.func.value)) is not None
    ):
        return _fill_format(template, node)
    if (template := _string(node)) is not None:
        rest = call.args[call.args.index(node) + 1 :] if node in call.args else []
        if _PERCENT.search(template) and rest and all(_string(arg) is None for arg in rest):
            return _fill(template, _PERCENT, list(rest))  # logging's lazy arguments
        found, text = [], template
        for argument in rest:  # print("loss", loss, "acc", acc)
            if (piece := _string(argument)) is not None:
                text += " " + piece
            elif not isinstance(argument, ast.Starred):
                found.append(Placeholder(text + " ", argument))
                text = ""
        return found
    return None


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _fill(template: str, pattern: re.Pattern[str], arguments: list[ast.expr]) -> list[Placeholder]:
    found, position = [], 0
    for match in pattern.finditer(template):
        if match.group() == "%%" or match.group(1):  # `%%`, or `%(name)s` (a dict)
            continue
        if len(found) >= len(arguments) or isinstance(arguments[len(found)], ast.Starred):
            break
        found.append(Placeholder(template[position : match.start()], arguments[len(found)]))
        position = match.end()
    return found


def _fill_format(template: str, call: ast.Call) -> list[Placeholder]:
    keywords = {item.arg: item.value for item in call.keywords if item.arg}
    found, position, automatic = [], 0, 0
    for match in _BRACE.finditer(template):
        if match.group(1) is None:
            continue
        field_name = re.split(r"[.\[!:]", match.group(1), maxsplit=1)[0]
        value: ast.expr | None
        if field_name == "":
            index, automatic = automatic, automatic + 1
            value = call.args[index] if index < len(call.args) else None
        elif field_name.isdigit():
            index = int(field_name)
            value = call.args[index] if index < len(call.args) else None
        else:
            value = keywords.get(field_name)
        if value is None or isinstance(value, ast.Starred):
            break
        found.append(Placeholder(template[position : match.start()], value))
        position = match.end()
    return found


def label_words(before: str) -> list[str]:
    """The words right before a value, lower-cased: `", train loss: "` -> [train, loss]."""
    stripped = before.rstrip().rstrip(":=").rstrip()
    match = _SPLIT_LABEL.search(stripped)
    if match is None:
        return []
    words = [word.lower().strip("/.-") for word in match.group(1).split()]
    words = [word for word in words if word not in _FILLER] or words[-1:]
    if words and words[-1] in _NOT_LABELS:
        return []
    return [word for word in words if word]


def eval_prefix(first_text: str, function: str) -> str | None:
    """`test`, `val` or `eval` when the line reports an evaluation: its opening words
    (`Test set:`) say so, or the function printing it does (`def test`, `evaluate`)."""
    for prefix, pattern in _EVAL_PREFIXES:
        if pattern.search(first_text):
            return prefix
    name = function.rsplit(".", 1)[-1].lower()
    match = _EVAL_FUNCTION.search(name)
    if match is None:
        return None
    word = match.group(2)
    return "test" if word == "test" else "val" if word.startswith("valid") else "eval"


def read_log_line(node: ast.expr, call: ast.Call, function: str) -> LogLine | None:
    """The labelled values of a log line, or None when it is not one that reports a loss."""
    found = placeholders(node, call)
    if found is None:
        return None
    text = "{}".join(place.before for place in found)
    prefix = eval_prefix(found[0].before if found else text, function)
    values: list[tuple[str, ast.expr]] = []
    step: ast.expr | None = None
    for index, place in enumerate(found):
        words = label_words(place.before)
        if prefix or (words and words[0].startswith(_SPLIT_PREFIXES)):
            words = [word for word in words if word not in _AVERAGE] or words[-1:]
        key = "_".join(words)
        if not key or (
            isinstance(place.value, ast.Constant) and isinstance(place.value.value, str)
        ):
            continue
        if key in STEP_WORDS or words[-1] in STEP_WORDS:
            step = unformatted(place.value) if step is None else step
            continue
        if _EPOCH.search(key):
            continue
        value = unformatted(place.value)
        if "acc" in words[-1] and _is_fraction(found, index):
            divided = _divided_value(found, index)
            if divided is None:
                key = key.replace(words[-1], "correct")
            else:
                value = divided
        if prefix and not key.startswith(_SPLIT_PREFIXES):
            key = f"{prefix}_{key}"
        if key not in dict(values):
            values.append((key, value))
    if not _LOSS_WORD.search(text) and not any(_LOSS_WORD.search(key) for key, _ in values):
        return None
    return LogLine(tuple(values), step, text)


def unformatted(node: ast.expr) -> ast.expr:
    """The number a value formats for its print: `'{:.6f}'.format(loss)` and
    `'%04d' % (epoch + 1)` print `loss` and `epoch + 1` (a string is no metric)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and _string(node.func.value) is not None
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
    ):
        return node.args[0]
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and _string(node.left) is not None
        and not isinstance(node.right, (ast.Tuple, ast.Dict))
    ):
        return node.right
    return node


def is_percentage(node: ast.expr) -> bool:
    """`100. * correct / total`: a value the script scales to a percentage for its print."""
    return any(
        isinstance(part, ast.BinOp)
        and isinstance(part.op, ast.Mult)
        and any(
            isinstance(side, ast.Constant) and side.value in (100, 100.0)
            for side in (part.left, part.right)
        )
        for part in ast.walk(node)
    )


def _is_fraction(found: list[Placeholder], index: int) -> bool:
    """`{correct}/{total}`: the value is the numerator of a printed fraction (a count)."""
    following = found[index + 1] if index + 1 < len(found) else None
    return following is not None and following.before.strip() == "/"


def _divided_value(found: list[Placeholder], index: int) -> ast.expr | None:
    """The value after the fraction, before the next label, that divides: `({:.0f}%)`."""
    for place in found[index + 2 :]:
        if label_words(place.before):
            return None
        if any(
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            for node in ast.walk(place.value)
        ):
            return place.value
    return None
