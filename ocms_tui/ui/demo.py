"""Simulated training runs: for `ocms-tui --demo`, screenshots and tests.

`write_demo_run` writes a finished run through the real recorder, the same bytes for the
same arguments; `DemoTraining` writes one live, from a thread; `write_problem_run` writes,
by hand, a directory with one of many problems the checker knows. Only `run_demo` touches
the dashboard (and imports Textual, lazily).
"""

from __future__ import annotations

import math
import random
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType

from ocms_recorder import DEFAULT_SUBDIR, OcmsRecorder

DEFAULT_STEPS = 1000


def _significant(value: float, digits: int = 6) -> float:
    """Fewer digits than a double: readable CSVs, and the same text on every libm."""
    return float(f"{value:.{digits}g}")


class DemoCurves:
    """The metrics of a simulated vision-language-action run, step by step.

    Noise comes from one seeded stream, so calling `metrics(0)`, `metrics(1)`, ... in order
    gives the same values every time.
    """

    peak_learning_rate = 3e-4

    def __init__(self, steps: int = DEFAULT_STEPS, seed: int = 0, eval_every: int = 0) -> None:
        self.steps = max(1, steps)
        self.eval_every = eval_every if eval_every > 0 else max(1, self.steps // 20)
        self.warmup_steps = max(1, self.steps // 20)
        self.steps_per_epoch = max(1, self.steps // 5)
        self._random = random.Random(seed)

    def learning_rate(self, step: int) -> float:
        """Linear warm-up, then a cosine decay to nearly zero at the last step."""
        if step < self.warmup_steps:
            return self.peak_learning_rate * (step + 1) / self.warmup_steps
        decay_steps = max(1, self.steps - self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / decay_steps)
        floor = 1e-6
        return floor + (self.peak_learning_rate - floor) * 0.5 * (
            1.0 + math.cos(math.pi * progress)
        )

    def metrics(self, step: int) -> dict[str, float]:
        gauss, uniform = self._random.gauss, self._random.random
        progress = step / self.steps
        trend = 0.35 + 2.4 * math.exp(-5.0 * progress)
        spike = 1.6 if uniform() < 0.01 else 1.0  # the odd bad batch
        vlm_loss = trend * 0.55 * spike * (1.0 + gauss(0.0, 0.06))
        action_loss = trend * 0.45 * spike * (1.0 + gauss(0.0, 0.08))
        learning_rate = self.learning_rate(step)
        data_stall = 0.15 if uniform() < 0.02 else 0.0  # the loader falls behind now and then
        metrics = {
            "loss": _significant(vlm_loss + action_loss),
            "vlm_loss": _significant(vlm_loss),
            "action_dit_loss": _significant(action_loss),
            "learning_rate": _significant(learning_rate),
            "learning_rate/vision_tower": _significant(learning_rate * 0.1),
            "epoch": round(step / self.steps_per_epoch, 4),
            "timing/data": _significant(abs(0.021 + gauss(0.0, 0.003)) + data_stall),
            "timing/model": _significant(0.34 + abs(gauss(0.0, 0.015))),
            "grad_norm": _significant(
                (0.8 + 4.0 * math.exp(-8.0 * progress)) * spike * (1.0 + abs(gauss(0.0, 0.1)))
            ),
        }
        if step > 0 and step % self.eval_every == 0:
            # Evaluation is rare: eval_loss is the loss chart's mostly-gaps series.
            metrics["eval_loss"] = _significant(trend * 1.08 * (1.0 + gauss(0.0, 0.02)))
            accuracy = 0.93 - 0.8 * math.exp(-4.0 * progress) + gauss(0.0, 0.01)
            metrics["accuracy"] = _significant(min(1.0, max(0.0, accuracy)))
        return metrics


def write_demo_run(directory: str | Path, steps: int = DEFAULT_STEPS, seed: int = 0) -> None:
    """A finished run of `steps` steps in `directory` (new or empty), through the recorder."""
    path = Path(directory)
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} is not empty; the demo run needs a directory of its own")
    curves = DemoCurves(steps, seed)
    with OcmsRecorder(log_dir=str(path)) as recorder:
        for step in range(steps):
            recorder.log(step=step, metrics=curves.metrics(step))


class DemoTraining:
    """A simulated training in a thread, writing `rate_hz` steps per second through the real
    recorder until it reaches `steps` or stop() is called (3000 steps at 10 Hz: five minutes
    of a whole run's shape). `backfill` steps are written at once on start(), so a dashboard
    opened right after has curves to show."""

    def __init__(
        self,
        directory: str | Path,
        steps: int = 3000,
        rate_hz: float = 10.0,
        seed: int = 0,
        backfill: int = 0,
        eval_every: int = 50,
    ) -> None:
        if rate_hz <= 0:
            raise ValueError("rate_hz must be positive")
        self.directory = Path(directory)
        self.steps = steps
        self.rate_hz = rate_hz
        self.seed = seed
        self.backfill = min(backfill, steps)
        self.eval_every = eval_every
        self.steps_written = 0
        self._stop = threading.Event()
        self._backfilled = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread; return once the backfill is on disk."""
        if self._thread is not None:
            raise RuntimeError("a DemoTraining starts once")
        self._thread = threading.Thread(target=self._train, name="ocms-demo-training", daemon=True)
        self._thread.start()
        self._backfilled.wait(timeout=30.0)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the step in progress; the recorder's files are closed on return."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _train(self) -> None:
        curves = DemoCurves(self.steps, self.seed, self.eval_every)
        interval = 1.0 / self.rate_hz
        try:
            with OcmsRecorder(log_dir=str(self.directory)) as recorder:
                for step in range(self.backfill):
                    recorder.log(step=step, metrics=curves.metrics(step))
                    self.steps_written = step + 1
                self._backfilled.set()
                started = time.monotonic()
                for step in range(self.backfill, self.steps):
                    # Pace by a schedule, not by sleeps, so the rate holds under load.
                    due = started + (step - self.backfill) * interval
                    if self._stop.wait(max(0.0, due - time.monotonic())):
                        break
                    recorder.log(step=step, metrics=curves.metrics(step))
                    self.steps_written = step + 1
        finally:
            self._backfilled.set()

    def __enter__(self) -> DemoTraining:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def run_demo(poll: float | None = None) -> int:
    """`ocms-tui --demo`: a live simulated run in a temporary directory, in the dashboard."""
    from ocms_tui.widgets.keys import prefer_quick_escape

    prefer_quick_escape()
    from ocms_tui.ui.launch import run_dashboard  # Textual is imported here only

    with tempfile.TemporaryDirectory(prefix="ocms-demo-") as temporary:
        directory = Path(temporary) / DEFAULT_SUBDIR
        with DemoTraining(directory, backfill=300):
            return run_dashboard(directory, poll=poll)


# -- a directory full of problems, written by hand -------------------------------------------

MARKUP_NAME = "[bold red]x[/]"  # must show as these characters, never as red bold text

_PROBLEM_LAYOUT = """{
  "version": 1,
  "charts": [
    {"name": "loss", "file": "loss.csv", "x_axis": "step", "y_axis": ["loss", "eval loss"]},
    {"name": "learning_rate", "file": "learning_rate.csv", "x_axis": "step",
     "y_axis": ["learning_rate"]},
    {"name": "grad_norm", "file": "grad_norm.csv", "x_axis": "step", "y_axis": ["grad_norm"]},
    {"name": "markup", "file": "markup.csv", "x_axis": "step", "y_axis": ["%s"]}
  ]
}
"""


def _problem_loss_rows() -> list[str]:
    rows = []
    for step in range(40):
        eval_field = f"{2.0 - step * 0.03:.2f}" if step % 10 == 0 else ""
        rows.append(f"{step},{2.0 - step * 0.025:.3f},{eval_field}")
    rows[12] = "12,1.700,1.750,0.5"  # row-width: three values for two columns
    rows[20] = "20,abc,1.400"  # bad-value
    rows[31] = "25,1.225,"  # step-regression: 25 after 30 (a resumed run re-logging)
    return rows


def write_problem_run(directory: str | Path) -> None:
    """A directory that trips the checker on purpose: bad y-axis names (one of them Rich
    markup), a row-width mismatch, a bad value, a step regression, non-finite values, a
    partial last line and an orphan CSV. Deterministic, written without the recorder."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.json").write_text(_PROBLEM_LAYOUT % MARKUP_NAME, encoding="utf-8")
    files = {
        "loss.csv": "\n".join(_problem_loss_rows()) + "\n",
        "learning_rate.csv": "".join(
            f"{step},{'nan' if step == 17 else f'{1e-4 * (step + 1) / 40:.3g}'}\n"
            for step in range(40)
        ),
        # The last row has no newline: still being written, or cut by a crash.
        "grad_norm.csv": "".join(f"{step},{3.0 - step * 0.05:.2f}\n" for step in range(39))
        + "39,1.0",
        "markup.csv": "".join(f"{step},{step % 7}.0\n" for step in range(40)),
        "old_run.csv": "0,1.0\n1,0.9\n",  # declared by no chart: orphan-csv
    }
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
