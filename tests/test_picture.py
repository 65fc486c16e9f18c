"""Picture checks (follow.picture): what the format allows but a person sees is wrong, with
no false alarm on healthy runs (the demo, the clean fixture, HF Trainer logs)."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from ocms_recorder import OcmsRecorder

from ocms_integrations.hf_mapping import HF_CHART_GROUPS, rows_from_log_history
from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.picture import (
    COUNTER_NAME,
    FRACTION_NAME,
    MAX_SAMPLE_ROWS,
    PICTURE_RULES,
    PictureTally,
    picture_problems,
    typical_size,
)
from ocms_tui.follow.series import step_regressions
from ocms_tui.format.problems import Problem, Rule
from ocms_tui.ui.demo import write_demo_run
from tests.sources_support import run_cli
from tests.test_hf_mapping import LOG_HISTORY

DATA = Path(__file__).parent / "data"


def tally_of(
    names: Sequence[str], steps: Sequence[int], *columns: Sequence[float], blocks: int = 1
) -> PictureTally:
    """A tally fed the rows in `blocks` pieces, as a reader hands them over."""
    tally = PictureTally(names)
    all_steps = np.asarray(steps, dtype=np.int64)
    all_values = [np.asarray(column, dtype=np.float64) for column in columns]
    previous: int | None = None
    for part in np.array_split(np.arange(len(all_steps)), blocks):
        if not part.size:
            continue
        block = all_steps[part]
        tally.add(block, [values[part] for values in all_values], step_regressions(block, previous))
        previous = int(block[-1])
    return tally


def found(tally: PictureTally, chart: str = "c") -> list[tuple[Rule, str | None, int | None]]:
    return [(p.rule, p.series, p.step) for p in picture_problems(chart, "c.csv", tally)]


# -- mixed-scale -------------------------------------------------------------------------


def test_a_loss_falling_a_thousandfold_is_not_mixed_with_itself() -> None:
    steps = range(2000)
    loss = [10 * math.exp(-step / 290) + 0.01 for step in steps]  # 10 -> 0.01
    assert found(tally_of(["loss", "eval_loss"], steps, loss, loss)) == []


def test_a_learning_rate_beside_a_loss_is_mixed_scale() -> None:
    steps = range(500)
    tally = tally_of(["loss", "lr"], steps, [2.0 - step / 1000 for step in steps], [1e-4] * 500)
    problems = picture_problems("loss", "loss.csv", tally)
    assert [(p.rule, p.chart, p.series, p.step) for p in problems] == [
        (Rule.MIXED_SCALE, "loss", "lr", None)
    ]
    assert "'lr' (typically 0.0001)" in problems[0].message
    assert "'loss' (typically 1.75)" in problems[0].message


def test_two_learning_rate_groups_a_hundredfold_apart_are_not_mixed() -> None:
    steps = range(300)
    assert found(tally_of(["learning_rate", "lr_head"], steps, [1e-4] * 300, [1e-6] * 300)) == []


def test_typical_size_ignores_zeros_gaps_infinities_and_a_few_spikes() -> None:
    values = np.array([0.0, np.nan, np.inf, 2.0, 2.0, 2.0, 1e9, -2.0, 0.0])
    assert typical_size(values) == 2.0
    assert typical_size(np.array([0.0, np.nan, 3.0])) is None  # too few values to say


def test_a_gappy_eval_series_is_compared_by_its_values_only() -> None:
    steps = range(1000)
    evals = [1e-6 if step % 100 == 0 else math.nan for step in steps]
    tally = tally_of(["loss", "eval_metric"], steps, [1.0] * 1000, evals)
    assert found(tally) == [(Rule.MIXED_SCALE, "eval_metric", None)]


# -- epoch-index-step ---------------------------------------------------------------------


def test_a_batch_index_as_the_step_is_an_epoch_index() -> None:
    steps = [batch for _ in range(8) for batch in range(250)]
    tally = tally_of(["loss"], steps, [1.0] * len(steps), blocks=7)
    assert found(tally) == [(Rule.EPOCH_INDEX_STEP, None, 0)]
    (problem,) = picture_problems("loss", "loss.csv", tally)
    assert "goes back to 0 7 time(s), every ~250 rows" in problem.message


@pytest.mark.parametrize(
    "steps",
    [
        [*range(700), *range(500, 1000)],  # one resume from a checkpoint
        [*range(100), *range(100), *range(100)],  # two restarts are not "again and again"
        [*range(100), *range(10, 110), *range(20, 120), *range(30, 130)],  # other steps
        [*range(100), *range(10), *range(300), *range(20), *range(100)],  # unlike lengths
    ],
    ids=["resume", "two-restarts", "different-starts", "different-lengths"],
)
def test_restarts_that_are_not_an_epoch_index(steps: list[int]) -> None:
    assert found(tally_of(["loss"], steps, [1.0] * len(steps))) == []


def test_epoch_index_replaces_the_step_regression_lines(tmp_path: Path) -> None:
    problems = check_directory(DATA / "epoch-index-step").problems
    assert [p.rule for p in problems] == [Rule.EPOCH_INDEX_STEP]


# -- not-a-fraction -----------------------------------------------------------------------


def test_an_accuracy_above_one_names_the_first_step_above_it() -> None:
    steps = list(range(0, 1_000_000))
    accuracy = np.full(len(steps), 0.5)
    accuracy[654_321] = 1.08  # one value in a million, found exactly (not from a sample)
    accuracy[::7] = np.nan
    tally = tally_of(["accuracy"], steps, accuracy, blocks=13)
    assert found(tally) == [(Rule.NOT_A_FRACTION, "accuracy", 654_321)]


def test_a_percentage_accuracy_is_told_how_to_fix_and_over_100_is_wrong_either_way() -> None:
    steps = range(10)
    percent = picture_problems("e", "e.csv", tally_of(["val_acc"], steps, [76.5] * 10))
    assert "if it is a percentage, log it / 100" in percent[0].message
    over = picture_problems("e", "e.csv", tally_of(["accuracy"], steps, [108.0] * 10))
    assert "as a percentage it cannot pass 100" in over[0].message
    assert "reaches 108" in over[0].message


def test_accuracies_within_one_and_other_names_above_one_are_fine() -> None:
    steps = range(20)
    tally = tally_of(
        ["accuracy", "eval_accuracy", "loss", "accumulated"],
        steps,
        [0.3] * 20,
        [1.0] * 20,
        [5.0] * 20,
        [7.0] * 20,
    )
    assert found(tally) == []


@pytest.mark.parametrize(
    ("name", "fraction"),
    [
        ("accuracy", True),
        ("eval_accuracy", True),
        ("val-acc", True),
        ("top1", True),
        ("accuracy_top5", True),
        ("acc", True),
        ("accumulated", False),
        ("cache_hits", False),
        ("mIoU", False),
    ],
)
def test_fraction_names(name: str, fraction: bool) -> None:
    assert bool(FRACTION_NAME.search(name)) is fraction


# -- counter-metric -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "counter"),
    [
        ("step", True),
        ("global_step", True),
        ("train_global_step", True),
        ("iter", True),
        ("iteration", True),
        ("steps_per_second", False),
        ("step_time", False),
        ("epoch", False),
    ],
)
def test_counter_names(name: str, counter: bool) -> None:
    assert bool(COUNTER_NAME.fullmatch(name)) is counter


def test_a_series_equal_to_the_step_is_a_counter_but_an_epoch_is_not() -> None:
    steps = list(range(100, 400))
    samples = [step + 1 for step in steps]
    tally = tally_of(["seen", "epoch", "loss"], steps, samples, steps, [1.0] * 300, blocks=5)
    assert found(tally) == [(Rule.COUNTER_METRIC, "seen", None)]


def test_a_counter_name_counts_but_an_iteration_time_named_iter_does_not() -> None:
    steps = range(0, 90, 10)
    tally = tally_of(["iter", "global_step"], steps, [0.31, 0.29] * 4 + [0.3], [5] * 9)
    # MMEngine's timing/iter is seconds per iteration; a constant whole global_step counts.
    assert found(tally) == [(Rule.COUNTER_METRIC, "global_step", None)]
    going_down = tally_of(["step"], steps, [9, 8, 7, 6, 5, 4, 3, 2, 1])
    assert found(going_down) == []


def test_a_few_rows_equal_to_the_step_prove_nothing() -> None:
    assert found(tally_of(["seen"], range(5), range(5))) == []


# -- the tally ----------------------------------------------------------------------------


def test_the_sample_is_bounded_evenly_spread_and_the_same_however_the_rows_arrive() -> None:
    steps = np.arange(1_000_003)
    values = np.sin(steps / 1000.0)
    whole = tally_of(["x"], steps, values)
    rows_at_a_time = PictureTally(["x"])
    for start in range(0, 5000):
        rows_at_a_time.add(steps[start : start + 1], [values[start : start + 1]], np.zeros(0, int))
    pieces = tally_of(["x"], steps[:5000], values[:5000], blocks=37)
    sampled_steps, sampled = whole.sample()
    assert len(sampled_steps) <= MAX_SAMPLE_ROWS
    assert np.all(np.diff(sampled_steps) == whole.stride)  # evenly spread, from row 0
    assert sampled_steps[0] == 0 and sampled_steps[-1] > 1_000_003 - 2 * whole.stride
    np.testing.assert_array_equal(sampled[:, 0], values[sampled_steps])
    for other in (rows_at_a_time, pieces):
        np.testing.assert_array_equal(
            other.sample()[0], tally_of(["x"], steps[:5000], values[:5000]).sample()[0]
        )


def test_many_series_keep_a_smaller_sample_each() -> None:
    tally = PictureTally([f"s{index}" for index in range(1000)])
    assert tally.capacity * 1000 <= 300_000


# -- no false alarms on healthy runs ------------------------------------------------------


def picture_of(directory: Path) -> list[Problem]:
    return [p for p in check_directory(directory).problems if p.rule in PICTURE_RULES]


def test_no_picture_problem_on_the_demo_run(tmp_path: Path) -> None:
    write_demo_run(tmp_path / "demo", steps=3000)
    result = check_directory(tmp_path / "demo")
    assert result.problems == ()
    assert len(result.charts) == 6


def test_no_picture_problem_on_the_clean_fixture() -> None:
    assert check_directory(DATA / "clean").problems == ()


def test_no_picture_problem_on_hf_trainer_logs_recorded_or_imported(tmp_path: Path) -> None:
    # Longer than the log history of test_hf_mapping: the same entries, repeated over steps.
    history = []
    for round_ in range(30):
        for entry in LOG_HISTORY:
            shifted = dict(entry)
            shifted["step"] = entry["step"] + 20 * round_
            history.append(shifted)
    with OcmsRecorder(log_dir=str(tmp_path / "recorded"), chart_groups=HF_CHART_GROUPS) as rec:
        for step, metrics in rows_from_log_history(history):
            rec.log(step=step, metrics=metrics)
    assert picture_of(tmp_path / "recorded") == []
    source = tmp_path / "hf"
    source.mkdir()
    (source / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    done = run_cli("import", str(source), "--out", str(tmp_path / "imported"))
    assert done.returncode == 0, done.stderr
    assert picture_of(tmp_path / "imported") == []


def test_a_live_model_raises_a_picture_problem_once_the_rows_show_it(tmp_path: Path) -> None:
    from ocms_tui.follow.model import RunModel

    shutil.copytree(DATA / "clean", tmp_path / "run")
    run = tmp_path / "run"
    model = RunModel(run, settle_seconds=0.0)
    model.refresh()
    assert model.problems == ()
    with (run / "learning_rate.csv").open("a") as rows:
        rows.writelines(f"{step},{120.0 + step}\n" for step in range(4, 40))
    model.refresh()
    assert model.problems == ()  # one series: nothing to compare
    with (run / "loss.csv").open("a") as rows:
        rows.writelines(f"{step},0.5,1e-5\n" for step in range(4, 40))
    model.refresh()
    assert [(p.rule, p.chart, p.series) for p in model.problems] == [
        (Rule.MIXED_SCALE, "loss", "eval_loss")
    ]
