"""A sweep in the dashboard: the run list ranked by a series with each run's latest value, every
run drawn (the leading few in colour and in the legend, the rest grey), the highlighted run in
front, broken runs among them badged and ranked last."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import (
    HandSession,
    append_rows,
    chart_frame,
    hand_run,
    hand_state,
    screen_text,
    wait_for,
    write_layout,
)
from textual.widgets import SelectionList

from ocms_tui.follow.run_table import Ranking
from ocms_tui.follow.session import SessionState, run_key
from ocms_tui.format.ranking import SortKey
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import DEFAULT_TOP_RUNS, MUTED_COLOR, ChartPanel

SIZE = (160, 48)


def write_run(directory: Path, final_loss: float, accuracy: float | None = None) -> None:
    """Ten rows of a loss falling to `final_loss` (and an accuracy chart, when given)."""
    directory.mkdir(parents=True)
    charts = {"loss": ["loss", "eval_loss"]}
    append_rows(
        directory / "loss.csv",
        [f"{step},{final_loss + (9 - step) * 0.1!r},{final_loss * 2!r}" for step in range(10)],
    )
    if accuracy is not None:
        charts["eval_score"] = ["accuracy"]
        append_rows(directory / "eval_score.csv", [f"9,{accuracy!r}"])
    write_layout(directory, charts)


def write_sweep(parent: Path, runs: int) -> list[str]:
    """`runs` runs named run_000... whose final losses are a shuffled 0.01 .. runs/100; returns
    the names best (lowest loss) first."""
    finals = {f"run_{index:03d}": ((index * 37) % runs + 1) / 100 for index in range(runs)}
    for name, final in finals.items():
        write_run(parent / name, final, accuracy=1 - final)
    return sorted(finals, key=finals.__getitem__)


def panel(app: OcmsApp, name: str) -> ChartPanel:
    return next(panel for panel in app.query(ChartPanel) if panel.name == name)


def drawn_colors(chart: ChartPanel) -> list[tuple[int, int, int]]:
    """The colour of every line the plot draws, in drawing order (the last is in front)."""
    series, _, _ = chart._series_for_plot()
    return [line.color for line in series]


def list_names(app: OcmsApp) -> list[str]:
    return [Path(key).name for key in app.run_list.visible_keys]


async def test_a_sweep_is_ranked_drawn_whole_and_the_leaders_listed(tmp_path: Path) -> None:
    best_first = write_sweep(tmp_path, 40)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: len(app.grid.panels) == 2)
        await pilot.pause()
        assert list_names(app) == best_first  # lowest loss first: the default series
        text = screen_text(app)
        assert "by loss (lowest first)" in text
        assert "0.01 run_" in text.replace(best_first[0], "run_")  # its latest value
        loss = panel(app, "loss")
        # Every run's every series is drawn; the leaders' in colour, in front.
        assert len(loss.lines) == 40 * 2
        colors = drawn_colors(loss)
        assert len(colors) == 80
        assert colors[: 80 - 2 * DEFAULT_TOP_RUNS] == [MUTED_COLOR] * (80 - 2 * DEFAULT_TOP_RUNS)
        assert MUTED_COLOR not in colors[80 - 2 * DEFAULT_TOP_RUNS :]
        # The legend lists the leaders, best first, and counts the rest.
        listed_runs = [line.run for line in loss.listed]
        assert listed_runs[::2] == best_first[:DEFAULT_TOP_RUNS]
        assert f"+{40 - DEFAULT_TOP_RUNS} more runs, drawn grey (ranked by loss)" in text
        assert "first 24" not in text


async def test_o_ranks_by_the_next_series_and_a_sign_forces_the_order(tmp_path: Path) -> None:
    best_first = write_sweep(tmp_path, 8)
    app = OcmsApp(tmp_path, watch=False, sort=SortKey.parse("-loss"), top=3)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: list_names(app) == best_first[::-1])
        assert [line.run for line in panel(app, "loss").listed][::2] == best_first[::-1][:3]
        await pilot.press("o")  # loss → eval_loss (twice the loss: the same order, lowest first)
        await wait_for(pilot, lambda: "by eval_loss (lowest first)" in screen_text(app))
        assert list_names(app) == best_first
        await pilot.press("o")  # → accuracy: 1 - loss, highest first, so the same runs lead
        await wait_for(pilot, lambda: "by accuracy (highest first)" in screen_text(app))
        assert list_names(app) == best_first
        assert app.run_view.featured == tuple(
            run_key(run) for name in best_first[:3] for run in app.session.runs if run.name == name
        )


async def test_the_highlighted_run_comes_to_the_front_in_colour(tmp_path: Path) -> None:
    best_first = write_sweep(tmp_path, 12)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: len(app.grid.panels) == 2)
        loss = panel(app, "loss")
        assert app.run_view.highlighted is None
        options = app.query_one(SelectionList)
        options.focus()
        await pilot.press(*["down"] * 9)  # the 10th best: drawn grey until now
        target = best_first[9]
        await wait_for(pilot, lambda: app.run_view.highlighted is not None)
        assert Path(app.run_view.highlighted).name == target
        colors = drawn_colors(loss)
        front = loss.runs.color_of(app.run_view.highlighted)
        assert front is not None and front != MUTED_COLOR
        assert colors[-2:] == [front, front]  # its two series, drawn last
        assert target in [line.run for line in loss.listed]  # and in the legend
        await pilot.press("escape")  # back to the charts: it goes back behind, grey
        await wait_for(pilot, lambda: app.run_view.highlighted is None)
        assert target not in [line.run for line in loss.listed]


async def test_broken_runs_are_badged_ranked_last_and_leave_the_others_drawn(
    tmp_path: Path,
) -> None:
    best_first = write_sweep(tmp_path, 6)
    broken = tmp_path / "run_broken"
    broken.mkdir()
    (broken / "metrics.json").write_text("{not json", encoding="utf-8")
    other_charts = tmp_path / "run_other"
    other_charts.mkdir()
    write_layout(other_charts, {"grad_norm": ["grad_norm"]})
    append_rows(other_charts / "grad_norm.csv", ["0,1.5", "1,1.2"])
    truncated = tmp_path / "run_truncated"
    write_run(truncated, 0.001)
    with open(truncated / "loss.csv", "a", encoding="utf-8") as file:
        file.write("10,0.0")  # a row cut off: the rows before it still rank the run first
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: len(app.grid.panels) == 3)
        await pilot.pause()
        names = list_names(app)
        assert names[: len(best_first) + 1] == ["run_truncated", *best_first]
        assert set(names[-2:]) == {"run_broken", "run_other"}
        text = screen_text(app)
        assert "no loss run_other" in text
        assert "no loss 1▲ run_broken" in text  # its problem badge, before the name
        # Charts overlay by name: the run with other charts has its own panel.
        assert [p.name for p in app.grid.panels] == ["loss", "eval_score", "grad_norm"]
        assert [source.run.name for source in panel(app, "grad_norm").overlay.sources] == [
            "run_other"
        ]
        assert len(panel(app, "loss").lines) == (len(best_first) + 1) * 2


def hand_sweep(parent: Path, finals: dict[str, float]) -> SessionState:
    """What the session publishes after reading `write_run` runs of these final losses, made
    by hand: the screen's part is tested without a reading thread."""
    runs = [
        hand_run(
            parent / name,
            chart_frame(
                "loss",
                {
                    "loss": [final + (9 - step) * 0.1 for step in range(10)],
                    "eval_loss": [final * 2] * 10,
                },
            ),
            color=color,
        )
        for color, (name, final) in enumerate(finals.items())
    ]
    order = sorted(runs, key=lambda run: finals[run.name])
    ranking = Ranking(
        SortKey.parse("loss"),
        tuple(run.key for run in order),
        tuple(finals[run.name] for run in order),
        ("loss", "eval_loss"),
    )
    return hand_state(1, runs, ranking=ranking)


async def test_g_draws_seeds_as_their_mean_with_a_band(tmp_path: Path) -> None:
    finals = {"lr_a_seed0": 0.2, "lr_a_seed1": 0.4, "lr_b_seed0": 0.1, "lr_b_seed1": 0.2}
    finals |= {f"lr_c{index}_seed0": 0.5 + index / 10 for index in range(6)}
    session = HandSession([tmp_path / name for name in finals])
    app = OcmsApp(tmp_path, session=session, top=2)
    async with app.run_test(size=SIZE) as pilot:
        session.show(hand_sweep(tmp_path, finals))
        await wait_for(pilot, lambda: len(app.grid.panels) == 1 and app.idle)
        await pilot.press("g")
        loss = panel(app, "loss")
        await wait_for(pilot, lambda: bool(loss.runs.groups))
        await pilot.pause()
        # Groups best first by their mean: lr_b (0.15), lr_a (0.3), then the lone runs.
        assert [name for name, _ in loss.runs.groups][:3] == ["lr_b", "lr_a", "lr_c0"]
        assert [line.run for line in loss.listed] == ["lr_b (2 runs)"] * 2 + ["lr_a (2 runs)"] * 2
        lr_b_loss = loss.listed[0]
        found = loss.frames.band(lr_b_loss, loss.view.smoothing, loss.view.log_y)
        assert found is not None
        # The mean of 0.1 + 0.9 .. and 0.2 + 0.9 ..: at the last step 0.15, band 0.1 .. 0.2.
        assert found.mean[-1] == pytest.approx(0.15)
        assert (found.low[-1], found.high[-1]) == pytest.approx((0.1, 0.2))
        text = screen_text(app)
        assert "lr_b (2 runs) · loss" in text and "+6 more groups, drawn grey" in text
        markers = [line.marker for line in loss._series_for_plot()[0]]
        assert markers.count("·") == 2 * 2 * 2  # a dotted band edge above and below each
        await pilot.press("g")  # every run again
        await wait_for(pilot, lambda: not loss.runs.groups)
        assert [line.run for line in loss.listed][::2] == ["lr_b_seed0", "lr_a_seed0"]
