"""Write Octopus ocms training metrics: metrics.json plus one headerless CSV per chart.

Standalone on purpose: Python 3.8+ and the standard library only, so this one file can be
copied into a training project. It is also the single home of the format's rules (name
charset, chart limit, file naming, default chart groups, sanitizing); ocms-tui imports
them from here instead of keeping a second copy.
"""

# The file must stay valid Python 3.8, so the typing-module spellings are deliberate.

import contextlib
import errno
import json
import logging
import operator
import os
import re
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

__version__ = "0.1.0"

# ---------------------------------------------------------------------------
# The format (see ocms-format.md). Everything below is shared with the reader/checker.
# ---------------------------------------------------------------------------

FORMAT_VERSION = 1
MAX_CHARTS = 6  # ocms hard limit
# **decision**: series per chart. No UI draws more; the cap keeps a reader's memory bounded
# by the files' size (a 4 MB metrics.json could otherwise declare a million series).
MAX_SERIES_PER_CHART = 1000
# **decision**: the largest step, 2^53 - 1, the largest integer a JavaScript number (what a
# web UI reads) holds exactly.
MAX_STEP = 2**53 - 1
# **decision**: `<name>.csv` and a temp file beside it must fit a 255-byte file name.
MAX_CHART_NAME_LENGTH = 100
METRICS_JSON = "metrics.json"
CSV_SUFFIX = ".csv"
METRICS_ENV = "METRICS"
DEFAULT_SUBDIR = "ocms_metrics"
X_AXIS = "step"
NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

ChartGroup = Tuple[str, Callable[[str], bool]]

DEFAULT_CHART_GROUPS = [
    ("loss", lambda k: k == "loss" or k.endswith("_loss")),
    ("learning_rate", lambda k: k == "learning_rate" or k.startswith("learning_rate/")),
    ("epoch", lambda k: k == "epoch"),
    ("timing", lambda k: k.startswith("timing/")),
    ("eval_score", lambda k: k in ("mse_score", "accuracy", "mIoU")),
    ("grad_norm", lambda k: k == "grad_norm"),
]  # type: List[ChartGroup]


def is_valid_name(name: object) -> bool:
    """True when `name` is a legal chart or y-axis name for ocms."""
    return isinstance(name, str) and NAME_RE.fullmatch(name) is not None


def is_plain_file_name(name: object) -> bool:
    """A file name inside the directory: no separator, no `..`, not absolute, no NUL."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and not any(char in name for char in "/\\\x00")
        and not os.path.isabs(name)
    )


def row_width(y_axis: Iterable[object]) -> int:
    """Fields in every row of a chart with these y-axis names: the step, then one per name."""
    return 1 + len(list(y_axis))


def chart_file_name(chart_name: str) -> str:
    """The CSV file that holds a chart's rows (a decision of the spec: `<name>.csv`)."""
    return chart_name + CSV_SUFFIX


def sanitize_key(key: str) -> str:
    """Map a metric key onto a legal y-axis name, as the integration guide does."""
    if key.startswith("learning_rate/"):
        key = "lr_" + key[len("learning_rate/") :]
    elif key.startswith("timing/"):
        key = key[len("timing/") :]
    return _INVALID_NAME_CHARS.sub("_", key) or "_"


def resolve_metrics_dir(output_dir: Optional[str] = None) -> str:
    """`$METRICS` when set and not empty, else `<output_dir>/ocms_metrics`
    (`./ocms_metrics` when no output dir is given)."""
    env = os.environ.get(METRICS_ENV, "")
    if env:
        return env
    return os.path.join(output_dir if output_dir else ".", DEFAULT_SUBDIR)


# ---------------------------------------------------------------------------
# The writer.
# ---------------------------------------------------------------------------

logger = logging.getLogger("ocms_recorder")

# Launcher variables that carry the process rank, most specific first. LOCAL_RANK is only
# the rank within one node, hence the last resort.
RANK_ENV_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK")

_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)  # Windows would otherwise turn "\n" into "\r\n"
)
_UNSEEN = object()  # routing-table marker: a key not met yet (None marks a skipped key)
_Route = Tuple["_Chart", int]
PathLike = Union[str, "os.PathLike[str]"]
MAX_PLANS = 64  # distinct key sets remembered for the fast path (eval steps add a few)
_TEMP_SUFFIX = ".tmp"
# `.<file>.<pid>.tmp`: how _write_temp names the temp file of metrics.json or a CSV.
_TEMP_NAME = re.compile(
    r"\.(" + re.escape(METRICS_JSON) + r"|.+" + re.escape(CSV_SUFFIX) + r")\.([0-9]+)\.tmp"
)


def process_rank() -> int:
    """This process's rank: torch.distributed when initialised, else the launcher's
    environment, else 0. Never imports torch: a script that uses it has imported it."""
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None:
        try:
            if distributed.is_available() and distributed.is_initialized():
                return int(distributed.get_rank())
        except Exception:  # an unusual torch build: the environment still knows the rank
            pass
    for name in RANK_ENV_VARS:
        text = os.environ.get(name, "").strip()
        if text:
            try:
                return int(text)
            except ValueError:
                continue
    return 0


def _last_complete_line(handle: Any, size: int) -> Tuple[int, bytes]:
    """(offset just past the file's last newline, the line that newline ends)."""
    chunk = 65536
    while True:
        start = max(0, size - chunk)
        handle.seek(start)
        data = handle.read(size - start)
        last = data.rfind(b"\n")
        if last >= 0:
            previous = data.rfind(b"\n", 0, last)
            if previous >= 0 or start == 0:
                return start + last + 1, data[previous + 1 : last]
        elif start == 0:
            return 0, b""
        chunk *= 4


def _repair_tail(path: str) -> Optional[int]:
    """Cut a partial last line (a row a crash or a full disk left half-written) so the next
    row starts on a fresh line. Returns the y-column count of the last row, None if none."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return None
    if not os.path.isfile(path):
        raise OSError(f"not a regular file: {path}")
    if size == 0:
        return None
    with open(path, "rb+") as handle:
        end, last_line = _last_complete_line(handle, size)
        if end < size:
            handle.truncate(end)
            logger.warning("%s: discarded a partial last line (%d bytes)", path, size - end)
    return last_line.count(b",") if end else None


def _write_temp(path: str, chunks: Iterable[bytes], sync: bool = False) -> str:
    """Write `chunks` to a temp file beside `path` (named so that a later recorder knows it
    as a leftover); returns its path. `sync` flushes it to disk, so that renaming it later
    is instant (ext4 otherwise flushes a renamed-over file inside rename())."""
    directory, name = os.path.split(path)
    temp_path = os.path.join(directory, f".{name}.{os.getpid()}{_TEMP_SUFFIX}")
    try:
        with open(temp_path, "wb") as handle:
            handle.writelines(chunks)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp_path)
        raise
    return temp_path


def _replace_atomically(path: str, chunks: Iterable[bytes], sync: bool = False) -> None:
    """Write `data` to a temp file beside `path`, then rename it over `path`: a reader sees
    the old file or the new one, never half of one."""
    temp_path = _write_temp(path, chunks, sync)
    try:
        os.replace(temp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp_path)
        raise


def _remove_stale_temp_files(directory: str) -> None:
    """Delete the temp files a killed recorder left behind (a process of this machine that
    no longer runs); a widening interrupted mid-copy can leave one as big as its CSV."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = _TEMP_NAME.fullmatch(name)
        if match is None or int(match.group(2)) == os.getpid():
            continue
        if _process_exists(int(match.group(2))):
            continue
        with contextlib.suppress(OSError):
            os.remove(os.path.join(directory, name))
            logger.warning("%s: removed a temp file a stopped recorder left", name)


def _process_exists(pid: int) -> bool:
    """True when `pid` runs on this machine, or when that cannot be told safely."""
    if os.name != "posix":
        return True  # os.kill(pid, 0) would terminate the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except (OSError, OverflowError):
        return False
    return True


def _narrowed(line: str, columns: int) -> Optional[str]:
    """`line` cut to its step and first `columns` values (new columns come last); None when
    nothing of it is left to write."""
    if columns < 0:
        return None
    fields = line[:-1].split(",")[: 1 + columns]
    return ",".join(fields) + "\n" if any(fields[1:]) else None


def _widened_rows(source: Iterable[bytes], width: int) -> Iterable[bytes]:
    for line in source:
        if line.endswith(b"\n"):  # _repair_tail already cut any partial last line
            missing = width - line.count(b",")
            yield line[:-1] + b"," * missing + b"\n" if missing > 0 else line


class _Chart:
    """One chart: its y-axis and its CSV, kept open for appending."""

    __slots__ = (
        "claimed",
        "disk_width",
        "fd",
        "file_name",
        "name",
        "order",
        "path",
        "retry_at",
        "trusted",
        "y_axis",
    )

    def __init__(self, name: str, file_name: str, log_dir: str, y_axis: List[str], order: int):
        self.name = name
        self.file_name = file_name
        self.path = os.path.join(log_dir, file_name)
        self.y_axis = y_axis
        self.order = order  # position in metrics.json: the UI shows charts in this order
        self.claimed: Dict[str, str] = {}  # y-axis name -> metric key owning it now
        self.fd = -1
        # Columns in the rows on disk; when fewer than len(y_axis) the file is widened first.
        self.disk_width: Optional[int] = None
        # True when rows already in the file are this chart's (resumed or written by us).
        self.trusted = False
        self.retry_at = 0.0

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class OcmsRecorder:
    """Writes training metrics as an ocms directory: metrics.json plus one CSV per chart.

        recorder = OcmsRecorder.from_output_dir(output_dir)  # or OcmsRecorder(log_dir=...)
        recorder.log(step=global_step, metrics={"loss": 0.42, "learning_rate": 1e-4})
        recorder.finish()  # or use it as a context manager

    Only construction may raise (ValueError for bad chart groups); afterwards every problem
    (full disk, unwritable or deleted directory, odd values) is logged once and training
    goes on. One recorder per directory and per thread: it takes no locks.
    """

    health_check_interval_s = 1.0  # how often log() checks that its files still exist

    def __init__(
        self,
        log_dir: Optional[PathLike] = None,
        chart_groups: Optional[List[ChartGroup]] = None,
        enabled: bool = True,
        mirror_to_ocms: bool = True,
    ) -> None:
        """`mirror_to_ocms=False` keeps the snapshots out of an installed `ocms` package
        (a self-test must not send made-up metrics to the platform)."""
        groups = DEFAULT_CHART_GROUPS if chart_groups is None else list(chart_groups)
        _validate_chart_groups(groups)
        self._groups: List[ChartGroup] = groups
        self.log_dir = os.fspath(log_dir) if log_dir is not None else resolve_metrics_dir()
        self.enabled = bool(enabled)
        self.rank = process_rank()
        self.active = self.enabled and self.rank == 0
        self._json_path = os.path.join(self.log_dir, METRICS_JSON)
        self._charts: List[_Chart] = []
        self._charts_by_name: Dict[str, _Chart] = {}
        self._routes: Dict[Any, Optional[_Route]] = {}
        self._warned: Set[str] = set()
        self._layout_dirty = False
        self._layout_retry_at = 0.0
        self._next_health_check = 0.0
        self._mirror: Optional[Callable[..., Any]] = None
        # Key tuple -> [(chart, width, row template)], for calls whose keys were all met.
        self._plans: Dict[Tuple[Any, ...], List[Tuple[_Chart, int, str]]] = {}
        self._number_types: Set[type] = {float, int, bool}  # float() + repr() is exact
        if not self.active:
            return
        try:
            os.makedirs(self.log_dir, exist_ok=True)
        except OSError as error:  # log() retries; there is no layout to resume
            self._warn_os_error("create the directory", error)
        else:
            _remove_stale_temp_files(self.log_dir)
            self._resume_layout()
        if mirror_to_ocms:
            self._mirror = _find_ocms_mirror()

    @classmethod
    def from_output_dir(
        cls,
        output_dir: Optional[PathLike] = None,
        chart_groups: Optional[List[ChartGroup]] = None,
        enabled: bool = True,
    ) -> "OcmsRecorder":
        """A recorder writing to `$METRICS`, else to `<output_dir>/ocms_metrics`."""
        directory = resolve_metrics_dir(None if output_dir is None else os.fspath(output_dir))
        return cls(directory, chart_groups=chart_groups, enabled=enabled)

    # -- the hot path -------------------------------------------------------------------

    def log(self, step: Any, metrics: Mapping[str, Any]) -> None:
        """Append one row per chart that has a value in `metrics`; flushed before returning."""
        if not self.active:
            return
        try:
            self._log(step, metrics)
        except Exception as error:  # never into training: log it once and carry on
            self._warn_once(
                "log:" + type(error).__name__, "log() failed, snapshot dropped: %r", error
            )

    def _log(self, step: Any, metrics: Mapping[str, Any]) -> None:
        if type(step) is int and step >= 0:
            step_text = str(step)
        else:
            step_text = self._step_text(step)
            if step_text is None:
                return
        now = time.monotonic()
        if now >= self._next_health_check:
            self._check_health(now)
        # Fast path: a key set met before, all values of number types met before. Then the
        # routing is known and each row is one str.format call over the values' reprs.
        keys = tuple(metrics)
        plan = self._plans.get(keys)
        texts = None
        if plan is not None and set(map(type, metrics.values())) <= self._number_types:
            try:  # noqa: SIM105 - a try costs nothing here, contextlib.suppress would
                texts = list(map(repr, map(float, metrics.values())))
            except Exception:  # e.g. a tensor of several values: the general path says why
                pass
        if texts is None:
            lines = self._lines_general(step_text, keys, metrics)
        else:
            lines = [(chart, width, row.format(step_text, *texts)) for chart, width, row in plan]
        if self._layout_dirty and now >= self._layout_retry_at:
            self._save_layout(now)  # before the rows: a widened chart is declared first
        write = os.write
        for chart, width, line in lines:
            if chart.fd < 0 or chart.disk_width != width:
                columns = self._prepare(chart, width)
                if columns < width:
                    line = _narrowed(line, columns)
                    if line is None:
                        continue
            data = line.encode()
            try:
                written = write(chart.fd, data)
                if written != len(data):
                    self._write_rest(chart, data, written)
            except OSError as error:
                self._on_write_error(chart, error)
        if self._mirror is not None:
            self._send_to_mirror(int(step_text), metrics)

    def _lines_general(
        self, step_text: str, keys: Tuple[Any, ...], metrics: Mapping[str, Any]
    ) -> List[Tuple[_Chart, int, str]]:
        """Route and convert key by key, meeting new keys; then remember a plan for this
        key set so that the next call like it takes the fast path."""
        routes = self._routes
        pending: Dict[_Chart, List[str]] = {}
        for key, value in metrics.items():
            route = routes.get(key, _UNSEEN)
            if route is None:
                continue
            if route is _UNSEEN:
                group_index = self._group_of(key)
                if group_index is None:
                    continue
            text = self._value_text(key, value)
            if text is None:
                continue
            if route is _UNSEEN:
                # Only a key with a usable value claims a column, so no column is born empty.
                route = self._route_into_group(key, group_index)
                if route is None:
                    continue
            chart, column = route
            fields = pending.setdefault(chart, [])
            fields.extend([""] * (len(chart.y_axis) - len(fields)))
            fields[column] = text
        if len(self._plans) < MAX_PLANS and all(key in routes for key in keys):
            self._plans[keys] = self._make_plan(keys)
        return [
            (chart, len(fields), step_text + "," + ",".join(fields) + "\n")
            for chart, fields in pending.items()
        ]

    def _make_plan(self, keys: Tuple[Any, ...]) -> List[Tuple[_Chart, int, str]]:
        """Per chart the keys reach: (chart, width, row template over step and values)."""
        columns: Dict[_Chart, Dict[int, int]] = {}
        for position, key in enumerate(keys, start=1):
            route = self._routes[key]
            if route is not None:
                columns.setdefault(route[0], {})[route[1]] = position
        plan = []
        for chart, positions in columns.items():
            fields = [
                f"{{{positions[column]}}}" if column in positions else ""
                for column in range(len(chart.y_axis))
            ]
            plan.append((chart, len(chart.y_axis), "{0}," + ",".join(fields) + "\n"))
        return plan

    # -- values, keys and routing ---------------------------------------------------------

    def _step_text(self, step: Any) -> Optional[str]:
        """The step as decimal digits, or None (said once) when it is not an integer >= 0."""
        number = -1
        try:
            number = operator.index(step)  # int-like: numpy integers, integer 0-d tensors
        except TypeError:
            try:
                as_float = float(step.item() if hasattr(step, "item") else step)
                if as_float.is_integer():
                    number = int(as_float)
            except Exception:
                pass
        if number < 0:
            self._warn_once("step", "step %r is not a non-negative integer; snapshot skipped", step)
            return None
        return str(number)

    def _value_text(self, key: Any, value: Any) -> Optional[str]:
        """`value` as the CSV writes it, via `.item()` or `__float__`; None (said once per
        key) for strings and other objects that are not numbers."""
        try:
            if isinstance(value, (str, bytes)):
                raise TypeError("a string is not a number")
            item = getattr(value, "item", None)
            text = repr(float(item() if callable(item) else value))
        except Exception as error:
            self._warn_once(
                f"value:{key!r}",
                "metric %r: a value of type %s is not a number (%s); skipped",
                key,
                type(value).__name__,
                error,
            )
            return None
        kind = type(value)
        if kind not in self._number_types and not issubclass(kind, (str, bytes, bytearray)):
            # The fast path converts with float() alone: let it take this type only if
            # float() writes what .item() did (numpy scalars and 0-d tensors do).
            with contextlib.suppress(Exception):
                if repr(float(value)) == text:
                    self._number_types.add(kind)
        return text

    def _group_of(self, key: Any) -> Optional[int]:
        """The first group accepting a new key; None (said once, remembered) if none does."""
        if isinstance(key, str):
            for index, (name, accepts) in enumerate(self._groups):
                try:
                    if accepts(key):
                        return index
                except Exception as error:
                    self._warn_once(
                        "predicate:" + name, "chart group %r raised on %r: %r", name, key, error
                    )
        self._routes[key] = None
        self._warn_once(
            f"unmatched:{key!r}", "metric %r matches no chart group; it is not written", key
        )
        return None

    def _route_into_group(self, key: str, group_index: int) -> Optional[_Route]:
        chart = self._chart_for_group(group_index)
        column = None if chart is None else self._claim_column(chart, key)
        route = None if chart is None or column is None else (chart, column)
        self._routes[key] = route
        return route

    def _chart_for_group(self, group_index: int) -> Optional[_Chart]:
        name = self._groups[group_index][0]
        chart = self._charts_by_name.get(name)
        if chart is None:
            if len(self._charts) >= MAX_CHARTS:
                self._warn_once(
                    "too-many:" + name,
                    "metrics.json already has %d charts (the ocms limit); chart %r is not written",
                    MAX_CHARTS,
                    name,
                )
                return None
            chart = _Chart(name, chart_file_name(name), self.log_dir, [], group_index)
            self._add_chart(chart)
            self._layout_dirty = True
        return chart

    def _claim_column(self, chart: _Chart, key: str) -> Optional[int]:
        """The y-axis column for `key`: its sanitized name, suffixed `_2`, `_3`, ... when
        another key of this chart already sanitized to it. A resumed run matches columns
        by name, so colliding keys claim them in this run's first-seen order. None (said
        once) when the chart already has MAX_SERIES_PER_CHART series."""
        base = sanitize_key(key)
        name, suffix = base, 1
        while name in chart.claimed:
            suffix += 1
            name = f"{base}_{suffix}"
        if name not in chart.y_axis and len(chart.y_axis) >= MAX_SERIES_PER_CHART:
            self._warn_once(
                "too-many-series:" + chart.name,
                "chart %r already has %d series (the most a chart may have); %r and any "
                "later new key of it are not written",
                chart.name,
                MAX_SERIES_PER_CHART,
                key,
            )
            return None
        if suffix > 1:
            self._warn_once(
                f"collision:{chart.name}:{key}",
                "chart %r: metric %r sanitizes to %r, which %r already uses; written as %r",
                chart.name,
                key,
                base,
                chart.claimed[base],
                name,
            )
        chart.claimed[name] = key
        if name in chart.y_axis:  # a column of the run being resumed
            return chart.y_axis.index(name)
        chart.y_axis.append(name)
        self._layout_dirty = True
        self._plans.clear()  # their row templates have the old width
        return len(chart.y_axis) - 1

    def _add_chart(self, chart: _Chart) -> None:
        self._charts.append(chart)
        self._charts.sort(key=lambda each: each.order)
        self._charts_by_name[chart.name] = chart

    # -- files ------------------------------------------------------------------------

    def _resume_layout(self) -> None:
        """Adopt the charts of an existing metrics.json, so a resumed run appends to them
        with the same columns instead of wiping them."""
        try:
            with open(self._json_path, "rb") as handle:
                document = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            self._warn_once(
                "resume", "cannot read %s (%s); starting a new layout", self._json_path, error
            )
            return
        entries = document.get("charts") if isinstance(document, dict) else None
        charts: List[_Chart] = []
        group_order = {name: index for index, (name, _) in enumerate(self._groups)}
        for position, entry in enumerate(entries if isinstance(entries, list) else [None]):
            if not isinstance(entry, dict):
                entry = {}
            y_axis = entry.get("y_axis")
            if not (
                is_valid_name(entry.get("name"))
                and is_plain_file_name(entry.get("file"))
                and isinstance(y_axis, list)
                and all(isinstance(name, str) for name in y_axis)
            ):
                self._warn_once(
                    "resume",
                    "%s is not a layout this recorder can append to; starting a new one",
                    self._json_path,
                )
                return
            order = group_order.get(entry["name"], len(self._groups) + position)
            chart = _Chart(entry["name"], entry["file"], self.log_dir, list(y_axis), order)
            chart.trusted = True
            charts.append(chart)
        for chart in charts:
            self._add_chart(chart)

    def _save_layout(self, now: float) -> None:
        """Rewrite metrics.json atomically; on failure say so once and retry later.

        Every chart it declares gets its CSV first (created, or widened into a temp file),
        so that the rename of metrics.json and the rename of a widened CSV come back to
        back: a reader (or a crash) between them meets declared columns the rows lack for
        microseconds instead of for the whole rewrite. That order (metrics.json first) is
        the one a resumed recorder repairs: it widens rows narrower than declared.
        """
        lines = []
        for chart in self._charts:
            if chart.y_axis:
                description = {
                    "name": chart.name,
                    "file": chart.file_name,
                    "x_axis": X_AXIS,
                    "y_axis": chart.y_axis,
                }
                lines.append("    " + json.dumps(description))
        body = "[\n" + ",\n".join(lines) + "\n  ]" if lines else "[]"
        text = '{\n  "version": ' + str(FORMAT_VERSION) + ',\n  "charts": ' + body + "\n}\n"
        widened: List[Tuple[_Chart, str]] = []
        try:
            os.makedirs(self.log_dir, exist_ok=True)
            for chart in self._charts:
                if chart.y_axis:
                    self._stage_for_layout(chart, widened)
            # Synced too when CSVs wait: then the rename need not flush, so the writer goes
            # straight on to the CSV renames instead of sleeping between them.
            _replace_atomically(self._json_path, [text.encode("utf-8")], sync=bool(widened))
        except OSError as error:
            for _, temp_path in widened:
                with contextlib.suppress(OSError):
                    os.remove(temp_path)
            self._layout_retry_at = now + self.health_check_interval_s
            self._warn_os_error("write " + METRICS_JSON, error)
            return
        self._layout_dirty = False
        for chart, temp_path in widened:
            try:
                os.replace(temp_path, chart.path)
                chart.close()
                chart.fd = os.open(chart.path, _OPEN_FLAGS, 0o644)
                chart.disk_width = len(chart.y_axis)
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.remove(temp_path)
                self._drop_file(chart, "widen " + chart.file_name, error)

    def _stage_for_layout(self, chart: _Chart, widened: List[Tuple[_Chart, str]]) -> None:
        """Before metrics.json declares `chart`: make sure its CSV exists, and write its rows
        widened to the declared columns into a temp file (renamed once metrics.json is).
        A widening that fails raises: metrics.json then keeps declaring what is on disk."""
        if chart.fd < 0:
            if time.monotonic() < chart.retry_at:
                return
            try:
                self._open(chart)
            except OSError as error:  # this chart only; the others may still change
                self._drop_file(chart, "open " + chart.file_name, error)
                return
        width = len(chart.y_axis)
        if chart.disk_width is not None and chart.disk_width < width:
            with open(chart.path, "rb") as source:
                rows = _widened_rows(source, width)
                widened.append((chart, _write_temp(chart.path, rows, sync=True)))

    def _prepare(self, chart: _Chart, width: int) -> int:
        """Open the chart's CSV if needed and widen the rows on disk to `width` columns.
        Returns how many value columns the row may have: `width`; fewer while metrics.json
        cannot declare the new ones (rows wider than declared would break the directory);
        -1 (said once) when the file cannot be written now and the row is dropped."""
        try:
            if chart.fd < 0:
                if time.monotonic() < chart.retry_at:
                    return -1
                self._open(chart)
            if chart.disk_width is not None and chart.disk_width < width:
                if self._layout_dirty:
                    return chart.disk_width
                self._widen(chart, width)  # rows narrower than declared: a crash's leftover
            elif chart.disk_width is not None and chart.disk_width > width:
                self._warn_once(
                    "wider:" + chart.name,
                    "%s has rows wider than its %d y-axis columns; appending anyway",
                    chart.path,
                    width,
                )
            chart.disk_width = width
            return width
        except OSError as error:
            self._drop_file(chart, "open " + chart.file_name, error)
            return -1

    def _open(self, chart: _Chart) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        if not chart.trusted and os.path.isfile(chart.path) and os.path.getsize(chart.path):
            # Rows of an unknown layout: keep them, but out of this chart's way.
            aside = f"{chart.path}.old-{int(time.time())}"
            os.replace(chart.path, aside)
            self._warn_once(
                "aside:" + chart.name,
                "%s was not described by metrics.json; moved it to %s",
                chart.path,
                aside,
            )
        chart.disk_width = _repair_tail(chart.path)
        chart.fd = os.open(chart.path, _OPEN_FLAGS, 0o644)
        chart.trusted = True

    def _widen(self, chart: _Chart, width: int) -> None:
        """Give every row on disk `width` value columns (empty fields for the new ones)."""
        chart.close()
        with open(chart.path, "rb") as source:
            _replace_atomically(chart.path, _widened_rows(source, width))
        chart.fd = os.open(chart.path, _OPEN_FLAGS, 0o644)

    def _write_rest(self, chart: _Chart, data: bytes, written: int) -> None:
        """Finish a short write; if that fails, take back the part already written so the
        file keeps ending with a whole row."""
        view = memoryview(data)
        try:
            while written < len(data):
                count = os.write(chart.fd, view[written:])
                if count <= 0:
                    raise OSError(errno.ENOSPC, "no progress writing", chart.path)
                written += count
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(chart.fd, os.fstat(chart.fd).st_size - written)
            raise

    def _on_write_error(self, chart: _Chart, error: OSError) -> None:
        # Reopening repairs the tail, so a half-written row never glues onto the next one.
        self._drop_file(chart, "write " + chart.file_name, error)

    def _drop_file(self, chart: _Chart, action: str, error: OSError) -> None:
        self._warn_os_error(action, error)
        with contextlib.suppress(OSError):
            chart.close()
        chart.retry_at = time.monotonic() + self.health_check_interval_s

    def _check_health(self, now: float) -> None:
        """Recreate what someone deleted or moved away under a running recorder: the
        directory, metrics.json, a CSV (the path no longer names the file kept open)."""
        self._next_health_check = now + self.health_check_interval_s
        for chart in self._charts:
            if chart.fd >= 0:
                try:
                    kept, named = os.fstat(chart.fd), os.stat(chart.path)
                    gone = (kept.st_dev, kept.st_ino) != (named.st_dev, named.st_ino)
                except OSError:
                    gone = True
                if gone:
                    chart.close()
                    chart.disk_width = None
        if any(chart.y_axis for chart in self._charts) and not os.path.isfile(self._json_path):
            self._layout_dirty = True
            self._layout_retry_at = now

    # -- the rest of the API ------------------------------------------------------------

    def preview(self, keys: Iterable[str]) -> List[Tuple[str, Optional[str], Optional[str]]]:
        """(key, chart name, y-axis name) for each key, as log() routes a key it meets for
        the first time: chart groups, sanitizing, collisions and the chart limits applied;
        (key, None, None) when it would not be written. Writes no file; it claims columns
        as log() would, so use a recorder made for it (`enabled=False`)."""
        routes = []  # type: List[Tuple[str, Optional[str], Optional[str]]]
        for key in keys:
            route = self._routes.get(key, _UNSEEN)
            if route is _UNSEEN:
                group_index = self._group_of(key)
                route = None if group_index is None else self._route_into_group(key, group_index)
            if route is None:
                routes.append((key, None, None))
            else:
                chart, column = route  # type: ignore[misc]
                routes.append((key, chart.name, chart.y_axis[column]))
        return routes


    def finish(self) -> None:
        """Write a pending metrics.json and close the files. Safe to call twice; a later
        log() opens them again."""
        if not self.active:
            return
        try:
            if self._layout_dirty:
                self._save_layout(time.monotonic())
            for chart in self._charts:
                chart.close()
        except Exception as error:
            self._warn_once("finish", "finish() failed: %r", error)

    def __del__(self) -> None:
        try:
            for chart in self._charts:
                chart.close()
        except Exception:  # half-built, or the interpreter is shutting down
            pass

    def __enter__(self) -> "OcmsRecorder":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.finish()

    def _warn_os_error(self, action: str, error: OSError) -> None:
        # One warning per kind of failure (a full disk fails every file the same way).
        self._warn_once(
            f"os:{error.errno}",
            "cannot %s in %s (%s); metrics are dropped until it works again",
            action,
            self.log_dir,
            error,
        )

    def _warn_once(self, token: str, message: str, *args: Any) -> None:
        if token not in self._warned:
            self._warned.add(token)
            logger.warning(message, *args)

    def _send_to_mirror(self, step: int, metrics: Mapping[str, Any]) -> None:
        try:
            self._mirror(step=step, metrics=dict(metrics))  # type: ignore[misc]
        except Exception as error:
            self._mirror = None
            self._warn_once(
                "ocms", "the ocms package failed (%r); no longer mirroring to it", error
            )


def _find_ocms_mirror() -> Optional[Callable[..., Any]]:
    """`ocms.log` of the proprietary ocms package, when installed. Its API is not public:
    `log(step=, metrics=)` is the one call assumed, and the first failure turns the mirror
    off, so the files stay the record either way."""
    try:
        import ocms  # type: ignore[import-not-found]

        log = getattr(ocms, "log", None)
        return log if callable(log) else None
    except Exception:
        return None


def _validate_chart_groups(groups: List[ChartGroup]) -> None:
    """The one place the recorder raises: a configuration ocms would reject."""
    if not groups:
        raise ValueError("chart_groups is empty: give at least one (chart_name, predicate) pair")
    if len(groups) > MAX_CHARTS:
        raise ValueError(
            f"{len(groups)} chart groups given, but ocms draws at most {MAX_CHARTS} charts: "
            "merge some groups"
        )
    seen = set()
    for group in groups:
        if not (isinstance(group, (tuple, list)) and len(group) == 2 and callable(group[1])):
            raise ValueError(f"each chart group must be a (chart_name, predicate) pair: {group!r}")
        name = group[0]
        if not is_valid_name(name):
            raise ValueError(f"chart name {name!r}: ocms allows only letters, digits, '_' and '-'")
        if name in seen:
            raise ValueError(f"chart name {name!r} is used by two chart groups")
        seen.add(name)
