"""RunSet: the runs a dashboard follows, found again as they appear, overlaid by chart name."""

from __future__ import annotations

from pathlib import Path

from app_support import append_rows, write_layout

from ocms_tui.follow.frames import overlay_frames
from ocms_tui.follow.runs import short_names
from ocms_tui.follow.runset import RunSet, combined_problems, run_frame
from ocms_tui.ui.demo import write_demo_run, write_problem_run


def small_run(directory: Path, charts: dict[str, list[str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, y_axis in charts.items():
        empty = "," * (len(y_axis) - 1)
        append_rows(directory / f"{name}.csv", [f"{step},1.5{empty}" for step in range(3)])
    write_layout(directory, charts)


def test_parent_is_searched_and_runs_named_without_the_shared_suffix(tmp_path: Path) -> None:
    for name in ("run_b", "run_a"):
        small_run(tmp_path / name / "ocms_metrics", {"loss": ["loss"]})
    runset = RunSet([tmp_path])
    assert [run.name for run in runset.runs] == ["run_a", "run_b"]
    assert [run.color for run in runset.runs] == [0, 1]
    assert runset.runs[0].directory == tmp_path / "run_a" / "ocms_metrics"


def test_rescan_adds_new_runs_and_keeps_the_old_ones_and_their_colours(tmp_path: Path) -> None:
    small_run(tmp_path / "run_1" / "ocms_metrics", {"loss": ["loss"]})
    small_run(tmp_path / "run_2" / "ocms_metrics", {"loss": ["loss"]})
    runset = RunSet([tmp_path])
    before = runset.runs
    assert not runset.rescan()
    small_run(tmp_path / "run_0" / "ocms_metrics", {"loss": ["loss"]})
    assert runset.rescan()
    assert runset.runs[:2] == before  # the same objects: their models keep what they read
    assert [(run.name, run.color) for run in runset.runs] == [
        ("run_1", 0),
        ("run_2", 1),
        ("run_0", 2),
    ]


def test_a_parent_without_runs_is_followed_until_a_run_appears_under_it(tmp_path: Path) -> None:
    parent = tmp_path / "out"
    runset = RunSet([parent])
    assert [run.directory for run in runset.runs] == [parent]  # "waiting for out"
    small_run(parent / "run_1" / "ocms_metrics", {"loss": ["loss"]})
    assert runset.rescan()
    assert [run.directory for run in runset.runs] == [parent / "run_1" / "ocms_metrics"]


def test_overlay_groups_charts_by_name_and_keeps_charts_only_some_runs_have(
    tmp_path: Path,
) -> None:
    small_run(tmp_path / "a", {"loss": ["loss", "eval"], "lr": ["lr"]})
    small_run(tmp_path / "b", {"grad": ["grad"], "loss": ["loss"]})
    runset = RunSet([tmp_path / "a", tmp_path / "b"])
    for run in runset.runs:
        run.model.refresh()
    frames = [run_frame(run) for run in runset.runs]
    charts = overlay_frames(frames)
    assert [chart.name for chart in charts] == ["loss", "lr", "grad"]
    assert [[source.run.name for source in chart.sources] for chart in charts] == [
        ["a", "b"],
        ["a"],
        ["b"],
    ]
    assert charts[0].sources[1].chart.y_axis == ("loss",)
    assert overlay_frames(frames[1:])[0].name == "grad"


def test_problems_name_their_run_when_there_are_several(tmp_path: Path) -> None:
    write_problem_run(tmp_path / "bad")
    write_demo_run(tmp_path / "good", steps=20)
    alone = RunSet([tmp_path / "bad"])
    alone.runs[0].model.refresh()
    assert combined_problems(alone.runs) == alone.runs[0].model.problems
    both = RunSet([tmp_path / "bad", tmp_path / "good"])
    for run in both.runs:
        run.model.refresh()
    problems = combined_problems(both.runs)
    assert len(problems) == len(alone.runs[0].model.problems) > 0
    assert all(problem.path.startswith("bad/") for problem in problems)


def test_short_names_keep_what_tells_the_runs_apart() -> None:
    assert short_names(["a/ocms_metrics", "b/ocms_metrics"]) == ["a", "b"]
    # The recorder's default directory name says nothing, shared or not.
    assert short_names(["a/ocms_metrics", "b/metrics"]) == ["a", "b/metrics"]
    assert short_names(["hf/out_dict/ocms_metrics", "lightning/out/ocms_metrics"]) == [
        "hf/out_dict",
        "lightning/out",
    ]
    # Shared path components at both ends, then shared words of long names, go.
    assert short_names(
        ["sweep/lr_1e-4_seed0_bs512/ocms_metrics", "sweep/lr_3e-4_seed0_bs512/ocms_metrics"]
    ) == ["lr_1e-4", "lr_3e-4"]
    long_names = [f"exp_2026_12_04_vla_pretrain_run{i:02d}_final/ocms_metrics" for i in range(32)]
    assert short_names(long_names) == [f"run{i:02d}" for i in range(32)]
    # Short names stay whole; no word is cut in two; nothing becomes empty or equal.
    assert short_names(["run_1/ocms_metrics", "run_2/ocms_metrics"]) == ["run_1", "run_2"]
    assert short_names(["x/run_a_long_suffix", "x/run_b_long_suffix"]) == ["run_a", "run_b"]
    assert short_names(["same_long_name_here", "same_long_name_here_2"]) == ["here", "here_2"]
    assert short_names(["x/a_long_name", "y/a_long_name"]) == ["x", "y"]
    assert short_names(["run_1/ocms_metrics"]) == ["run_1/ocms_metrics"]
    assert short_names(["a", "a"]) == ["a", "a"]
