"""Which way is better for a series name, how runs rank by it, and which runs are seeds of
one setting: pure functions, no files."""

from __future__ import annotations

import math

import pytest

from ocms_tui.format.ranking import (
    DEFAULT_GROUP_PATTERN,
    SortError,
    SortKey,
    compile_group_pattern,
    default_sort_series,
    direction,
    group_name,
    group_runs,
    rank_order,
)


def test_direction_is_none_where_the_name_says_nothing() -> None:
    assert direction("eval_loss") is False and direction("val_accuracy") is True
    assert direction("learning_rate") is None and direction("") is None


def test_sort_key_takes_the_direction_from_the_name_or_a_sign() -> None:
    assert SortKey.parse("loss") == SortKey("loss", higher_first=False)
    assert SortKey.parse("accuracy") == SortKey("accuracy", higher_first=True)
    assert SortKey.parse("-loss") == SortKey("loss", higher_first=True, forced=True)
    assert SortKey.parse("+accuracy") == SortKey("accuracy", higher_first=False, forced=True)
    assert SortKey.parse("eval/accuracy").higher_first is True
    unknown = SortKey.parse("epoch")
    assert (unknown.higher_first, unknown.known) == (False, False)
    assert "+epoch or -epoch" in unknown.describe()
    for bad in ("", "-", "+"):
        with pytest.raises(SortError):
            SortKey.parse(bad)


def test_rank_order_puts_finite_values_first_then_blown_up_then_missing() -> None:
    values = [0.5, None, math.inf, 0.1, math.nan, 0.5, 0.9]
    assert rank_order(values, higher_first=False) == [3, 0, 5, 6, 2, 4, 1]
    assert rank_order(values, higher_first=True) == [6, 0, 5, 3, 2, 4, 1]
    assert rank_order([], higher_first=True) == []


def test_default_sort_series() -> None:
    assert default_sort_series(["epoch", "accuracy", "loss"]) == "loss"
    assert default_sort_series(["epoch", "eval_loss", "accuracy"]) == "eval_loss"
    assert default_sort_series(["epoch", "learning_rate"]) is None


def test_group_names_drop_the_seed_part() -> None:
    pattern = compile_group_pattern(DEFAULT_GROUP_PATTERN)
    assert group_name("lr_1e-4_seed3", pattern) == "lr_1e-4"
    assert group_name("seed12_lr_1e-4", pattern) == "lr_1e-4"
    assert group_name("lr_1e-4_seed3_bs512", pattern) == "lr_1e-4_bs512"
    assert group_name("sweep/lr_1e-4/seed0", pattern) == "sweep/lr_1e-4"
    assert group_name("baseline", pattern) == "baseline"
    assert group_name("seed1", pattern) == "seed1"  # nothing left: the run is its own group
    names = ["a_seed0", "b_seed0", "a_seed1", "c", "b_seed1"]
    assert group_runs(names, pattern) == {"a": [0, 2], "b": [1, 4], "c": [3]}


def test_a_group_pattern_must_match_something() -> None:
    for bad in ("(", "x*", ""):
        with pytest.raises(SortError):
            compile_group_pattern(bad)
    assert group_name("run-s1", compile_group_pattern(r"-s\d")) == "run"


def test_groups_rank_by_their_mean() -> None:
    from ocms_tui.follow.run_table import Ranking, rank_groups

    ranking = Ranking(
        SortKey.parse("loss"),
        ("a0", "b0", "a1", "c", "b1"),
        (0.1, 0.2, 0.5, None, 0.25),
        ("loss",),
    )
    names = {"a0": "a_seed0", "a1": "a_seed1", "b0": "b_seed0", "b1": "b_seed1", "c": "c"}
    pattern = compile_group_pattern(DEFAULT_GROUP_PATTERN)
    assert rank_groups(ranking, names, pattern) == (
        ("b", ("b0", "b1")),  # mean 0.225
        ("a", ("a0", "a1")),  # mean 0.3
        ("c", ("c",)),  # no value: last
    )
