"""The recorder's sidecar `.ocms-recorder.json` (format.sidecar): dropped keys become
`dropped-metric` warnings; a missing sidecar is nothing, and a broken or hostile one is one
clear warning, never a crash or a hang. Live: the dashboard's model picks up its changes."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from ocms_tui.cli import main
from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.report import format_github, format_text
from ocms_tui.follow.watch import open_watcher
from ocms_tui.format.problems import Rule
from ocms_tui.format.sidecar import (
    MAX_DROPPED_LISTED,
    MAX_SIDECAR_BYTES,
    SIDECAR_NAME,
    parse_sidecar,
    read_sidecar,
    suggested_group,
)

DATA = Path(__file__).parent / "data"
DEFAULT_GROUPS_TEXT = [
    {"chart": "loss", "accepts": "k == 'loss' or k.endswith('_loss')"},
    {"chart": "learning_rate", "accepts": "k == 'learning_rate' or k.startswith('learning_rate/')"},
    {"chart": "epoch", "accepts": "k == 'epoch'"},
    {"chart": "timing", "accepts": "k.startswith('timing/')"},
    {"chart": "eval_score", "accepts": "k in ('mse_score', 'accuracy', 'mIoU')"},
    {"chart": "grad_norm", "accepts": "k == 'grad_norm'"},
]


def sidecar_document(*dropped: dict[str, object]) -> dict[str, object]:
    return {
        "format": "ocms-recorder",
        "version": 1,
        "recorder": "0.1.0",
        "chart_groups": DEFAULT_GROUPS_TEXT,
        "dropped": list(dropped),
    }


def dropped(key: str | None, reason: str = "no-chart-group", **fields: object) -> dict:
    return {"key": key, "reason": reason, "first_step": 0, "last_step": 9, "count": 10, **fields}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    shutil.copytree(DATA / "clean", directory)
    return directory


def write_sidecar(directory: Path, document: object) -> None:
    """Atomically, as the recorder writes it (temp file + rename)."""
    temporary = directory / (SIDECAR_NAME + ".tmp")
    temporary.write_text(json.dumps(document), encoding="utf-8")
    os.replace(temporary, directory / SIDECAR_NAME)


def dropped_problems(directory: Path) -> list[tuple[str | None, str]]:
    return [
        (p.series, p.message)
        for p in check_directory(directory).problems
        if p.rule is Rule.DROPPED_METRIC
    ]


# -- what the sidecar says -----------------------------------------------------------------


def test_no_sidecar_is_no_problem(run: Path) -> None:
    assert check_directory(run).problems == ()
    assert read_sidecar(run) is None


def test_the_issue_script_gets_one_warning_per_dropped_key_with_a_group_to_add(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A script logging loss, lr, f1, val/acc and tokens_per_sec gets one chart, loss.
    write_sidecar(
        run,
        sidecar_document(
            dropped("lr"), dropped("f1"), dropped("val/acc"), dropped("tokens_per_sec")
        ),
    )
    found = dict(dropped_problems(run))
    assert list(found) == ["lr", "f1", "val/acc", "tokens_per_sec"]
    assert found["lr"].endswith(
        "add to chart_groups: ('learning_rate', lambda k: k == 'learning_rate' or "
        "k.startswith('learning_rate/') or k in ('lr',))"
    )
    # Every key of one suggested chart is in the one group each of its warnings shows.
    group = (
        "('eval_score', lambda k: k in ('mse_score', 'accuracy', 'mIoU') or k in ('f1', 'val/acc'))"
    )
    assert found["f1"].endswith(group) and found["val/acc"].endswith(group)
    assert found["tokens_per_sec"].endswith(
        "('tokens_per_sec', lambda k: k in ('tokens_per_sec',))"
    )
    assert "logged 10 time(s) at steps 0-9" in found["lr"]
    # --check passes, --strict fails, and the text says which keys Octopus will not show.
    assert main(["--check", str(run)]) == 0
    text = capsys.readouterr().out
    assert "not written by the recorder: 'lr', 'f1', 'val/acc', 'tokens_per_sec'" in text
    assert main(["--check", str(run), "--strict"]) == 1
    capsys.readouterr()
    main(["--check", str(run), "--format", "json"])
    problems = json.loads(capsys.readouterr().out)["problems"]
    first = problems[0]
    assert (first["rule"], first["series"], first["step"], first["path"]) == (
        "dropped-metric",
        "lr",
        0,
        SIDECAR_NAME,
    )
    assert "chart" not in problems[0]


def test_each_reason_is_said_in_words(run: Path) -> None:
    write_sidecar(
        run,
        sidecar_document(
            dropped("note", "not-a-number", first_step=3, last_step=3, count=1),
            dropped("m999", "y-axis-cap"),
            dropped(None, "step-too-large", first_step=2**60, last_step=2**60, count=1),
            dropped("odd", "a-reason-from-the-future"),
        ),
    )
    messages = [message for _, message in dropped_problems(run)]
    assert messages == [
        "'note' was not written (its values are not numbers; logged 1 time(s) at step 3)",
        "'m999' was not written (the directory already holds the most y-axis names the "
        "recorder writes; logged 10 time(s) at steps 0-9)",
        f"1 row(s) were not written at step {2**60}: the step is above 2^53 - 1, the largest "
        "a web UI holds exactly",
        "'odd' was not written (the recorder gave no reason it knows; logged 10 time(s) at "
        "steps 0-9)",
    ]


def test_a_custom_group_with_a_conditional_is_kept_whole_in_the_suggestion() -> None:
    groups = [("learning_rate", "k.startswith('lr') if k else False")]
    assert suggested_group("learning_rate", ["lr"], groups) == (
        "('learning_rate', lambda k: (k.startswith('lr') if k else False) or k in ('lr',))"
    )


def test_thousands_of_dropped_keys_are_listed_up_to_a_cap(run: Path) -> None:
    write_sidecar(run, sidecar_document(*(dropped(f"k{index}") for index in range(5000))))
    problems = [p for p in check_directory(run).problems if p.rule is Rule.DROPPED_METRIC]
    assert len(problems) == MAX_DROPPED_LISTED + 1
    assert problems[-1].overflow
    assert problems[-1].message == f"{5000 - MAX_DROPPED_LISTED} more dropped key(s) not listed"


# -- broken and hostile sidecars ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"format": "ocms-recorder", "version": 1, "dropped": [', "not JSON"),
        (b"\xff\xfe not utf-8", "not JSON"),
        (b'{"format": "ocms-recorder", "version": NaN}', "NaN is not a JSON value"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"format": "something-else", "version": 1}', '"format" is not "ocms-recorder"'),
        (b'{"format": "ocms-recorder", "version": true}', '"version" is not a positive'),
        (b'{"format": "ocms-recorder", "version": 1, "dropped": {}}', '"dropped" is not a list'),
        (b"", "not JSON"),
    ],
    ids=[
        "truncated",
        "not-utf8",
        "nan",
        "deep",
        "list",
        "other-format",
        "bool-version",
        "dropped-dict",
        "empty",
    ],
)
def test_a_malformed_sidecar_is_one_clear_warning(run: Path, content: bytes, why: str) -> None:
    (run / SIDECAR_NAME).write_bytes(content)
    problems = check_directory(run).problems
    assert [(p.rule, p.path) for p in problems] == [(Rule.DROPPED_METRIC, SIDECAR_NAME)]
    assert problems[0].message.startswith("the recorder's record of dropped keys is not valid (")
    assert why in problems[0].message
    assert problems[0].message.endswith("which keys it did not write is unknown")


def test_entries_of_the_wrong_shape_are_skipped_and_the_rest_read() -> None:
    document = sidecar_document(
        "a string",
        ["a", "list"],
        {"key": 5, "reason": "no-chart-group"},  # a key that is not a name
        {"key": None, "reason": "no-chart-group"},
        {"key": "ok", "reason": "no-chart-group", "first_step": "0", "count": True},
    )
    document["chart_groups"] = [{"chart": 1, "accepts": "x"}, "loss", {"chart": "loss"}]
    sidecar, why = parse_sidecar(json.dumps(document).encode())
    assert why == "" and sidecar is not None
    assert [(d.key, d.first_step, d.count) for d in sidecar.dropped] == [("ok", None, None)]
    assert sidecar.chart_groups == ()


def test_hostile_key_names_are_escaped_everywhere(run: Path) -> None:
    write_sidecar(
        run,
        sidecar_document(
            dropped("\x1b[2J\x1b]0;pwned\x07"), dropped("[bold red]x[/]"), dropped("\u202eevil")
        ),
    )
    result = check_directory(run)
    for output in (format_text(result, color=False), format_github(result)):
        assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert "'[bold red]x[/]'" in format_text(result, color=False)


def test_a_huge_key_name_is_cut_for_display(run: Path) -> None:
    write_sidecar(run, sidecar_document(dropped("x" * 100_000)))
    ((series, message),) = dropped_problems(run)
    assert len(message) < 1000 and "…" in message and len(series or "") <= 200


def test_a_fifo_sidecar_never_blocks(run: Path) -> None:
    os.mkfifo(run / SIDECAR_NAME)
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(check_directory(run)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert done, "the checker hung on a FIFO sidecar"
    (problem,) = done[0].problems  # type: ignore[attr-defined]
    assert "is not a regular file" in problem.message


def test_a_directory_in_its_place_is_a_warning(run: Path) -> None:
    (run / SIDECAR_NAME).mkdir()
    (problem,) = check_directory(run).problems
    assert problem.rule is Rule.DROPPED_METRIC and "not a regular file" in problem.message


def test_a_symlinked_sidecar_is_not_followed(run: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.json").write_text(json.dumps(sidecar_document(dropped("lr"))))
    (run / SIDECAR_NAME).symlink_to(tmp_path / "elsewhere.json")
    (problem,) = check_directory(run).problems
    assert "is a symbolic link (not followed)" in problem.message


def test_an_oversized_sidecar_is_not_read(run: Path) -> None:
    with (run / SIDECAR_NAME).open("wb") as sparse:
        sparse.truncate(MAX_SIDECAR_BYTES * 50)
    started = time.monotonic()
    (problem,) = check_directory(run).problems
    assert f"is larger than {MAX_SIDECAR_BYTES:,} bytes" in problem.message
    assert time.monotonic() - started < 5


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file without permissions")
def test_an_unreadable_sidecar_is_a_warning(run: Path) -> None:
    write_sidecar(run, sidecar_document(dropped("lr")))
    (run / SIDECAR_NAME).chmod(0)
    (problem,) = check_directory(run).problems
    assert "cannot be read: Permission denied" in problem.message


def test_other_rules_ignore_the_dot_file_and_its_temp_file(run: Path) -> None:
    write_sidecar(run, sidecar_document())
    (run / (SIDECAR_NAME + ".tmp-1234")).write_text("{")  # a writer's temp file, mid-write
    assert check_directory(run).problems == ()  # no orphan-csv, nothing else


# -- live ---------------------------------------------------------------------------------


def test_the_model_rereads_the_sidecar_only_when_it_changes(run: Path) -> None:
    model = RunModel(run, settle_seconds=0.0)
    model.refresh()
    assert model.problems == ()
    write_sidecar(run, sidecar_document(dropped("lr")))
    change = model.refresh(files=frozenset({"loss.csv"}))  # a watcher saw only the CSV
    assert model.problems == () and not change.problems
    change = model.refresh(files=frozenset({SIDECAR_NAME}))
    assert change.problems and [p.series for p in model.problems] == ["lr"]
    assert model.refresh(files=frozenset({SIDECAR_NAME})).problems is False  # unchanged
    (run / SIDECAR_NAME).unlink()
    model.refresh(files=frozenset({SIDECAR_NAME}))
    assert model.problems == ()


def test_a_real_watcher_sees_the_sidecar_replaced_and_the_model_follows(run: Path) -> None:
    model = RunModel(run, settle_seconds=0.0)
    model.refresh()
    watcher = open_watcher(run)  # started
    try:
        for keys in (["lr"], ["lr", "f1"]):
            write_sidecar(run, sidecar_document(*(dropped(key) for key in keys)))
            deadline = time.monotonic() + 20
            seen: set[str] = set()
            while SIDECAR_NAME not in seen and time.monotonic() < deadline:
                watcher.dirty.wait(0.5)
                seen |= watcher.take()
            assert SIDECAR_NAME in seen
            model.refresh(files=frozenset(seen))
            assert [p.series for p in model.problems] == keys
    finally:
        watcher.stop()


def test_the_suggested_group_pasted_into_chart_groups_charts_the_key(
    run: Path, tmp_path: Path
) -> None:
    from ocms_recorder import DEFAULT_CHART_GROUPS, OcmsRecorder

    write_sidecar(run, sidecar_document(dropped("lr"), dropped("f1"), dropped("tokens_per_sec")))
    groups = dict(DEFAULT_CHART_GROUPS)
    for _, message in dropped_problems(run):
        code = message.split("add to chart_groups: ", 1)[1]
        chart, accepts = eval(code)  # the text a user pastes
        groups[chart] = accepts
    assert len(groups) == 7  # one new chart: more than ocms shows, so the user merges one
    groups.pop("grad_norm")
    metrics = tmp_path / "metrics"
    with OcmsRecorder(log_dir=str(metrics), chart_groups=list(groups.items())) as recorder:
        recorder.log(step=1, metrics={"loss": 1.0, "lr": 1e-4, "f1": 0.5, "tokens_per_sec": 9.0})
    layout = json.loads((metrics / "metrics.json").read_text())
    placed = {y: chart["name"] for chart in layout["charts"] for y in chart["y_axis"]}
    assert placed == {
        "loss": "loss",
        "lr": "learning_rate",
        "f1": "eval_score",
        "tokens_per_sec": "tokens_per_sec",
    }


def test_a_run_whose_every_key_was_dropped_fails_and_says_why(tmp_path: Path) -> None:
    # No group took any key: the recorder wrote no metrics.json, only its record.
    write_sidecar(tmp_path, sidecar_document(dropped("lr"), dropped("f1")))
    result = check_directory(tmp_path)
    assert [(p.rule, p.series) for p in result.problems] == [
        (Rule.DROPPED_METRIC, "lr"),
        (Rule.DROPPED_METRIC, "f1"),
        (Rule.MISSING_METRICS_JSON, None),
    ]
    assert result.errors == 1
    text = format_text(result, color=False)
    assert "Octopus will show no chart\n  not written by the recorder: 'lr', 'f1'\n" in text
