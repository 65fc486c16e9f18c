"""Deterministic benchmark data: training-like runs as the recorder writes them.

Generated data is kept between benchmark runs in a fixture directory (FIXTURES, or
`--fixtures DIR`): a run of 6 x 1,000,000 rows or a sweep of 2,000 runs is written once and
then only read, so a benchmark measures the product and not its own data generation. Each
fixture's name carries a fingerprint of the code that made it (this file and the module of
its builder), so changed generation code makes new fixtures; fixtures unused for
FIXTURE_DAYS days are removed. Benchmarks that change files work on copies in the run's
temporary directory, which is removed at the end.

metrics.json comes from the real `OcmsRecorder` (one logged step lays the charts out); the
million-row CSVs are then written in bulk by polars, because formatting them row by row in
Python takes longer than every benchmark together. polars prints a float exactly as
`repr(float)` does within [1e-4, 1e16), where every generated value lies; `write_chart_csv`
checks the first rows against `format_rows` (the recorder's formatting) to prove it.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from ocms_recorder import METRICS_JSON, OcmsRecorder, chart_file_name
from page_cache import read_into_cache

# Six charts of four series, like a VLA training run; eval_loss is mostly gaps (one value
# every EVAL_EVERY steps), as in a real loss chart.
RUN_CHARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loss", ("loss", "vlm_loss", "action_dit_loss", "eval_loss")),
    ("learning_rate", ("learning_rate", "lr_vision_tower", "lr_projector", "lr_action_head")),
    ("timing", ("data", "model", "optimizer", "total")),
    ("eval_score", ("mse_score", "accuracy", "mIoU", "success_rate")),
    ("grad_norm", ("grad_norm", "grad_norm_vision", "grad_norm_llm", "grad_norm_action")),
    ("throughput", ("samples_per_s", "tokens_per_s", "gpu_memory_gb", "gpu_util")),
)
LOSS_CHART = RUN_CHARTS[0]
EVAL_EVERY = 100
_CHECKED_ROWS = 2_000


@dataclass(frozen=True)
class ChartRows:
    steps: np.ndarray
    columns: tuple[np.ndarray, ...]  # NaN = gap (an empty field)


# Noise of each series of a chart, as a fraction of its value: from a clean curve to the 30%
# of a per-batch loss. Drawing costs most on noisy data (every pixel column spans rows).
SERIES_NOISE = (0.0, 0.1, 0.3, 0.03)


def chart_rows(chart_index: int, rows: int, seed: int = 0, first_step: int = 0) -> ChartRows:
    """Training-like curves: a decay plus scale per series with 0-30% noise (SERIES_NOISE);
    in every other chart the last series is a random walk instead. All values lie within
    [1e-4, 1e16) so that they print as repr() would print them."""
    rng = np.random.default_rng(seed * 1000 + chart_index)
    steps = np.arange(first_step, first_step + rows, dtype=np.int64)
    decay = np.exp(-steps / 200_000.0)
    columns = []
    for series, noise in enumerate(SERIES_NOISE):
        level = 0.05 + 0.3 * series + chart_index
        curve = level + (2.0 + series) * decay
        if series == 3 and chart_index % 2 == 1:
            curve = level + np.abs(np.cumsum(rng.standard_normal(rows)) * 0.01)
        else:
            curve = curve * (1.0 + noise * rng.standard_normal(rows))
        curve = np.abs(curve) + 1e-3
        columns.append(curve)
    if chart_index == 0:  # eval_loss: a value only on eval steps
        columns[3] = np.where(steps % EVAL_EVERY == 0, columns[3], np.nan)
    return ChartRows(steps, tuple(columns))


def format_rows(rows: ChartRows) -> bytes:
    """The bytes the recorder writes for these rows (repr of each float, empty for a gap)."""
    lines = []
    for index, step in enumerate(rows.steps.tolist()):
        fields = [str(step)]
        for column in rows.columns:
            value = float(column[index])
            fields.append("" if value != value else repr(value))
        lines.append(",".join(fields) + "\n")
    return "".join(lines).encode()


def write_chart_csv(path: Path, rows: ChartRows, checked: bool = True) -> None:
    """`checked`: compare the first rows with the recorder's formatting (once per kind of
    data is enough: a sweep checks its first run)."""
    frame = pl.DataFrame(
        {"step": rows.steps, **{f"v{i}": column for i, column in enumerate(rows.columns)}}
    ).with_columns(pl.col(f"v{i}").fill_nan(None) for i in range(len(rows.columns)))
    frame.write_csv(path, include_header=False)
    if not checked:
        return
    head = ChartRows(rows.steps[:_CHECKED_ROWS], tuple(c[:_CHECKED_ROWS] for c in rows.columns))
    expected = format_rows(head)
    with path.open("rb") as written:
        if written.read(len(expected)) != expected:
            raise AssertionError(f"{path}: bulk-written rows differ from the recorder's format")


def write_layout(directory: Path, charts: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
    """metrics.json exactly as OcmsRecorder writes it for these charts and series."""
    groups = [(name, lambda key, names=frozenset(y_axis): key in names) for name, y_axis in charts]
    recorder = OcmsRecorder(log_dir=str(directory), chart_groups=groups)
    recorder.log(step=0, metrics={key: 1.0 for _, y_axis in charts for key in y_axis})
    recorder.finish()


def write_run(
    directory: Path,
    rows: int,
    charts: tuple[tuple[str, tuple[str, ...]], ...] = RUN_CHARTS,
    seed: int = 0,
    layout_from: Path | None = None,
) -> Path:
    """A finished run: metrics.json plus one `rows`-row CSV per chart. `layout_from`: a run
    of the same charts whose metrics.json is copied (and whose rows were checked)."""
    directory.mkdir(parents=True, exist_ok=True)
    if layout_from is None:
        write_layout(directory, charts)
    else:
        shutil.copyfile(layout_from / METRICS_JSON, directory / METRICS_JSON)
    for name, _ in charts:
        index = next(i for i, (known, _) in enumerate(RUN_CHARTS) if known == name)
        write_chart_csv(
            directory / chart_file_name(name),
            chart_rows(index, rows, seed),
            checked=layout_from is None,
        )
    return directory


def write_sweep(root: Path, runs: int, rows: int) -> Path:
    """`runs` finished runs named like a sweep (`lr_<i>_seed<j>`), each of every chart, each
    with its own values (seeded by its index)."""
    first: Path | None = None
    for index in range(runs):
        made = write_run(
            root / f"lr_{index % 50}_seed{index // 50}", rows, seed=index, layout_from=first
        )
        first = first or made
    return root


def write_tensorboard(directory: Path, rows: ChartRows, tags: tuple[str, ...]) -> int:
    """The same values as TensorBoard scalars (gaps are not logged); returns the count."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logdir=str(directory), flush_secs=3600)
    add_scalar = writer.add_scalar
    written = 0
    for index, step in enumerate(rows.steps.tolist()):
        for tag, column in zip(tags, rows.columns, strict=True):
            value = float(column[index])
            if value == value:
                add_scalar(tag, value, step)
                written += 1
    writer.close()
    return written


FIXTURES = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ocms-tui-bench"
FIXTURE_DAYS = 7
_STAGING_PREFIX = ".making-"
_STAGING_HOURS = 6  # a fixture still being made after this long was abandoned (a kill -9)


def _fingerprint(made_by: tuple[Callable[..., object], ...]) -> str:
    """The code that decides a fixture's bytes: this file and the functions outside it that
    write the fixture."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for function in made_by:
        digest.update(inspect.getsource(function).encode())
    return digest.hexdigest()[:12]


def prune_fixtures(directory: Path, now: float | None = None) -> None:
    """Remove fixtures unused for FIXTURE_DAYS and abandoned half-made ones."""
    now = time.time() if now is None else now
    for entry in directory.iterdir() if directory.is_dir() else ():
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        limit = (
            _STAGING_HOURS * 3600
            if entry.name.startswith(_STAGING_PREFIX)
            else FIXTURE_DAYS * 86400
        )
        if age > limit:
            shutil.rmtree(entry, ignore_errors=True)


@dataclass
class Workspace:
    """Where a benchmark run keeps its data: generated runs in `fixtures` (kept between
    benchmark runs; None: inside `root`, removed with it) and copies and scratch files in
    `root`, a temporary directory removed by close()."""

    fixtures: Path | None = None
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ocms-bench-")))
    _in_cache: set[Path] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.fixtures is None:
            self.fixtures = self.root / "fixtures"
        else:
            prune_fixtures(self.fixtures)

    def fixture(
        self,
        name: str,
        build: Callable[[Path], object],
        made_by: tuple[Callable[..., object], ...] = (),
    ) -> Path:
        """The directory `build(directory)` fills, made once for every benchmark run that
        shares these fixtures. `name` must say every parameter of the data, and `made_by`
        name the functions outside this file that write it (their code is part of the
        fixture's fingerprint). It is built beside its final place and renamed there, so a
        fixture is either whole or absent, also with two benchmarks making it at once.
        Its files are in the page cache, as those of a run just written (read once per
        benchmark run if it was made earlier)."""
        assert self.fixtures is not None
        target = self.fixtures / f"{name}-{_fingerprint(made_by)}"
        if target.is_dir():
            os.utime(target)  # in use: not pruned
            if target not in self._in_cache:
                read_into_cache(target)
                self._in_cache.add(target)
            return target
        self.fixtures.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{name}-", dir=self.fixtures))
        try:
            build(staging)
            try:
                staging.rename(target)
            except OSError:
                if not target.is_dir():
                    raise  # not another benchmark that made it first: a real failure
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone when renamed
        self._in_cache.add(target)
        return target

    def run(self, rows: int, charts: int = len(RUN_CHARTS)) -> Path:
        """A finished run of `charts` charts of `rows` rows (the first chart is the loss chart)."""
        return self.fixture(
            f"run-{charts}x{rows}",
            lambda directory: write_run(directory, rows, RUN_CHARTS[:charts]),
        )

    def sweep(self, runs: int, rows: int) -> Path:
        """A sweep of `runs` finished runs of `rows` rows (write_sweep)."""
        return self.fixture(
            f"sweep-{runs}x{rows}", lambda directory: write_sweep(directory, runs, rows)
        )

    def copy(self, source: Path, name: str, linked: bool = False) -> Path:
        """A fresh copy of a generated run, for benchmarks that change files.

        `linked` makes hard links instead of copies (instant, no page cache churn): only for
        callers that replace a file they change (write a new one, then rename it over).
        """
        target = self.root / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, copy_function=_link_or_copy if linked else shutil.copy2)
        return target

    def scratch(self, name: str) -> Path:
        path = self.root / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # fixtures on another filesystem than the temporary directory
        shutil.copy2(source, target)


def file_size_mb(path: Path) -> float:
    return os.path.getsize(path) / 1e6
