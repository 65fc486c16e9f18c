"""The syntax questions init asks before it edits: which guards are optional loggers',
which keys are x-axis counters, which expressions can be read twice without running
anything of the script."""

from __future__ import annotations

import ast

import pytest

from ocms_tui.onboard.init_syntax import (
    has_effect,
    is_axis_key,
    is_optional_logger_guard,
    key_text,
    literal_items,
    names_assigned,
    rereadable,
)


def expression(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


@pytest.mark.parametrize(
    "test",
    [
        "wandb_log",
        "args.with_tracking",
        "writer",
        "writer is not None",
        "self.tb_writer",
        "cfg.report_to == 'all'",
        "use_logger and rank == 0",
        "mlflow.active_run()",
    ],
)
def test_optional_logger_guards(test: str) -> None:
    assert is_optional_logger_guard(expression(test))


@pytest.mark.parametrize(
    "test", ["step % 10 == 0", "args.verbose", "rank == 0", "stable", "tbody", "aimless"]
)
def test_guards_that_a_default_run_takes_are_not_optional_loggers(test: str) -> None:
    assert not is_optional_logger_guard(expression(test))


@pytest.mark.parametrize(
    ("key", "value", "axis"),
    [
        ("iter", "iter_num", True),
        ("step", "global_step", True),
        ("epoch", "epoch", True),
        ("train_epochs", "n", True),
        ("epoch", "epoch + 1.5", False),  # computed: a value, not the counter
        ("loss", "loss", False),
        ("epoch_loss", "epoch_loss", False),
    ],
)
def test_axis_keys_are_counters_named_as_such(key: str, value: str, axis: bool) -> None:
    assert is_axis_key(key, expression(value)) is axis


def test_no_value_is_no_axis_key() -> None:
    assert not is_axis_key("step", None)


@pytest.mark.parametrize(
    ("source", "again"),
    [
        ("loss", True),
        ("-loss / n + 1", True),
        ("state['loss'][0]", True),
        ("self.meter.avg", True),
        ("(a, b)", True),
        ("loss.item()", False),
        ("next(batches)", False),
        ("meter.pop()", False),
        ("[x for x in xs]", False),
    ],
)
def test_rereadable_runs_nothing_of_the_script(source: str, again: bool) -> None:
    assert rereadable(expression(source)) is again


@pytest.mark.parametrize(
    ("source", "effect"),
    [
        ("loss.item()", False),
        ("float(x)", False),
        ("round(x, 4)", False),
        ("next(it)", True),
        ("meter.pop()", True),
        ("f()()", True),
        ("(y := 3)", True),
        ("x + 1", False),
    ],
)
def test_calls_with_an_effect(source: str, effect: bool) -> None:
    assert has_effect(expression(source)) is effect


def test_literal_items_of_dicts_and_dict_calls() -> None:
    items = literal_items(expression("{'loss': a, 'acc': b, key: c, **rest}"))
    assert [(key, ast.unparse(value)) for key, value in items] == [("'loss'", "a"), ("'acc'", "b")]
    items = literal_items(expression("dict(loss=a, **rest)"))
    assert [(key, ast.unparse(value)) for key, value in items] == [("'loss'", "a")]
    assert literal_items(expression("metrics")) == []
    assert literal_items(None) == []


def test_key_text_reads_string_literals_and_keeps_anything_else() -> None:
    assert key_text("'loss'") == "loss"
    assert key_text("name") == "name"
    assert key_text("3") == "3"
    assert key_text("'unterminated") == "'unterminated"


def test_names_assigned_by_a_statement() -> None:
    statement = ast.parse("a, b = f(c); d += 1").body
    assert names_assigned(statement[0]) == {"a", "b"}
    assert names_assigned(statement[1]) == {"d"}
