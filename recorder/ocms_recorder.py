"""Write Octopus ocms training metrics: metrics.json plus one headerless CSV per chart.

Standalone on purpose: Python 3.8+ and the standard library only, so this one file can be
copied into a training project. It is also the single home of the format's rules (name
charset, chart limit, file naming, default chart groups, sanitizing); ocms-tui imports
them from here instead of keeping a second copy.
"""

# The file must stay valid Python 3.8, so the typing-module spellings are deliberate.

import atexit
import contextlib
import errno
import json
import logging
import math
import operator
import os
import re
import stat
import sys
import threading
import time
import weakref
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

try:  # the one-writer lock; a platform without fcntl (Windows) writes without it
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

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
# **decision**: the most of metrics.json a reader (and a resuming recorder) reads; a larger
# file is not a layout anyone wrote (six charts of 1,000 names are about 200 KB).
MAX_METRICS_JSON_BYTES = 4 * 1024 * 1024
METRICS_JSON = "metrics.json"
CSV_SUFFIX = ".csv"
METRICS_ENV = "METRICS"
DEFAULT_SUBDIR = "ocms_metrics"
X_AXIS = "step"
NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

ChartGroup = Tuple[str, Callable[[str], bool]]
PathLike = Union[str, "os.PathLike[str]"]
# Charts for metrics.json: {name: y-axis names} or (name, y-axis names) pairs, in order.
Layout = Union[Mapping[str, Sequence[str]], Iterable[Tuple[str, Sequence[str]]]]  # noqa: UP007 (3.8)

DEFAULT_CHART_GROUPS = [
    ("loss", lambda k: k == "loss" or k.endswith("_loss")),
    ("learning_rate", lambda k: k == "learning_rate" or k.startswith("learning_rate/")),
    ("epoch", lambda k: k == "epoch"),
    ("timing", lambda k: k.startswith("timing/")),
    ("eval_score", lambda k: k in ("mse_score", "accuracy", "mIoU")),
    ("grad_norm", lambda k: k == "grad_norm"),
]  # type: List[ChartGroup]
# The rules above as text, for the sidecar (the format's table, in Python's spelling).
DEFAULT_RULES = {
    DEFAULT_CHART_GROUPS[0][1]: "k == 'loss' or k.endswith('_loss')",
    DEFAULT_CHART_GROUPS[1][1]: "k == 'learning_rate' or k.startswith('learning_rate/')",
    DEFAULT_CHART_GROUPS[2][1]: "k == 'epoch'",
    DEFAULT_CHART_GROUPS[3][1]: "k.startswith('timing/')",
    DEFAULT_CHART_GROUPS[4][1]: "k in ('mse_score', 'accuracy', 'mIoU')",
    DEFAULT_CHART_GROUPS[5][1]: "k == 'grad_norm'",
}  # type: Dict[Callable[[str], bool], str]

# **decision**: the recorder's record of what it did not write (not part of the Octopus
# format; readers of the format ignore it, a directory without it is valid).
SIDECAR = ".ocms-recorder.json"
SIDECAR_FORMAT = "ocms-recorder"
SIDECAR_VERSION = 1
# Why a key (or, for a step too large, a whole snapshot) was not written.
DROP_NO_CHART_GROUP = "no-chart-group"
DROP_NOT_A_NUMBER = "not-a-number"
DROP_Y_AXIS_CAP = "y-axis-cap"
DROP_STEP_TOO_LARGE = "step-too-large"
DROP_REASONS = (DROP_NO_CHART_GROUP, DROP_NOT_A_NUMBER, DROP_Y_AXIS_CAP, DROP_STEP_TOO_LARGE)
# Entries the sidecar lists at most: a run inventing a new key every step must not make
# each rewrite of it bigger without end.
MAX_SIDECAR_ENTRIES = 1000


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


def layout_text(
    charts: "Layout",
) -> str:
    """metrics.json for `charts` ((chart name, y-axis names) pairs or a mapping of them), as
    the recorder writes it: one chart per line, the spec's field names in the spec's order."""
    pairs = charts.items() if isinstance(charts, Mapping) else charts
    lines = [
        "    "
        + json.dumps(
            {"name": name, "file": chart_file_name(name), "x_axis": X_AXIS, "y_axis": list(y_axis)}
        )
        for name, y_axis in pairs
    ]
    body = "[\n" + ",\n".join(lines) + "\n  ]" if lines else "[]"
    return '{\n  "version": ' + str(FORMAT_VERSION) + ',\n  "charts": ' + body + "\n}\n"


def write_layout(
    directory: PathLike,
    charts: "Layout",
) -> None:
    """Write `layout_text(charts)` as `directory`/metrics.json atomically (temp file, then
    rename), as the recorder does: a reader sees the old file or the new one."""
    path = os.path.join(os.fspath(directory), METRICS_JSON)
    _replace_atomically(path, [layout_text(charts).encode("utf-8")])


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
# Opening a FIFO must not wait for a peer, nor a symlink lead out of the directory.
_NO_SURPRISES = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
_UNSEEN = object()  # routing-table marker: a key not met yet (None marks a skipped key)
_Route = Tuple["_Chart", int]
MAX_PLANS = 64  # distinct key sets remembered for the fast path (eval steps add a few)
# Rows of one chart kept in memory while the disk refuses them (or the directory cannot be
# made yet); past this many, its new rows are dropped so that a dead disk cannot eat the
# training's RAM: said once, and how many and which steps once the disk takes rows again.
# Rows waiting only for a widening copy (the disk takes writes) are never dropped.
MAX_PENDING_ROWS = 10_000
MAX_LOST_RANGES = 20  # step ranges a report of dropped rows names; more are counted
# A CSV up to this size is widened on the caller's thread (a few ms); a bigger one on a
# thread of its own, so that log() never waits for a copy (1 GB takes seconds).
WIDEN_INLINE_BYTES = 1 << 20
_COPY_BLOCK_BYTES = 1 << 16  # small: the copying thread lets go of the GIL at every read and write
_TEMP_SUFFIX = ".tmp"
# `.<file>.<pid>.tmp`: how _write_temp names the temp file of metrics.json or a CSV.
_TEMP_NAME = re.compile(
    r"\.("
    + re.escape(METRICS_JSON)
    + "|"
    + re.escape(SIDECAR)
    + r"|.+"
    + re.escape(CSV_SUFFIX)
    + r")\.([0-9]+)\.tmp"
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
        descriptor = os.open(path, os.O_RDWR | _NO_SURPRISES | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None
    with open(descriptor, "rb+") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        size = info.st_size
        if size == 0:
            return None
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


def _read_layout_bytes(path: str) -> bytes:
    """metrics.json's bytes: a regular file only, opened without blocking (a FIFO would wait
    for a writer forever), at most MAX_METRICS_JSON_BYTES of it (a symlink to /dev/zero
    would never end). Raises OSError or ValueError for anything else."""
    descriptor = os.open(path, os.O_RDONLY | _NO_SURPRISES | getattr(os, "O_BINARY", 0))
    with open(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError("not a regular file")
        data = handle.read(MAX_METRICS_JSON_BYTES + 1)
    if len(data) > MAX_METRICS_JSON_BYTES:
        raise ValueError(f"larger than {MAX_METRICS_JSON_BYTES} bytes")
    return data


def _widened_line(line: bytes, width: int) -> bytes:
    missing = width - line.count(b",")
    return line[:-1] + b"," * missing + b"\n" if missing > 0 else line


def _widened_rows(source: Any, old_width: Optional[int], width: int) -> Iterator[bytes]:
    """The whole rows of `source` with `width` value columns (empty fields added at the
    end), a block at a time: when every row of a block has `old_width` columns, as the
    recorder writes them, one bytes.replace widens it (a 1 GB copy then costs the copying
    thread little interpreter time, which log() on the other thread needs)."""
    rest = b""
    padding = b"," * (width - old_width) if old_width is not None else b""
    while True:
        data = source.read(_COPY_BLOCK_BYTES)
        if not data:
            return  # `rest` is a partial last line: _repair_tail already cut any
        data = rest + data
        end = data.rfind(b"\n") + 1
        block, rest = data[:end], data[end:]
        if b"\r" in block:
            # Rows a Windows writer ended with CRLF: "\r" before the new fields would make
            # each value unreadable; the copy ends every row with "\n" as the recorder does.
            block = block.replace(b"\r\n", b"\n")
        rows = block.count(b"\n")
        if padding and block.count(b",") == rows * old_width:  # type: ignore[operator]
            yield block.replace(b"\n", padding + b"\n")
        elif rows:
            yield b"".join(_widened_line(line, width) for line in block.splitlines(True))


class _Widening:
    """A chart's CSV copied with `width` columns into a temp file, on a thread of its own.
    The recorder appends nothing to the CSV meanwhile (its rows wait in memory) and renames
    the copy over the CSV itself, right after metrics.json declares the new columns."""

    def __init__(self, path: str, old_width: Optional[int], width: int) -> None:
        self.path = path
        self.old_width = old_width
        self.width = width
        self.temp_path: Optional[str] = None
        self.error: Optional[BaseException] = None
        self.source_id: Optional[Tuple[int, int, int]] = None
        self.thread = threading.Thread(target=self.copy, name="ocms-recorder-widen", daemon=True)

    def copy(self) -> None:
        try:
            with open(self.path, "rb") as source:
                info = os.fstat(source.fileno())
                self.source_id = (info.st_dev, info.st_ino, info.st_size)
                rows = _widened_rows(source, self.old_width, self.width)
                self.temp_path = _write_temp(self.path, rows, sync=True)
        except BaseException as error:  # handed to the recorder, which says it once
            self.error = error

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def source_unchanged(self) -> bool:
        """True when the CSV is still the file copied (nobody replaced or appended to it)."""
        try:
            info = os.stat(self.path)
        except OSError:
            return False
        return self.source_id == (info.st_dev, info.st_ino, info.st_size)

    def wait(self) -> None:
        if self.thread.ident is not None:  # started: a small copy runs on the caller's thread
            self.thread.join()

    def discard(self) -> None:
        """Remove the copy; the recorder discards only a copy that has ended (it never
        waits for one on the caller's thread but in finish())."""
        self.wait()
        if self.temp_path is not None:
            with contextlib.suppress(OSError):
                os.remove(self.temp_path)
            self.temp_path = None


class _Chart:
    """One chart: its y-axis and its CSV, kept open for appending."""

    __slots__ = (
        "claimed",
        "declared",
        "disk_width",
        "fd",
        "file_name",
        "name",
        "order",
        "path",
        "pending",
        "refused",
        "resumed",
        "retry_at",
        "trusted",
        "widening",
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
        # Value columns metrics.json on disk declares for this chart (None: not in it). A
        # row is appended only at exactly this width, so the CSV never has rows wider than
        # declared; metrics.json declares a width only once the CSV has it (or is empty).
        self.declared: Optional[int] = None
        self.pending: List[str] = []  # rows waiting for the disk or a widening, in order
        # The disk refused this chart's last write (or open, or copy): only then is
        # `pending` bounded, and only a write that succeeds clears it.
        self.refused = False
        self.widening: Optional[_Widening] = None
        self.resumed: Tuple[str, ...] = ()  # the y-axis names an earlier run left

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class _LostRows:
    """Rows of one chart (or snapshots, before the directory could be made) dropped while
    the disk refused them: how many, and at which steps (consecutive steps as one range)."""

    __slots__ = ("count", "more", "ranges")

    def __init__(self) -> None:
        self.count = 0
        self.ranges: List[List[int]] = []  # [first, last] step of each run of steps
        self.more = 0  # rows in ranges past MAX_LOST_RANGES

    def add(self, step: int) -> None:
        self.count += 1
        if self.ranges and self.ranges[-1][1] <= step <= self.ranges[-1][1] + 1:
            self.ranges[-1][1] = step
        elif len(self.ranges) < MAX_LOST_RANGES:
            self.ranges.append([step, step])
        else:
            self.more += 1

    def steps_text(self) -> str:
        text = ", ".join(
            str(first) if first == last else f"{first}-{last}" for first, last in self.ranges
        )
        return text + (f" and {self.more} rows at later steps" if self.more else "")


class _Drop:
    """One key (None: a snapshot whose step is too large) the recorder did not write, why,
    and at which steps: one entry of the sidecar's "dropped" list."""

    __slots__ = ("count", "first_step", "key", "last_step", "message", "reason")

    def __init__(self, key: Any, reason: str, step: int, message: str) -> None:
        self.key = key
        self.reason = reason
        self.first_step = step
        self.last_step = step
        self.count = 1
        self.message = message

    def add(self, step: int) -> None:
        self.count += 1
        if step > self.last_step:
            self.last_step = step

    def as_json(self) -> Dict[str, Any]:
        key = self.key
        if key is not None and not isinstance(key, str):
            try:
                key = repr(key)
            except Exception:  # a key object whose repr fails: its type, at least
                key = f"<{type(key).__name__} key>"
        return {
            "key": key,
            "reason": self.reason,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "count": self.count,
            "message": self.message,
        }


class OcmsRecorder:
    """Writes training metrics as an ocms directory: metrics.json plus one CSV per chart.

        recorder = OcmsRecorder.from_output_dir(output_dir)  # or OcmsRecorder(log_dir=...)
        recorder.log(step=global_step, metrics={"loss": 0.42, "learning_rate": 1e-4})
        recorder.finish()  # or use it as a context manager

    Only construction may raise (ValueError for bad chart groups); afterwards every problem
    (full disk, unwritable or deleted directory, odd values) is logged once and training
    goes on. Rows the disk refuses wait in memory (up to MAX_PENDING_ROWS) and are written
    when it takes them again. One writer per directory: the recorder holds an advisory lock
    on the directory until finish(); a second one says so and writes nothing meanwhile.
    Call it from one thread (a big widening copies on a thread of its own).
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
        self._layout_on_disk: Optional[str] = None  # the text of our last metrics.json
        self._next_health_check = 0.0
        self._pending_rows = 0  # rows waiting in the charts' `pending` lists
        self._copying = False  # a widened copy runs on its own thread
        self._flush_at = 0.0  # when rows waiting for the disk are tried again
        self._lock_fd = -1  # the directory, flock-ed while this recorder writes it
        self._owner = False  # holds the directory (or the platform has no locks)
        self._last_take_attempt = -math.inf
        self._mirror: Optional[Callable[..., Any]] = None
        # Key tuple -> [(chart, width, row template)], for calls whose keys were all met.
        # ... and, when some of those keys are dropped, a tally of the calls (_make_tally).
        self._plans: Dict[
            Tuple[Any, ...], Tuple[List[Tuple[_Chart, int, str]], Optional[List[Any]]]
        ] = {}
        self._number_types: Set[type] = {float, int, bool}  # float() + repr() is exact
        # The directory could not be made or opened (not: another recorder holds it); then
        # snapshots wait in `_early`, converted to plain values, until it can be.
        self._directory_refused = False
        self._early: List[Tuple[str, Dict[Any, Any]]] = []
        self._layout_refused = False  # the last metrics.json write failed
        self._lost: Dict[str, _LostRows] = {}  # what was dropped, reported once written again
        # The sidecar's record: (key, reason) -> entry; keys no group or column takes, by key.
        self._drops: Dict[Tuple[Any, str], _Drop] = {}
        self._dropped_keys: Dict[Any, _Drop] = {}
        self._why_unrouted = (DROP_NO_CHART_GROUP, "")  # set where a route is refused
        self._sidecar_dirty = False
        self._sidecar_written_at = -math.inf
        self._rules: Optional[List[Dict[str, str]]] = None  # the chart groups as text
        self._sidecar_resumed = False
        self._inherited = False  # made by the parent of this forked process
        if not self.active:
            return
        _UNFINISHED.add(self)
        self._take_directory(time.monotonic())
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
            if self._inherited:
                self._warn_once(
                    "inherited",
                    "this recorder belongs to the parent of this forked process (pid %d), "
                    "which writes %s; the child writes nothing with it (make a new one there)",
                    os.getppid(),
                    self.log_dir,
                )
            return
        try:
            # One call level below log() on the way to the rows, as few as can be: this is
            # the training loop's cost.
            if type(step) is int and 0 <= step <= MAX_STEP:
                step_text = str(step)
            else:
                step_text = self._step_text(step)
                if step_text is None:
                    return
            now = time.monotonic()
            if now >= self._next_health_check:
                self._check_health(now)
            if self._owner or self._take_directory_again(now):
                self._write(step_text, metrics, now)
            elif self._directory_refused:
                self._wait_for_directory(step_text, metrics)
            else:  # another live recorder writes the directory: this one writes nothing there
                return
            if self._mirror is not None:
                self._send_to_mirror(int(step_text), metrics)
        except Exception as error:  # never into training: log it once and carry on
            self._warn_once(
                "log:" + type(error).__name__, "log() failed, snapshot dropped: %r", error
            )

    def _write(self, step_text: str, metrics: Mapping[str, Any], now: float) -> None:
        """Append the snapshot's rows (the directory is ours), or keep them waiting."""
        if self._copying:
            self._poll_widenings()
        # Fast path: a key set met before, all values of number types met before. Then the
        # routing is known and each row is one str.format call over the values' reprs.
        keys = tuple(metrics)
        entry = self._plans.get(keys)
        texts = None
        if entry is not None and set(map(type, metrics.values())) <= self._number_types:
            try:  # noqa: SIM105 - a try costs nothing here, contextlib.suppress would
                texts = list(map(repr, map(float, metrics.values())))
            except Exception:  # e.g. a tensor of several values: the general path says why
                pass
        if texts is None:
            lines = self._lines_general(step_text, keys, metrics)
        else:
            plan, tally = entry  # type: ignore[misc]
            lines = [(chart, width, row.format(step_text, *texts)) for chart, width, row in plan]
            if tally is not None:  # keys of this set are dropped: counted, not said again
                tally[0] += 1
                tally[1] = step_text
        if self._layout_dirty and now >= self._layout_retry_at:
            self._save_layout(now)  # before the rows: a widened chart is declared first
        if self._pending_rows and now >= self._flush_at:
            self._flush_all()
        write = os.write
        for chart, width, line in lines:
            # The fast case: the chart's file is open, as wide as the row and as declared.
            if (
                chart.fd < 0
                or chart.disk_width != width
                or chart.declared != width
                or chart.pending
            ):
                self._keep(chart, line)
                continue
            data = line.encode()
            try:
                written = write(chart.fd, data)
                if written != len(data):
                    self._write_rest(chart, data, written)
            except OSError as error:
                self._drop_file(chart, "write " + chart.file_name, error)
                self._keep(chart, line)  # after the drop: it waits for the retry

    def _wait_for_directory(self, step_text: str, metrics: Mapping[str, Any]) -> None:
        """Keep a snapshot until the directory can be made (bounded as rows the disk
        refuses): routed then, after an earlier run's metrics.json there is resumed. Values
        become plain numbers now, so no tensor is held."""
        if len(self._early) >= MAX_PENDING_ROWS:
            self._lose(f"snapshots for {self.log_dir}", int(step_text))
            return
        plain = {}
        for key, value in metrics.items():
            item = getattr(value, "item", None)
            if callable(item) and not isinstance(value, (str, bytes)):
                with contextlib.suppress(Exception):
                    value = item()
            plain[key] = value
        self._early.append((step_text, plain))

    def _take_directory_again(self, now: float) -> bool:
        """Take the directory (snapshots wait only while this recorder does not hold it:
        they are written first, in order)."""
        if not self._take_directory(now):
            return False
        if self._early:
            self._write_early(now)
        return True

    def _write_early(self, now: float) -> None:
        early, self._early = self._early, []
        for step_text, metrics in early:
            self._write(step_text, metrics, now)
        self._report_lost(f"snapshots for {self.log_dir}")

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
                record = self._dropped_keys.get(key)
                if record is not None:
                    record.add(int(step_text))
                continue
            if route is _UNSEEN:
                group_index = self._group_of(key)
                if group_index is None:
                    self._unrouted(key, step_text)
                    continue
            text = self._value_text(key, value)
            if text is None:
                self._note_drop(key, DROP_NOT_A_NUMBER, step_text, self._why_unrouted[1])
                self._why_unrouted = (DROP_NO_CHART_GROUP, "")
                continue
            if route is _UNSEEN:
                # Only a key with a usable value claims a column, so no column is born empty.
                route = self._route_into_group(key, group_index)
                if route is None:
                    self._unrouted(key, step_text)
                    continue
            chart, column = route
            fields = pending.setdefault(chart, [])
            fields.extend([""] * (len(chart.y_axis) - len(fields)))
            fields[column] = text
        if len(self._plans) < MAX_PLANS and all(key in routes for key in keys):
            self._plans[keys] = (self._make_plan(keys), self._make_tally(keys))
        return [
            (chart, len(fields), step_text + "," + ",".join(fields) + "\n")
            for chart, fields in pending.items()
        ]

    def _make_tally(self, keys: Tuple[Any, ...]) -> Optional[List[Any]]:
        """[calls, last step, entries] for a key set with dropped keys: the fast path counts
        its calls there (one increment), folded into the entries when the sidecar is written."""
        records = [self._dropped_keys[key] for key in keys if key in self._dropped_keys]
        return [0, "0", records] if records else None

    def _fold_tallies(self) -> None:
        for _, tally in self._plans.values():
            if tally is not None and tally[0]:
                calls, step = tally[0], int(tally[1])
                tally[0] = 0
                for record in tally[2]:
                    record.count += calls
                    record.last_step = max(record.last_step, step)

    def _unrouted(self, key: Any, step_text: str) -> None:
        """A key met for the first time that no chart takes: on record under its reason."""
        reason, message = self._why_unrouted
        record = self._note_drop(key, reason, step_text, message)
        if record is not None:
            self._dropped_keys[key] = record
        self._why_unrouted = (DROP_NO_CHART_GROUP, "")

    def _note_drop(self, key: Any, reason: str, step_text: str, message: str) -> Optional[_Drop]:
        """Count a key not written at this step; a new (key, reason) goes to the sidecar now
        (at most once per health-check interval: later ones with the next check)."""
        step = int(step_text)
        record = self._drops.get((key, reason))
        if record is not None:
            record.add(step)
            return record
        if len(self._drops) >= MAX_SIDECAR_ENTRIES:
            self._warn_once(
                "sidecar-full",
                "more than %d keys were not written; %s lists the first %d",
                MAX_SIDECAR_ENTRIES,
                SIDECAR,
                MAX_SIDECAR_ENTRIES,
            )
            return None
        record = _Drop(key, reason, step, message or f"{key!r} is not written ({reason})")
        self._drops[(key, reason)] = record
        self._sidecar_dirty = True
        now = time.monotonic()
        if self._owner and now - self._sidecar_written_at >= self.health_check_interval_s:
            self._save_sidecar(now)
        return record

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
        if number > MAX_STEP:
            message = (
                f"step {number} is larger than {MAX_STEP} (2^53 - 1, the largest a JavaScript "
                "number holds exactly); snapshots with such steps are skipped"
            )
            self._warn_once("step-too-large", "%s", message)
            if self.active:
                self._note_drop(None, DROP_STEP_TOO_LARGE, str(number), message)
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
            message = f"metric {key!r}: a value of type {type(value).__name__} is not a number"
            self._warn_once(f"value:{key!r}", "%s (%s); skipped", message, error)
            self._why_unrouted = (DROP_NOT_A_NUMBER, message)
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
        self._why_unrouted = (DROP_NO_CHART_GROUP, f"no chart group accepts {key!r}")
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
                message = (
                    f"metrics.json already has {MAX_CHARTS} charts (the ocms limit, some of "
                    f"them an earlier run's); chart {name!r} is not written"
                )
                self._warn_once("too-many:" + name, "%s", message)
                # No chart group can take the key here: the closest of the sidecar's reasons.
                self._why_unrouted = (DROP_NO_CHART_GROUP, message)
                return None
            chart = _Chart(name, chart_file_name(name), self.log_dir, [], group_index)
            self._add_chart(chart)
            self._layout_dirty = True
        return chart

    def _claim_column(self, chart: _Chart, key: str) -> Optional[int]:
        """The y-axis column for `key`: its sanitized name, suffixed `_2`, `_3`, ... when
        another key of this chart already sanitized to it. A resumed run matches columns
        by name: a key lands in the column it had before, unless the earlier run had keys
        that sanitized to one name (`x`, `x_2`, ...): metrics.json does not say which key
        held which of them, so this run's first-seen order decides, and that is said once.
        None (said once) when the chart already has MAX_SERIES_PER_CHART series."""
        base = sanitize_key(key)
        name, suffix = base, 1
        while name in chart.claimed:
            suffix += 1
            name = f"{base}_{suffix}"
        if name not in chart.y_axis and len(chart.y_axis) >= MAX_SERIES_PER_CHART:
            self._why_unrouted = (
                DROP_Y_AXIS_CAP,
                f"chart {chart.name!r} already has {MAX_SERIES_PER_CHART} series (the most a "
                f"chart may have); {key!r} is not written",
            )
            self._warn_once(
                "too-many-series:" + chart.name,
                "chart %r already has %d series (the most a chart may have); %r and any "
                "later new key of it are not written",
                chart.name,
                MAX_SERIES_PER_CHART,
                key,
            )
            return None
        if suffix > 1 and f"ambiguous:{chart.name}:{base}" not in self._warned:
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
        if name in chart.resumed:
            self._warn_if_ambiguous(chart, base)
        if name in chart.y_axis:  # a column of the run being resumed
            return chart.y_axis.index(name)
        chart.y_axis.append(name)
        self._layout_dirty = True
        self._fold_tallies()
        self._plans.clear()  # their row templates have the old width
        return len(chart.y_axis) - 1

    def _warn_if_ambiguous(self, chart: _Chart, base: str) -> None:
        suffixed = re.compile(re.escape(base) + r"_([2-9]|[1-9][0-9]+)")
        family = [name for name in chart.resumed if name == base or suffixed.fullmatch(name)]
        if len(family) > 1:
            self._warn_once(
                f"ambiguous:{chart.name}:{base}",
                "chart %r: the resumed columns %s were written by keys that sanitize to one "
                "name; metrics.json does not say which key held which, so this run assigns "
                "them in the order it meets its keys and cannot know that it matches",
                chart.name,
                ", ".join(family),
            )

    def _add_chart(self, chart: _Chart) -> None:
        self._charts.append(chart)
        self._charts.sort(key=lambda each: each.order)
        self._charts_by_name[chart.name] = chart

    # -- the directory ------------------------------------------------------------------

    def _take_directory(self, now: float) -> bool:
        """Create the directory and become its one writer: an advisory flock on the
        directory itself (no extra file; the kernel drops it when this process dies). The
        first time, also clear a dead recorder's temp files and resume its layout. False
        (said once, tried again a health-check interval later) when another live recorder
        holds it or the directory cannot be made."""
        if now - self._last_take_attempt < self.health_check_interval_s:
            return False
        self._last_take_attempt = now
        try:
            os.makedirs(self.log_dir, exist_ok=True)
            descriptor = self._lock_directory()
        except OSError as error:
            self._directory_refused = True
            self._warn_os_error("create the directory", error)
            return False
        self._directory_refused = False
        if descriptor is None:
            self._warn_once(
                "locked",
                "another recorder (a live process) is writing %s; this one writes nothing "
                "there while it does",
                self.log_dir,
            )
            return False
        self._lock_fd, self._owner = descriptor, True
        if not self._charts:
            _remove_stale_temp_files(self.log_dir)
            self._resume_layout()
        if not self._sidecar_resumed:
            self._sidecar_resumed = True  # once: a second take must not count it again
            self._resume_sidecar()
        return True

    def _lock_directory(self) -> Optional[int]:
        """The directory's descriptor, flock-ed; -1 where locks do not exist or the
        filesystem refuses them (written unlocked then); None when another holds it."""
        if fcntl is None:
            return -1
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
        descriptor = os.open(self.log_dir, flags)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return None
        except OSError:  # e.g. a network filesystem without flock: one writer unchecked
            os.close(descriptor)
            return -1
        return descriptor

    def _release_directory(self) -> None:
        self._owner = False
        self._last_take_attempt = -math.inf
        if self._lock_fd >= 0:
            descriptor, self._lock_fd = self._lock_fd, -1
            os.close(descriptor)  # closing the last descriptor drops the flock

    def _lock_is_on(self, directory: os.stat_result) -> bool:
        if self._lock_fd < 0:
            return True
        kept = os.fstat(self._lock_fd)
        return (kept.st_dev, kept.st_ino) == (directory.st_dev, directory.st_ino)

    # -- files ------------------------------------------------------------------------

    def _resume_layout(self) -> None:
        """Adopt the charts of an existing metrics.json, so a resumed run appends to them
        with the same columns instead of wiping them. Anything but a layout this recorder
        could have written (unreadable, not a regular file, too big, too deep, a chart whose
        file is not `<name>.csv`) means a fresh layout, said once."""
        try:
            document = json.loads(_read_layout_bytes(self._json_path).decode("utf-8"))
        except FileNotFoundError:
            return
        except Exception as error:  # OSError, ValueError, RecursionError (`[` x 100000)
            self._warn_once(
                "resume", "cannot read %s (%s); starting a new layout", self._json_path, error
            )
            return
        charts = _resumable_charts(document)
        if charts is None:
            self._warn_once(
                "resume",
                "%s is not a layout this recorder can append to; starting a new layout",
                self._json_path,
            )
            return
        group_order = {name: index for index, (name, _) in enumerate(self._groups)}
        for position, (name, y_axis) in enumerate(charts):
            order = group_order.get(name, len(self._groups) + position)
            chart = _Chart(name, chart_file_name(name), self.log_dir, list(y_axis), order)
            chart.trusted = True
            chart.declared = len(y_axis)
            chart.resumed = tuple(y_axis)
            self._add_chart(chart)

    def _resume_sidecar(self) -> None:
        """Carry an earlier run's record of dropped keys into this one (its keys are still
        missing from the CSVs this run appends to): same key and reason, one entry."""
        try:
            document = json.loads(_read_layout_bytes(os.path.join(self.log_dir, SIDECAR)))
        except FileNotFoundError:
            return
        except Exception as error:  # OSError, ValueError, RecursionError: a new record
            self._warn_once(
                "resume-sidecar", "cannot read %s (%s); a new one is written", SIDECAR, error
            )
            return
        if not (
            isinstance(document, dict)
            and document.get("format") == SIDECAR_FORMAT
            and document.get("version") == SIDECAR_VERSION
            and isinstance(document.get("dropped"), list)
        ):
            return
        for entry in document["dropped"][:MAX_SIDECAR_ENTRIES]:
            earlier = _drop_from_json(entry)
            if earlier is None:
                continue
            record = self._drops.get((earlier.key, earlier.reason))
            if record is None and len(self._drops) < MAX_SIDECAR_ENTRIES:
                self._drops[(earlier.key, earlier.reason)] = earlier
            elif record is not None:  # this recorder dropped it before it had the directory
                record.count += earlier.count
                record.first_step = earlier.first_step
                record.last_step = max(record.last_step, earlier.last_step)

    def _save_layout(self, now: float) -> None:
        """Rewrite metrics.json atomically, declaring of each chart only the columns its CSV
        has (or will have the instant after: a widened copy waits in a temp file, renamed
        right after metrics.json, so the two renames come back to back). So metrics.json is
        never ahead of its CSVs for longer than between two renames, and a resumed recorder
        repairs that order (it widens rows narrower than declared). What cannot be declared
        yet (a CSV that cannot be made or widened now, a big copy still running) keeps the
        layout dirty: retried a health-check interval later, or when the copy is done."""
        declared: List[Tuple[_Chart, int]] = []
        widened: List[Tuple[_Chart, str]] = []
        try:
            os.makedirs(self.log_dir, exist_ok=True)
            for chart in self._charts:
                if chart.y_axis:
                    width = self._stage_for_layout(chart, widened)
                    if width is not None:
                        declared.append((chart, width))
            text = layout_text((chart.name, chart.y_axis[:width]) for chart, width in declared)
            if text != self._layout_on_disk or widened:
                # Synced too when CSVs wait: then the rename need not flush, so the writer
                # goes straight on to the CSV renames instead of sleeping between them.
                _replace_atomically(self._json_path, [text.encode("utf-8")], sync=bool(widened))
                self._layout_on_disk = text
        except OSError as error:
            for chart, _ in widened:
                self._discard_widening(chart)
            self._layout_refused = True
            self._layout_retry_at = now + self.health_check_interval_s
            self._warn_os_error("write " + METRICS_JSON, error)
            return
        self._layout_refused = False
        for chart in self._charts:
            chart.declared = None
        for chart, width in declared:
            chart.declared = width
        for chart, temp_path in widened:
            copied_aside = chart.widening is not None and chart.widening.thread.ident is not None
            chart.widening = None
            try:
                os.replace(temp_path, chart.path)
                if copied_aside and chart.fd >= 0:
                    # The last descriptor of the replaced file: closing it frees its blocks,
                    # which takes tens of ms for a GB. Not on the caller's thread either.
                    threading.Thread(target=os.close, args=(chart.fd,), daemon=True).start()
                    chart.fd = -1
                chart.close()
                self._open(chart)
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.remove(temp_path)
                self._drop_file(chart, "widen " + chart.file_name, error)
        self._layout_dirty = any(
            chart.declared != len(chart.y_axis) for chart in self._charts if chart.y_axis
        )
        if self._layout_dirty:
            # While a copy runs, the next save is when it is done (_poll_widenings says).
            copying = any(chart.widening for chart in self._charts)
            self._layout_retry_at = math.inf if copying else now + self.health_check_interval_s
        self._flush_all()

    def _stage_for_layout(self, chart: _Chart, widened: List[Tuple[_Chart, str]]) -> Optional[int]:
        """How many of `chart`'s columns metrics.json may declare now (None: leave the chart
        out). Makes sure the CSV exists first; a CSV with fewer columns than the chart has
        gets a widened copy: made here when small (added to `widened`, renamed after
        metrics.json), started on a thread of its own when big (declared once done)."""
        width = len(chart.y_axis)
        if chart.fd < 0:
            try:
                if time.monotonic() < chart.retry_at:
                    raise OSError(errno.EAGAIN, "waiting to retry")
                self._open(chart)
            except OSError as error:  # this chart only; the others may still change
                if error.errno != errno.EAGAIN:
                    self._drop_file(chart, "open " + chart.file_name, error)
                return chart.declared if os.path.isfile(chart.path) else None
        if chart.disk_width is None or chart.disk_width == width:
            chart.disk_width = width  # an empty file takes any width
            return width
        if chart.disk_width > width:
            self._warn_wider(chart, width)
            chart.disk_width = width
            return width
        temp_path = self._widened_copy(chart, width)
        if temp_path is None:
            return chart.declared if chart.declared == chart.disk_width else None
        widened.append((chart, temp_path))
        return width

    def _widened_copy(self, chart: _Chart, width: int) -> Optional[str]:
        """A temp file holding the CSV's rows with `width` columns, or None while a copy on
        its own thread is running (or failed: said once, retried later)."""
        job = chart.widening
        if job is not None and job.width != width:
            if not job.done:
                return None  # another key came meanwhile: copy again, wider, once this ends
            self._discard_widening(chart)
            job = None
        if job is None:
            job = _Widening(chart.path, chart.disk_width, width)
            chart.widening = job
            if os.fstat(chart.fd).st_size > WIDEN_INLINE_BYTES:
                job.thread.start()
                self._copying = True
                return None
            job.copy()  # small: a few ms on this thread keep the renames in one log() call
        if not job.done:
            return None
        if job.error is not None or job.temp_path is None or not job.source_unchanged():
            error = job.error if isinstance(job.error, OSError) else None
            self._discard_widening(chart)
            if job.error is not None and not isinstance(job.error, OSError):
                raise job.error  # e.g. KeyboardInterrupt on this thread: not ours to keep
            chart.retry_at = time.monotonic() + self.health_check_interval_s
            if error is not None:
                self._drop_file(chart, "widen " + chart.file_name, error)
            return None
        return job.temp_path

    def _warn_wider(self, chart: _Chart, width: int) -> None:
        self._warn_once(
            "wider:" + chart.name,
            "%s has rows wider than its %d y-axis columns; appending anyway",
            chart.path,
            width,
        )

    def _discard_widening(self, chart: _Chart) -> None:
        if chart.widening is not None:
            job, chart.widening = chart.widening, None
            job.discard()

    def _poll_widenings(self) -> None:
        """A copy finished on its thread: declare it (and rename it) right away."""
        self._copying = False
        for chart in self._charts:
            if chart.widening is not None:
                if chart.widening.done:
                    self._layout_dirty = True
                    self._layout_retry_at = 0.0
                else:
                    self._copying = True

    def _keep(self, chart: _Chart, line: str) -> None:
        """A row that cannot be appended right now: keep it and try the chart. Bounded only
        while the disk refuses writes: rows that wait for a widening copy are all kept."""
        if len(chart.pending) >= MAX_PENDING_ROWS and (chart.refused or self._layout_refused):
            self._lose(f"rows of {chart.path}", int(line[: line.index(",")]))
            return
        chart.pending.append(line)
        self._pending_rows += 1
        if len(chart.pending) == 1:
            self._flush(chart)

    def _flush_all(self) -> None:
        for chart in self._charts:
            if chart.pending:
                self._flush(chart)
        if self._pending_rows:
            self._flush_at = time.monotonic() + self.health_check_interval_s

    def _flush(self, chart: _Chart) -> None:
        """Append the chart's waiting rows that its declared width holds, widened to it
        (a row logged before a column was added has fewer fields). Rows wider than
        declared wait for metrics.json; a failing write keeps them all."""
        if chart.widening is not None or chart.declared is None:
            return
        try:
            if chart.fd < 0:
                if time.monotonic() < chart.retry_at:
                    return
                self._open(chart)
            width = chart.declared
            if chart.disk_width is not None and chart.disk_width < width:
                # Rows narrower than declared: a crash's leftover between the two renames.
                temp_path = self._widened_copy(chart, width)
                if temp_path is None:
                    return
                chart.widening = None
                os.replace(temp_path, chart.path)
                chart.close()
                self._open(chart)
            elif chart.disk_width is not None and chart.disk_width > width:
                self._warn_wider(chart, width)
            chart.disk_width = width
            # The first row alone, then the rest: a disk that still refuses costs one row's
            # write per retry, not a join of every waiting row.
            for batch in (1, len(chart.pending)):
                ready = 0
                for line in chart.pending[:batch]:
                    if line.count(",") > width:
                        break
                    ready += 1
                if not ready:
                    return
                data = "".join(
                    line[:-1] + "," * (width - line.count(",")) + "\n"
                    for line in chart.pending[:ready]
                ).encode()
                written = os.write(chart.fd, data)
                if written != len(data):
                    self._write_rest(chart, data, written)
                chart.refused = False
                del chart.pending[:ready]
                self._pending_rows -= ready
                if not chart.pending and self._lost:
                    self._report_lost(f"rows of {chart.path}")
        except OSError as error:
            self._drop_file(chart, "write " + chart.file_name, error)

    def _open(self, chart: _Chart) -> None:
        """Open the chart's CSV for appending, creating it; cut a partial last line. A file
        that is not a regular one (a FIFO, a symlink, a device) or, for a chart metrics.json
        did not describe, one that has rows, is moved aside first: a chart file is always
        this chart's own regular `<name>.csv`."""
        os.makedirs(self.log_dir, exist_ok=True)
        try:
            info: Optional[os.stat_result] = os.lstat(chart.path)
        except FileNotFoundError:
            info = None
        if info is not None and (
            not stat.S_ISREG(info.st_mode) or (not chart.trusted and info.st_size)
        ):
            aside = f"{chart.path}.old-{int(time.time())}"
            os.replace(chart.path, aside)
            self._warn_once(
                "aside:" + chart.name,
                "%s was not this chart's file (not described by metrics.json, or not a "
                "regular file); moved it to %s",
                chart.path,
                aside,
            )
        chart.disk_width = _repair_tail(chart.path)
        descriptor = os.open(chart.path, _OPEN_FLAGS | _NO_SURPRISES, 0o644)
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise OSError(errno.EINVAL, "not a regular file", chart.path)
        chart.fd = descriptor
        chart.trusted = True

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

    def _drop_file(self, chart: _Chart, action: str, error: OSError) -> None:
        # Reopening repairs the tail, so a half-written row never glues onto the next one.
        self._warn_os_error(action, error)
        chart.refused = True
        with contextlib.suppress(OSError):
            chart.close()
        chart.retry_at = time.monotonic() + self.health_check_interval_s
        self._flush_at = min(self._flush_at, chart.retry_at)

    def _lose(self, what: str, step: int, bounded: bool = True) -> None:
        """A row (or snapshot) dropped: too many wait for a disk that refuses them
        (`bounded`), or the interpreter exits with it still refused."""
        lost = self._lost.get(what)
        if lost is None:
            lost = self._lost[what] = _LostRows()
        lost.add(step)
        if not bounded:
            return
        self._warn_once(
            "pending-full:" + what,
            "%d %s are waiting in memory while the disk refuses them; further ones are "
            "dropped until it takes them again (how many and which steps is said then)",
            MAX_PENDING_ROWS,
            what,
        )

    def _report_lost(self, what: Optional[str] = None) -> None:
        """Say how many rows were dropped and at which steps (all of them when `what` is
        None), once they are known: the disk took rows again, or the run ends."""
        for each in [what] if what is not None else list(self._lost):
            lost = self._lost.pop(each, None)  # type: ignore[arg-type]
            if lost is not None:
                logger.warning(
                    "%d %s were dropped while the disk refused them: steps %s",
                    lost.count,
                    each,
                    lost.steps_text(),
                )
                self._warned.discard("pending-full:" + each)  # a later episode is said too

    def _check_health(self, now: float) -> None:
        """Recreate what someone deleted or moved away under a running recorder: the
        directory (locked anew), metrics.json, a CSV (the path no longer names the file kept
        open). Also notice a copy that finished on its thread, and write the sidecar if a
        new dropped key waits for it."""
        self._next_health_check = now + self.health_check_interval_s
        self._poll_widenings()
        if self._owner:
            try:
                moved = not self._lock_is_on(os.stat(self.log_dir))
            except OSError:
                moved = True
            if moved:
                self._release_directory()
                if not self._take_directory(now):
                    for chart in self._charts:  # their files are gone with the directory
                        chart.close()
                        chart.disk_width = None
                    return
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
            self._layout_on_disk = None
            self._layout_dirty = True
            self._layout_retry_at = now
        if self._sidecar_dirty and self._owner:
            self._save_sidecar(now)

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
        """Wait for a widening still copying, write what waits (metrics.json, rows, the
        sidecar), close the files and let go of the directory. Safe to call twice; a later
        log() takes the directory and opens the files again. Rows still waiting are said
        once (they stay in memory: a later log(), or the interpreter's exit, tries again)."""
        self._finish(at_exit=False)

    def _finish(self, at_exit: bool) -> None:
        if not self.active:
            return
        try:
            if not self._owner:
                if not self._has_work():
                    return
                self._last_take_attempt = -math.inf  # one more try, now
                if not self._take_directory(time.monotonic()):
                    if at_exit:
                        self._lose_what_waits()
                    return
            if self._early:
                self._write_early(time.monotonic())
            for chart in self._charts:
                chart.retry_at = 0.0  # one more try of every file, now
            # Twice at most: a copy that ended at a width that is no longer the chart's
            # starts one more, at the final width.
            for _ in range(3):
                for chart in self._charts:
                    if chart.widening is not None:
                        chart.widening.wait()
                self._poll_widenings()
                if self._layout_dirty:
                    self._save_layout(time.monotonic())
                if not any(chart.widening for chart in self._charts):
                    break
            self._flush_all()
            if self._drops:
                self._save_sidecar(time.monotonic())
            if self._pending_rows and at_exit:
                self._lose_what_waits()
            elif self._pending_rows:
                self._warn_once(
                    "finish-pending",
                    "finish(): %d rows could not be written to %s (they stay in memory; a "
                    "later log() or the interpreter's exit tries again)",
                    self._pending_rows,
                    self.log_dir,
                )
            self._report_lost()
            for chart in self._charts:
                self._discard_widening(chart)
                chart.close()
            self._release_directory()
        except Exception as error:
            self._warn_once("finish", "finish() failed: %r", error)

    def _has_work(self) -> bool:
        """Something waits to be written: rows, snapshots, metrics.json, a copy, the sidecar."""
        return bool(
            self._pending_rows
            or self._early
            or self._layout_dirty
            or self._sidecar_dirty
            or any(chart.widening is not None for chart in self._charts)
        )

    def _lose_what_waits(self) -> None:
        """The interpreter exits and the disk still refuses: what waits is lost, said exactly."""
        for step_text, _ in self._early:
            self._lose(f"snapshots for {self.log_dir}", int(step_text), bounded=False)
        self._early = []
        for chart in self._charts:
            for line in chart.pending:
                self._lose(f"rows of {chart.path}", int(line[: line.index(",")]), bounded=False)
            chart.pending = []
        self._pending_rows = 0
        self._report_lost()

    def __del__(self) -> None:
        try:
            if self.active and self._has_work():
                self._finish_when_collected()
                return
            for chart in self._charts:
                chart.close()
            self._release_directory()
        except Exception:  # half-built, or the interpreter is shutting down
            pass

    def _finish_when_collected(self) -> None:
        """Collected without finish(): finish now, or, while a big copy still runs, on a
        thread of its own (not a daemon: the interpreter waits for it before exiting). What
        the disk still refuses after that is tried once more at exit."""
        _ORPHANED.add(self)
        if any(chart.widening is not None and not chart.widening.done for chart in self._charts):
            try:
                threading.Thread(target=self._finish_orphan, name="ocms-recorder-finish").start()
                return
            except RuntimeError:  # the interpreter is shutting down: finish on this thread
                pass
        self._finish_orphan()

    def _finish_orphan(self) -> None:
        self._finish(at_exit=False)
        if not self._has_work():
            _ORPHANED.discard(self)

    def _become_inherited(self) -> None:
        """In a forked child: the parent's recorder must neither hold the directory's lock
        (closing the child's copy of the descriptor leaves the parent's lock alone; an
        unlock would not) nor write the parent's waiting rows, now or at exit."""
        descriptors = [chart.fd for chart in self._charts] + [self._lock_fd]
        for chart in self._charts:
            chart.fd = -1
            chart.pending = []
            chart.widening = None  # the parent's copy: its temp file is the parent's too
        self._lock_fd = -1
        for descriptor in descriptors:
            if descriptor >= 0:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
        self.active = self._owner = False
        self._inherited = True
        self._pending_rows = 0
        self._early = []
        self._layout_dirty = self._sidecar_dirty = self._copying = False
        self._mirror = None

    # -- the sidecar ----------------------------------------------------------------------

    def _save_sidecar(self, now: float) -> None:
        """Write `.ocms-recorder.json` atomically: the keys not written and why, the chart
        groups, the recorder's version. Never stops the metrics: a failure is said once and
        retried with the next health check."""
        self._sidecar_written_at = now
        path = os.path.join(self.log_dir, SIDECAR)
        try:
            self._fold_tallies()
            if self._rules is None:
                self._rules = [
                    {"chart": name, "accepts": rule_text(accepts)} for name, accepts in self._groups
                ]
            document = {
                "format": SIDECAR_FORMAT,
                "version": SIDECAR_VERSION,
                "recorder": __version__,
                "chart_groups": self._rules,
                "dropped": [record.as_json() for record in self._drops.values()],
            }
            text = json.dumps(document, indent=2, allow_nan=False) + "\n"
            _replace_atomically(path, [text.encode("utf-8")])
        except Exception as error:
            self._warn_once(
                "sidecar",
                "cannot write %s (%s); the metrics are written all the same, this record of "
                "dropped keys is tried again later",
                path,
                error,
            )
            return
        self._sidecar_dirty = False

    def __enter__(self) -> "OcmsRecorder":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.finish()

    def _warn_os_error(self, action: str, error: OSError) -> None:
        # One warning per kind of failure (a full disk fails every file the same way).
        self._warn_once(
            f"os:{error.errno}",
            "cannot %s in %s (%s); rows wait in memory (up to %d per chart) until it works again",
            action,
            self.log_dir,
            error,
            MAX_PENDING_ROWS,
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


# Recorders alive at interpreter exit are finished then: rows that waited in memory (for a
# widening copy, for the disk) are written even by a script that never calls finish().
_UNFINISHED: "weakref.WeakSet[OcmsRecorder]" = weakref.WeakSet()
# Recorders collected with work left (a copy still running, a disk still refusing), kept
# alive until it is done or the interpreter exits.
_ORPHANED: "Set[OcmsRecorder]" = set()


@atexit.register
def _finish_at_exit() -> None:
    for recorder in set(_UNFINISHED) | _ORPHANED:
        with contextlib.suppress(Exception):
            if recorder.active and recorder._has_work():
                recorder._finish(at_exit=True)
    _ORPHANED.clear()


def _forget_in_child() -> None:
    """After fork(), in the child: every recorder it inherited becomes the parent's alone."""
    for recorder in set(_UNFINISHED) | _ORPHANED:
        with contextlib.suppress(Exception):
            recorder._become_inherited()
    _ORPHANED.clear()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork()
    os.register_at_fork(after_in_child=_forget_in_child)


def rule_text(accepts: Callable[[str], bool]) -> str:
    """A chart group's predicate as readable text: the format's rule for a default group,
    a lambda's own source when it can be found on one line, else its qualified name."""
    try:
        known = DEFAULT_RULES.get(accepts)
    except TypeError:  # an unhashable callable
        known = None
    if known is not None:
        return known
    kind = type(accepts)
    try:  # a user's callable may answer attribute lookups with anything, or raise
        name = getattr(accepts, "__qualname__", None)
        module = getattr(accepts, "__module__", None)
        if not (isinstance(name, str) and isinstance(module, str)):
            name, module = kind.__qualname__ + " object", kind.__module__
        code = getattr(accepts, "__code__", None)
    except Exception:
        return f"{kind.__module__}.{kind.__qualname__} object"
    if name.endswith("<lambda>") and isinstance(code, type(rule_text.__code__)):
        with contextlib.suppress(Exception):
            source = _lambda_source(code)
            if source is not None:
                return source
    return f"{module}.{name}"


def _lambda_source(code: Any) -> Optional[str]:
    """The text of the one lambda on its first source line whose body compiles to `code`
    (None if the line cannot be read, or no single lambda there matches): a prefix of the
    line from `lambda` that parses alone as a lambda expression."""
    import ast  # here: only a sidecar naming a user's predicate needs it
    import linecache

    line = linecache.getline(code.co_filename, code.co_firstlineno)
    if not line or len(line) > 1000:
        return None
    found = []
    start = line.find("lambda")
    while start >= 0:
        for end in range(len(line.rstrip()), start, -1):
            candidate = line[start:end]
            try:
                tree = ast.parse(candidate, mode="eval")
            except SyntaxError:
                continue
            if isinstance(tree.body, ast.Lambda):  # not "lambda k: a, b" (a tuple)
                found.append(ast.get_source_segment(candidate, tree.body) or candidate)
                break
        start = line.find("lambda", start + 1)
    matching = [text for text in found if _compiles_to(text, code)]
    if len(matching) == 1:
        return matching[0]
    # A closure compiles differently alone (its free names become globals): the one lambda
    # of its line is still its text. Otherwise (an edited file, say) the name is honest.
    return found[0] if len(found) == 1 and code.co_freevars else None


def _compiles_to(text: str, code: Any) -> bool:
    compiled = compile(text, "<rule>", "eval")
    inner = [each for each in compiled.co_consts if hasattr(each, "co_code")]
    return len(inner) == 1 and inner[0].co_code == code.co_code


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


def _resumable_charts(document: Any) -> Optional[List[Tuple[str, List[str]]]]:
    """(name, y-axis) of each chart of a metrics.json document the recorder may append to:
    the format's structure and limits, each chart's file its own `<name>.csv`. None
    otherwise (then the recorder starts a fresh layout)."""
    if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
        return None
    entries = document.get("charts")
    if not isinstance(entries, list) or len(entries) > MAX_CHARTS:
        return None
    charts: List[Tuple[str, List[str]]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        name, y_axis = entry.get("name"), entry.get("y_axis")
        if not (
            is_valid_name(name)
            and len(name) <= MAX_CHART_NAME_LENGTH
            and entry.get("file") == chart_file_name(name)
            and isinstance(y_axis, list)
            and len(y_axis) <= MAX_SERIES_PER_CHART
            and all(is_valid_name(each) for each in y_axis)
            and len(set(y_axis)) == len(y_axis)
            and name not in {known for known, _ in charts}
        ):
            return None
        charts.append((name, y_axis))
    return charts


def _drop_from_json(entry: Any) -> Optional[_Drop]:
    """An entry of an earlier sidecar's "dropped" list, if it has the layout written."""
    if not isinstance(entry, dict):
        return None
    key, reason, message = entry.get("key"), entry.get("reason"), entry.get("message")
    numbers = [entry.get(name) for name in ("first_step", "last_step", "count")]
    if not (
        (key is None) == (reason == DROP_STEP_TOO_LARGE)
        and (key is None or isinstance(key, str))
        and reason in DROP_REASONS
        and isinstance(message, str)
        and all(type(number) is int and number >= 0 for number in numbers)
    ):
        return None
    record = _Drop(key, reason, numbers[0], message)  # type: ignore[arg-type]
    record.last_step, record.count = numbers[1], numbers[2]  # type: ignore[assignment]
    return record


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
        if len(name) > MAX_CHART_NAME_LENGTH:
            raise ValueError(
                f"chart name {name[:20]!r}... is {len(name)} characters long; at most "
                f"{MAX_CHART_NAME_LENGTH} (its file name and a temp file beside it must fit "
                "a 255-byte file name)"
            )
        if name in seen:
            raise ValueError(f"chart name {name!r} is used by two chart groups")
        seen.add(name)
