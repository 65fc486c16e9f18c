"""Hostile metric directories: the checker and the dashboard answer each one within a time
and memory cap, never block on a FIFO or a device, never open a file outside the
directory, and show names from files literally.

Caps (measured on 2 shared cores, then given head-room for a loaded CI machine; this module
prints the worst figure of each beside its cap when it is done, docs/reliability.md quotes them):
- check_directory: CHECK_SECONDS per case and CHECK_MEMORY_MB of peak RSS above the RSS
  before it;
- the dashboard: DASHBOARD_SECONDS until everything is read and shown, KEY_SECONDS for a
  key press to be handled after that, and DASHBOARD_MEMORY_MB of peak RSS.
Peak RSS is Linux's VmHWM, reset before each case through /proc/self/clear_refs.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from app_support import screen_text
from ocms_recorder import MAX_SERIES_PER_CHART
from reliability_support import cap_report, measured_against_cap, peak_rss_kib, reset_peak_rss
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ocms_tui.follow.checker import CheckResult, check_directory
from ocms_tui.follow.model import MAX_DIRECTORY_ENTRIES
from ocms_tui.format.problems import Rule
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel

# The values of these runs (reliability_support.value_of) jump across 13 orders of
# magnitude from step to step by design: spikes by any measure. These tests are about the
# files, so they read them without the curve health checks (health=False, --no-health).
CHECK_SECONDS = 60.0
CHECK_MEMORY_MB = 192
DASHBOARD_SECONDS = 60.0
KEY_SECONDS = 5.0
DASHBOARD_MEMORY_MB = 192
LONG_LINE_BYTES = 200 * 1024 * 1024
SPARSE_BYTES = 4 * 1024**3
MARKUP = "[bold red]x[/]"
ESCAPES = "\x1b[2J\x1b[Hboom"  # clear the screen, cursor home
HYPERLINK = "\x1b]8;;http://example.invalid\x1b\\link"
SIZE = (120, 40)


def write_layout(
    directory: Path, charts: dict[str, list[str]], files: dict[str, str] | None = None
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    layout = {
        "version": 1,
        "charts": [
            {
                "name": name,
                "file": (files or {}).get(name, f"{name}.csv"),
                "x_axis": "step",
                "y_axis": y_axis,
            }
            for name, y_axis in charts.items()
        ],
    }
    (directory / "metrics.json").write_text(json.dumps(layout), encoding="utf-8")


# -- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    build: Callable[[Path, Path], None]  # (the metrics directory, a directory outside it)
    expect: Callable[[CheckResult], None]  # what the checker must say
    shows: tuple[str, ...] = ()  # text the dashboard must show


def rules(result: CheckResult) -> list[tuple[str, str, int | None]]:
    return [(p.rule.value, p.path, p.line) for p in result.problems]


def build_long_line(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"]})
    with (directory / "loss.csv").open("wb") as csv:
        csv.write(b"0,0.5\n1,")
        block = b"9" * (1024 * 1024)
        for _ in range(LONG_LINE_BYTES // len(block)):
            csv.write(block)
        csv.write(b"\n2,0.25\n")


def expect_long_line(result: CheckResult) -> None:
    assert rules(result) == [("line-too-long", "loss.csv", 2)]
    assert [(c.rows, c.last_step) for c in result.charts] == [(2, 2)]


def build_wide_rows(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss", "eval_loss"]})
    row = b",".join([b"0.5"] * 100_000)
    (directory / "loss.csv").write_bytes(b"".join(b"%d,%s\n" % (step, row) for step in range(5)))


def expect_wide_rows(result: CheckResult) -> None:
    assert rules(result) == [("row-width", "loss.csv", line) for line in range(1, 6)]
    assert "100001 fields, expected 3" in result.problems[0].message


def build_many_series(directory: Path, outside: Path) -> None:
    series = [f"s{index}" for index in range(100_000)]
    write_layout(directory, {"loss": series})
    row = b",".join([b"0.5"] * len(series))
    (directory / "loss.csv").write_bytes(b"".join(b"%d,%s\n" % (step, row) for step in range(5)))


def expect_many_series(result: CheckResult) -> None:
    assert rules(result) == [("bad-schema", "metrics.json", 1)]
    assert f"at most {MAX_SERIES_PER_CHART:,}" in result.problems[0].message
    assert result.charts == ()


def build_sparse(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"]})
    with (directory / "loss.csv").open("wb") as csv:
        csv.write(b"0,0.5\n1,0.25\n")
        csv.truncate(SPARSE_BYTES)  # a hole: reads as 4 GB of NUL bytes, costs no disk
        csv.seek(0, os.SEEK_END)
        csv.write(b"\n2,0.125\n")


def expect_sparse(result: CheckResult) -> None:
    assert rules(result) == [("line-too-long", "loss.csv", 3)]
    assert [(c.rows, c.last_step) for c in result.charts] == [(3, 2)]


def build_sparse_metrics_json(directory: Path, outside: Path) -> None:
    directory.mkdir()
    with (directory / "metrics.json").open("wb") as document:
        document.write(b'{"version": 1, "charts": []}')
        document.truncate(SPARSE_BYTES)


def expect_sparse_metrics_json(result: CheckResult) -> None:
    assert rules(result) == [("bad-schema", "metrics.json", None)]
    assert "4,294,967,296 bytes" in result.problems[0].message


def build_deep_json(directory: Path, outside: Path) -> None:
    directory.mkdir()
    (directory / "metrics.json").write_text("[" * 200_000 + "]" * 200_000)


def expect_invalid_json(result: CheckResult) -> None:
    assert [rule for rule, _, _ in rules(result)] == ["invalid-json"]


def build_fifos(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"], "grad_norm": ["grad_norm"]})
    os.mkfifo(directory / "loss.csv")  # no writer will ever open it
    (directory / "grad_norm.csv").write_bytes(b"0,1.5\n")


def expect_fifos(result: CheckResult) -> None:
    assert rules(result) == [("not-a-file", "loss.csv", None)]
    assert [(c.name, c.rows) for c in result.charts] == [("loss", 0), ("grad_norm", 1)]


def build_fifo_metrics_json(directory: Path, outside: Path) -> None:
    directory.mkdir()
    os.mkfifo(directory / "metrics.json")


def expect_fifo_metrics_json(result: CheckResult) -> None:
    assert rules(result) == [("not-a-file", "metrics.json", None)]


def build_devices(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"], "grad_norm": ["grad_norm"]})
    (directory / "loss.csv").symlink_to("/dev/zero")  # endless bytes, outside the directory
    try:  # a device node inside it (root only): /dev/zero's numbers
        os.mknod(directory / "grad_norm.csv", stat.S_IFCHR | 0o644, os.makedev(1, 5))
    except PermissionError:
        os.mkfifo(directory / "grad_norm.csv")


def expect_devices(result: CheckResult) -> None:
    assert rules(result) == [
        ("not-a-file", "grad_norm.csv", None),
        ("unsafe-path", "loss.csv", None),
    ]


def build_symlink_loops(directory: Path, outside: Path) -> None:
    directory.mkdir()
    (directory / "metrics.json").symlink_to(directory / "metrics.json")
    (directory / "a.csv").symlink_to(directory / "b.csv")
    (directory / "b.csv").symlink_to(directory / "a.csv")


def expect_symlink_loops(result: CheckResult) -> None:
    found = rules(result)
    assert ("not-a-file", "metrics.json", None) in found
    assert {rule for rule, _, _ in found} <= {"not-a-file", "orphan-csv"}


def build_symlinks_out(directory: Path, outside: Path) -> None:
    directory.mkdir()
    write_layout(outside, {"loss": ["loss"], "grad_norm": ["grad_norm"]})
    (outside / "loss.csv").write_bytes(b"0,42\n")
    (outside / "grad_norm.csv").write_bytes(b"0,43\n")
    (directory / "metrics.json").symlink_to(outside / "metrics.json")


def expect_symlinks_out(result: CheckResult) -> None:
    assert rules(result) == [("unsafe-path", "metrics.json", None)]


def build_csv_symlinks_out(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"], "grad_norm": ["grad_norm"]})
    (outside / "secret.csv").write_bytes(b"0,42\n")
    (directory / "loss.csv").symlink_to(outside / "secret.csv")
    (directory / "grad_norm.csv").symlink_to(Path("..") / outside.name / "secret.csv")
    (directory / "orphan.csv").symlink_to(outside / "secret.csv")


def expect_csv_symlinks_out(result: CheckResult) -> None:
    found = rules(result)
    assert ("unsafe-path", "loss.csv", None) in found
    assert ("unsafe-path", "grad_norm.csv", None) in found
    assert all(chart.rows == 0 for chart in result.charts)


def build_invalid_utf8(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_bytes(b"0,0.5\n1,\xff\xfe\n2,0.25\n")
    (directory / os.fsdecode(b"\xff\xfe\x1b[31m.csv")).write_bytes(b"0,1\n")


def expect_invalid_utf8(result: CheckResult) -> None:
    found = rules(result)
    assert ("bad-value", "loss.csv", 2) in found
    assert [rule for rule, _, _ in found] == ["bad-value", "orphan-csv"]
    assert result.charts[0].rows == 3


def build_invalid_utf8_json(directory: Path, outside: Path) -> None:
    directory.mkdir()
    (directory / "metrics.json").write_bytes(b'{"version": 1, "charts": [{"name": "\xff"}]}')


def build_markup_names(directory: Path, outside: Path) -> None:
    write_layout(
        directory,
        {MARKUP: [ESCAPES, HYPERLINK, "[link=file:///etc/passwd]click[/link]", "new\nline"]},
        files={MARKUP: "markup.csv"},
    )
    (directory / "markup.csv").write_bytes(b"0,1,2,3,4\n1,2,3,4,5\n")


def expect_markup_names(result: CheckResult) -> None:
    found = rules(result)
    assert ("bad-chart-name", "metrics.json", 1) in found
    assert sum(rule == "bad-y-axis-name" for rule, _, _ in found) == 4
    assert [(c.name, c.rows) for c in result.charts] == [(MARKUP, 2)]


def build_many_entries(directory: Path, outside: Path) -> None:
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_bytes(b"0,1.0\n")
    for index in range(2 * MAX_DIRECTORY_ENTRIES):  # more than the model looks at
        (directory / f"stray{index}.csv").touch()


def expect_many_entries(result: CheckResult) -> None:
    orphans = [p for p in result.problems if p.rule is Rule.ORPHAN_CSV]
    assert 0 < len(orphans) <= MAX_DIRECTORY_ENTRIES and len(result.problems) == len(orphans)


CASES: dict[str, Case] = {
    "line-of-200-MB": Case(build_long_line, expect_long_line, ("line-too-long", "step 2")),
    "rows-of-100000-columns": Case(build_wide_rows, expect_wide_rows, ("row-width",)),
    "chart-of-100000-series": Case(build_many_series, expect_many_series, ("bad-schema",)),
    "sparse-4-GB-csv": Case(build_sparse, expect_sparse, ("line-too-long", "step 2")),
    "sparse-4-GB-metrics-json": Case(build_sparse_metrics_json, expect_sparse_metrics_json),
    "deeply-nested-json": Case(build_deep_json, expect_invalid_json, ("invalid-json",)),
    "fifo-csv": Case(build_fifos, expect_fifos, ("not-a-file", "grad_norm")),
    "fifo-metrics-json": Case(build_fifo_metrics_json, expect_fifo_metrics_json),
    "devices": Case(build_devices, expect_devices, ("unsafe-path", "not-a-file")),
    "symlink-loops": Case(build_symlink_loops, expect_symlink_loops, ("not-a-file",)),
    "metrics-json-symlinked-out": Case(build_symlinks_out, expect_symlinks_out),
    "csvs-symlinked-out": Case(build_csv_symlinks_out, expect_csv_symlinks_out),
    "invalid-utf-8": Case(build_invalid_utf8, expect_invalid_utf8, ("bad-value", "orphan-csv")),
    "invalid-utf-8-json": Case(build_invalid_utf8_json, expect_invalid_json),
    "markup-and-escapes": Case(build_markup_names, expect_markup_names, (MARKUP, "␛[2J␛[Hboom")),
    "20000-entries": Case(build_many_entries, expect_many_entries, ("orphan-csv",)),
}


@dataclass(frozen=True)
class Built:
    directory: Path
    outside: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Built]]:
    root = tmp_path_factory.mktemp("hostile")
    cases = {}
    for name, case in CASES.items():
        directory, outside = root / name / "run", root / name / "outside"
        outside.mkdir(parents=True)
        case.build(directory, outside)
        cases[name] = Built(directory, outside)
    yield cases
    (cases["line-of-200-MB"].directory / "loss.csv").unlink()  # the one file of real bytes


class OpenedOutside(FileSystemEventHandler):
    """inotify on the directory outside: every file anyone opens there."""

    BARRIER = ".barrier"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.opened: list[str] = []
        self._barrier_seen = threading.Event()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type == "opened" and not event.is_directory:
            path = os.fsdecode(event.src_path)
            if Path(path).name == self.BARRIER:
                self._barrier_seen.set()
            else:
                self.opened.append(path)

    def wait_for_earlier_events(self) -> None:
        """Open a file here and wait until that is seen: inotify delivers in order, so every
        open before it has been seen too."""
        self._barrier_seen.clear()
        (self.directory / self.BARRIER).touch()
        (self.directory / self.BARRIER).read_bytes()
        assert self._barrier_seen.wait(30), "inotify delivered nothing for 30 s"


@pytest.fixture
def watch_outside() -> Iterator[Callable[[Path], OpenedOutside]]:
    observer = Observer()
    observer.start()

    def watch(directory: Path) -> OpenedOutside:
        handler = OpenedOutside(directory)
        observer.schedule(handler, str(directory))
        return handler

    yield watch
    observer.stop()
    observer.join()


@pytest.fixture(scope="module", autouse=True)
def print_figures_against_caps(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the module: the worst figure of each cap, on the terminal even when output is
    captured (CI's log shows them; docs/reliability.md quotes them)."""
    yield
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    lines = cap_report()
    if reporter is None or capture is None or not lines:
        return
    with capture.global_and_fixture_disabled():
        reporter.write("\n")  # off the line of progress dots
        reporter.write_sep("-", "measured against the caps (docs/reliability.md)")
        for line in lines:
            reporter.write_line(line)


def within(seconds: float, work: Callable[[], object]) -> tuple[object, float]:
    """Run `work` on a thread; fail (instead of hanging the suite) if it takes longer."""
    outcome: list[object] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"no answer within {seconds:.0f} s"
    return outcome[0], time.monotonic() - started


# -- the checker ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_the_checker_answers_within_its_caps(
    name: str, built: dict[str, Built], watch_outside: Callable[[Path], OpenedOutside]
) -> None:
    case = built[name]
    opened = watch_outside(case.outside)
    before = reset_peak_rss()
    result, seconds = within(CHECK_SECONDS, lambda: check_directory(case.directory, health=False))
    grown_mb = (peak_rss_kib() - before) / 1024
    assert isinstance(result, CheckResult)
    CASES[name].expect(result)
    assert grown_mb < CHECK_MEMORY_MB, f"{grown_mb:.0f} MB"
    opened.wait_for_earlier_events()
    assert opened.opened == [], "the checker opened a file outside the directory"
    print(f"\n{name}: check {seconds:.2f} s, +{grown_mb:.0f} MB peak RSS")
    measured_against_cap("--check time", name, seconds, CHECK_SECONDS, "s")
    measured_against_cap("--check peak RSS growth", name, grown_mb, CHECK_MEMORY_MB, "MB")


# Each variant is a `--check` process (0.8-1.6 s of CPU): the quick suite runs two, an
# escape-laden name on an ASCII terminal and invalid bytes in GitHub's format; the slow
# suite runs every name, encoding and format.
QUICK_OUTPUTS = {("markup-and-escapes", "ascii", "text"), ("invalid-utf-8", "utf-8", "github")}


@pytest.mark.parametrize(
    ("name", "encoding", "output_format"),
    [
        pytest.param(
            name,
            encoding,
            output_format,
            id=f"{name}-{encoding}-{output_format}",
            marks=() if (name, encoding, output_format) in QUICK_OUTPUTS else pytest.mark.slow,
        )
        for output_format in ("text", "github", "json")
        for encoding in ("utf-8", "ascii")
        for name in ("markup-and-escapes", "invalid-utf-8")
    ],
)
def test_check_output_is_printable_and_never_a_traceback(
    name: str, built: dict[str, Built], output_format: str, encoding: str
) -> None:
    environment = {**os.environ, "PYTHONIOENCODING": encoding, "NO_COLOR": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocms_tui",
            "--check",
            "--format",
            output_format,
            str(built[name].directory),
        ],
        capture_output=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    assert result.stderr == b""
    output = result.stdout.decode("ascii" if encoding == "ascii" else "utf-8")  # strict
    assert "\x1b" not in output and "\u202e" not in output
    if output_format == "json":
        json.loads(output)
    else:
        assert all(line.count("::") <= 2 for line in output.splitlines())  # one per line
    if name == "invalid-utf-8" and output_format != "json":
        assert "\\xff\\xfe\\x1b[31m.csv" in output


# -- the dashboard --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
async def test_the_dashboard_answers_within_its_caps(
    name: str, built: dict[str, Built], watch_outside: Callable[[Path], OpenedOutside]
) -> None:
    case = built[name]
    opened = watch_outside(case.outside)
    before = reset_peak_rss()
    app = OcmsApp(case.directory)
    started = time.monotonic()
    async with app.run_test(size=SIZE) as pilot:
        await app.settle(timeout=DASHBOARD_SECONDS)
        loaded = time.monotonic() - started
        assert app.idle, f"still loading after {loaded:.0f} s"
        pressed = time.monotonic()
        await pilot.press("p")  # hide the problems pane, then show it again
        await pilot.press("p")
        await pilot.pause()
        key = time.monotonic() - pressed
        screen = screen_text(app)
    grown_mb = (peak_rss_kib() - before) / 1024
    assert key < KEY_SECONDS, f"a key press took {key:.1f} s"
    assert grown_mb < DASHBOARD_MEMORY_MB, f"{grown_mb:.0f} MB"
    for text in CASES[name].shows:
        assert text in screen, f"{text!r} not on the screen:\n{screen}"
    assert "\x1b" not in screen
    opened.wait_for_earlier_events()
    assert opened.opened == [], "the dashboard opened a file outside the directory"
    print(f"\n{name}: dashboard loaded in {loaded:.2f} s, key {key:.2f} s, +{grown_mb:.0f} MB")
    measured_against_cap("dashboard load time", name, loaded, DASHBOARD_SECONDS, "s")
    measured_against_cap("dashboard key press", name, key, KEY_SECONDS, "s")
    measured_against_cap("dashboard peak RSS growth", name, grown_mb, DASHBOARD_MEMORY_MB, "MB")


async def test_bidirectional_controls_in_names_are_shown_not_obeyed(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["a\u202eevil", "b\u2066c"]})
    (tmp_path / "loss.csv").write_bytes(b"0,1,2\n")
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await pilot.pause()
        screen = screen_text(app)
    assert "evil" in screen
    assert "\u202e" not in screen and "\u2066" not in screen


async def test_a_chart_with_the_most_series_allowed_keeps_the_dashboard_responsive(
    tmp_path: Path,
) -> None:
    series = [f"s{index}" for index in range(MAX_SERIES_PER_CHART)]
    write_layout(tmp_path, {"loss": series})
    row = ",".join(f"{index * 0.001:.3f}" for index in range(len(series)))
    (tmp_path / "loss.csv").write_text("".join(f"{step},{row}\n" for step in range(20)))
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle(timeout=KEY_SECONDS)
        assert app.idle
        pressed = time.monotonic()
        await pilot.press("p")
        await pilot.pause()
        assert time.monotonic() - pressed < KEY_SECONDS
        # Every series is drawn; the legend lists what fits and sums up the rest.
        panel = app.query_one(ChartPanel)
        assert len(panel.lines) == MAX_SERIES_PER_CHART
        assert "more series" in screen_text(app)
