"""What every framework integration shares: the recorder mixin and framework imports.

`OcmsMixin` is the guide's "shared base class" pattern: a training class (or a framework
callback) calls `_init_ocms(output_dir)` once and `_ocms_log(step, metrics)` wherever it
already logs. The framework integrations in this package are built on it too.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import stat
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from ocms_recorder import (
    CSV_SUFFIX,
    DEFAULT_CHART_GROUPS,
    MAX_STEP,
    ChartGroup,
    OcmsRecorder,
    resolve_metrics_dir,
)

logger = logging.getLogger("ocms_integrations")
Row = tuple[int, dict[str, Any]]  # (step, metrics): what one recorder.log call writes
# The last row of a CSV is in its last few KiB unless it is absurdly wide; a longer one
# only means the earlier run's last step is not named in the message.
_TAIL_BYTES = 4096


def require_framework(module_name: str, extra: str) -> ModuleType:
    """Import a framework, or fail with an ImportError that says which extra installs it."""
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"ocms_integrations.{extra} needs the '{module_name}' package, which is not "
            f"importable ({error}). Install it with: pip install 'ocms-tui[{extra}]'"
        ) from error


def chart_groups_with(
    replacements: Mapping[str, Callable[[str], bool]],
    groups: Iterable[ChartGroup] = DEFAULT_CHART_GROUPS,
) -> list[ChartGroup]:
    """The default chart groups with some predicates swapped, keeping chart names and order.

    Frameworks name their metrics differently (MMEngine's `loss_cls`, the Trainer's
    `eval_accuracy`); swapping a predicate keeps the charts users know from the guide.
    """
    unknown = set(replacements) - {name for name, _ in groups}
    if unknown:
        raise ValueError(f"no chart group named {sorted(unknown)}")
    return [(name, replacements.get(name, predicate)) for name, predicate in groups]


def learning_rates(param_groups: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """`learning_rate` for one parameter group, `learning_rate/group<i>` for several
    (the recorder draws those as `lr_group<i>` on the learning_rate chart)."""
    rates = [group["lr"] for group in param_groups if "lr" in group]
    if len(rates) == 1:
        return {"learning_rate": rates[0]}
    return {f"learning_rate/group{index}": rate for index, rate in enumerate(rates)}


def last_recorded_step(metrics_dir: str) -> int | None:
    """The largest step in the last rows of the chart CSVs already in `metrics_dir`, -1
    when they hold rows but none ends in a readable step, None when there are none."""
    try:
        names = os.listdir(metrics_dir)
    except OSError:
        return None
    last: int | None = None
    for name in names:
        if not name.endswith(CSV_SUFFIX) or name.startswith("."):
            continue
        path = os.path.join(metrics_dir, name)
        try:
            # Non-blocking, and checked on the open file: a FIFO (even one swapped in after
            # a stat) must not block a training run's start.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                    continue
                start = max(0, info.st_size - _TAIL_BYTES)
                handle.seek(start)
                lines = handle.read().split(b"\n")
        except OSError:
            continue
        # The first piece of a tail read may be the end of a longer line; the last one is
        # a row still being written (or the empty rest after the final newline).
        complete = [line for line in lines[1 if start else 0 : -1] if line]
        step_text = complete[-1].split(b",", 1)[0].strip() if complete else b""
        # At most _TAIL_BYTES digits: under int()'s 4300-digit limit, so it cannot raise.
        step = int(step_text) if step_text.isdigit() else -1
        if step > MAX_STEP:
            step = -1
        last = step if last is None else max(last, step)
    return last


def warn_if_earlier_run(output_dir: str | None, resuming: bool, how_to_resume: str) -> None:
    """Say once, before a run writes, what happens to the rows an earlier run left in its
    directory: they are kept (the recorder never deletes them) and the new rows follow.

    A fresh run (not `resuming`) gets a warning, since its steps start again from 0 and
    two runs then share one chart; a resumed run only an info line.
    """
    directory = resolve_metrics_dir(output_dir)
    last = last_recorded_step(directory)
    if last is None:
        return
    up_to = f" (up to step {last})" if last >= 0 else ""
    if resuming:
        logger.info(
            "%s holds the rows of the run being resumed%s; new rows are appended to them",
            directory,
            up_to,
        )
        return
    logger.warning(
        "%s already holds the metrics of an earlier run%s. This run starts from step 0 "
        "and is appended after them: viewers mark where the steps restart. Nothing is "
        "deleted; to keep runs apart, give this run another output directory (or remove "
        "the old one); to continue the earlier run, resume it with %s.",
        directory,
        up_to,
        how_to_resume,
    )


class SameStepMerger:
    """Merges what is logged at one step into one row (the format's same-step rule:
    writers merge what they log at one step into one row per chart).

    `add(step, metrics)` holds the metrics while the step stays the same and returns the
    row of the previous step once another step arrives; `flush()` returns the row held.
    After a flush, metrics logged again at the step just returned (an `evaluate()` after
    `train()` re-logs the last step) keep only the keys whose value changed: a key whose
    value the row already holds is not written twice, whether or not new keys of that
    step are held.
    """

    def __init__(self) -> None:
        self._step: int | None = None
        self._pending: dict[str, Any] = {}
        self._last_row: Row | None = None

    @property
    def pending_step(self) -> int | None:
        """The step of the row held, None when none is."""
        return self._step if self._pending else None

    def add(self, step: int, metrics: Mapping[str, Any]) -> list[Row]:
        completed: list[Row] = []
        if self._pending and step != self._step:
            completed = self.flush()
        if self._last_row is not None and self._last_row[0] == step:
            # Also while a row of new keys is held at that step (trainer.log() of custom
            # values, then evaluate()): a value the step's written row holds is not new.
            written = self._last_row[1]
            metrics = {
                key: value
                for key, value in metrics.items()
                if key in self._pending
                or key not in written
                or not _same_value(written[key], value)
            }
        if metrics:
            self._step = step
            self._pending.update(metrics)
        return completed

    def flush(self) -> list[Row]:
        if not self._pending or self._step is None:
            return []
        row: Row = (self._step, self._pending)
        self._pending = {}
        if self._last_row is not None and self._last_row[0] == row[0]:
            self._last_row = (row[0], {**self._last_row[1], **row[1]})
        else:
            self._last_row = (row[0], dict(row[1]))
        return [row]


def _same_value(a: Any, b: Any) -> bool:
    """Equal, or both NaN (a NaN loss re-logged by evaluate() is the value already
    written, not a new one: NaN != NaN would write the step twice)."""
    try:
        return bool(a == b) or (bool(a != a) and bool(b != b))
    except Exception:  # e.g. arrays: compared element-wise, no single truth value
        return False


class OcmsMixin:
    """Adds an OcmsRecorder to any class: `_init_ocms`, `_ocms_log`, `_ocms_finish`.

    Logging before `_init_ocms` (or on a process that must not write) does nothing, so
    the calls can sit unguarded in code that every rank runs.
    """

    _ocms_recorder: OcmsRecorder | None = None
    _ocms_merger: SameStepMerger | None = None
    _ocms_logged = False  # this object has written rows (a run of this process)

    def _init_ocms(
        self,
        output_dir: str | None,
        chart_groups: Iterable[ChartGroup] | None = None,
        enabled: bool = True,
    ) -> OcmsRecorder | None:
        """Start recording into `$METRICS`, else `<output_dir>/ocms_metrics`.

        `enabled=False` (a process other than the main one) records nothing and creates
        no directory.
        """
        self._ocms_finish()
        if not enabled:
            return None
        groups = list(chart_groups) if chart_groups is not None else None
        self._ocms_recorder = OcmsRecorder.from_output_dir(output_dir, chart_groups=groups)
        return self._ocms_recorder

    def _ocms_log(self, step: int, metrics: Mapping[str, Any]) -> None:
        if self._ocms_recorder is not None:
            self._ocms_logged = True
            self._ocms_recorder.log(step=step, metrics=dict(metrics))

    def _ocms_check_earlier_run(
        self, output_dir: str | None, resuming: bool, how_to_resume: str
    ) -> None:
        """`warn_if_earlier_run`, unless the rows there are this object's own (an
        evaluation it recorded before training started)."""
        if not self._ocms_logged:
            warn_if_earlier_run(output_dir, resuming, how_to_resume)

    def _ocms_log_merged(self, step: int, metrics: Mapping[str, Any]) -> None:
        """Like `_ocms_log`, but what arrives for one step is held and written as one row
        when another step arrives or `_ocms_flush` is called (call it where the
        framework starts the next step, and where it stops)."""
        if self._ocms_merger is None:
            self._ocms_merger = SameStepMerger()
            # A run that dies between a step's logs and the next step (an evaluation or a
            # checkpoint that raises) must not lose the row held: write it at exit.
            atexit.register(_flush_at_exit, weakref.ref(self))
        for row_step, row in self._ocms_merger.add(step, metrics):
            self._ocms_log(row_step, row)

    def _ocms_flush(self) -> None:
        """Write the row `_ocms_log_merged` holds, if any."""
        if self._ocms_merger is not None:
            for row_step, row in self._ocms_merger.flush():
                self._ocms_log(row_step, row)

    def _ocms_finish(self) -> None:
        """Write the row held for the last step, then close the recorder's files."""
        self._ocms_flush()
        if self._ocms_recorder is not None:
            recorder, self._ocms_recorder = self._ocms_recorder, None
            recorder.finish()


def _flush_at_exit(reference: weakref.ref[OcmsMixin]) -> None:
    owner = reference()
    if owner is not None:
        try:
            owner._ocms_finish()
        except Exception as error:  # the interpreter is ending: say it, never raise
            logger.warning("could not write the last metrics row at exit: %r", error)
