"""`ocms-tui scan`: find where a training project logs metrics, without running it.

Reads every Python file of a project as text and parses it with `ast` (never imports or
runs it), finds the metric-logging sites the integration guide tells people to look for,
names the framework, and shows what the recorder would chart: the plan comes from the
recorder's own routing (`OcmsRecorder.preview`), so groups, sanitizing, collisions and the
6-chart limit are the recorder's, not a copy. No Textual here.
"""

from __future__ import annotations

import ast
import contextlib
import io
import logging
import os
import stat
import tokenize
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ocms_recorder import (
    DEFAULT_CHART_GROUPS,
    MAX_CHARTS,
    ChartGroup,
    OcmsRecorder,
)

from ocms_tui.format.key_families import OTHER_CHART, suggested_chart
from ocms_tui.onboard.scan_sites import (
    ACCELERATOR,
    HF_TRAINER,
    LIGHTNING_CLI,
    LIGHTNING_TRAINER,
    MM_CUSTOM_HOOKS,
    MM_DEFAULT_HOOKS,
    SELF_LOG,
    SELF_LOG_DICT,
    Site,
    find_sites,
)

# Directories that hold no code of the project: version control, environments, builds,
# and what `ocms-tui init` itself copies in.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "__pycache__",
        "node_modules",
        "site-packages",
        "dist-packages",
        "build",
        "dist",
        "venv",
        ".venv",
        "migrate_to_cloudrobo",
    }
)
MAX_FILE_BYTES = 2_000_000  # a training script is far smaller; a bigger .py is data
MAX_FILES = 20_000  # bounds a scan of a mistaken root (a home directory)
TEXT_ROWS = 20  # rows per list in the text output: read in ten seconds
MAX_DEPTH = 64  # directories below the root; os.walk recurses per level (limit near 1000)


@dataclass(frozen=True)
class PlanEntry:
    key: str
    chart: str | None
    y_axis: str | None


@dataclass(frozen=True)
class SuggestedGroup:
    """A chart of the suggested chart_groups: the default group of that name (if any)
    widened by exact keys."""

    chart: str
    extends_default: bool
    keys: tuple[str, ...]


@dataclass
class ScanResult:
    root: Path
    framework: str | None
    sites: list[Site]
    plan: list[PlanEntry]
    suggested_chart_groups: list[SuggestedGroup] | None
    suggested_plan: list[PlanEntry] | None
    skipped: list[tuple[str, str]]  # (file, why it was not read)
    files_read: int

    @property
    def found(self) -> bool:
        return bool(self.sites)

    def as_json(self) -> dict[str, object]:
        def plan_json(plan: list[PlanEntry] | None) -> list[dict[str, object]] | None:
            if plan is None:
                return None
            return [{"key": e.key, "chart": e.chart, "y_axis": e.y_axis} for e in plan]

        groups = self.suggested_chart_groups
        return {
            "root": str(self.root),
            "framework": self.framework,
            "files_read": self.files_read,
            "sites": [site.as_json() for site in self.sites],
            "plan": plan_json(self.plan),
            "suggested_chart_groups": None
            if groups is None
            else [
                {"chart": g.chart, "extends_default": g.extends_default, "keys": list(g.keys)}
                for g in groups
            ],
            "suggested_plan": plan_json(self.suggested_plan),
            "suggested_chart_groups_source": None
            if groups is None
            else chart_groups_source(groups),
            "skipped": [{"file": name, "reason": reason} for name, reason in self.skipped],
        }


# ---------------------------------------------------------------------------------------
# Reading the project
# ---------------------------------------------------------------------------------------


def python_files(root: Path, skipped: list[tuple[str, str]]) -> Iterator[Path]:
    """The project's .py files, in a stable order. Never follows a symlink (no loops, no
    files outside the project); virtual environments and build output are left out."""
    count = 0

    def unreadable(error: OSError) -> None:
        name = relative_name(root, Path(error.filename)) if error.filename else "."
        skipped.append((name or ".", error.strerror or str(error)))

    for directory, dir_names, file_names in os.walk(root, onerror=unreadable):
        if dir_names and len(Path(directory).relative_to(root).parts) >= MAX_DEPTH:
            skipped.append((relative_name(root, Path(directory)), "nested too deeply"))
            dir_names.clear()  # os.walk recurses per level: a deeper tree would crash it
        dir_names[:] = sorted(
            name
            for name in dir_names
            if name not in SKIPPED_DIRS
            and not name.endswith(".egg-info")
            and not os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
        )
        for name in sorted(file_names):
            if not name.endswith(".py"):
                continue
            count += 1
            if count > MAX_FILES:
                skipped.append((relative_name(root, Path(directory, name)), "too many files"))
                return
            yield Path(directory, name)


def relative_name(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def read_project_file(path: Path) -> bytes:
    """The bytes of a regular file of the project, not through a symlink, at most
    MAX_FILE_BYTES. Raises OSError (unreadable, a symlink: ELOOP) or ValueError (a FIFO,
    a device, too large) instead of blocking or reading without end."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags)  # O_NONBLOCK: a FIFO named x.py must not block us
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise ValueError("not a regular file")
        if status.st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
    return data


def read_source(path: Path) -> str:
    """The file's text, decoded as Python decodes source (PEP 263 cookie, else UTF-8).
    Raises ValueError with the reason when it is not a readable source file."""
    data = read_project_file(path)
    if b"\x00" in data:
        raise ValueError("binary file (NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot decode: {error}") from None


def parse_source(text: str, name: str) -> ast.Module:
    """`ast.parse`, with every way a hostile file fails it turned into ValueError."""
    try:
        return ast.parse(text, filename=name)
    except SyntaxError as error:
        raise ValueError(f"does not parse (line {error.lineno}: {error.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ValueError("does not parse (nested too deeply)") from None


# ---------------------------------------------------------------------------------------
# The project: framework, plan, suggestions
# ---------------------------------------------------------------------------------------


def detect_framework(sites: Sequence[Site], imports: set[str]) -> str | None:
    """The framework to integrate with, most specific first."""
    kinds = {site.kind for site in sites}
    if not kinds:
        return None
    if kinds & {MM_CUSTOM_HOOKS, MM_DEFAULT_HOOKS}:
        return "mmengine"
    if HF_TRAINER in kinds:
        return "hf"
    if kinds & {LIGHTNING_TRAINER, LIGHTNING_CLI, SELF_LOG, SELF_LOG_DICT}:
        return "lightning"
    if ACCELERATOR in kinds or "accelerate" in imports:
        return "accelerate"
    return "custom"


@contextlib.contextmanager
def _quiet_recorder() -> Iterator[None]:
    """The recorder says 'matches no chart group' once per key: right for a training run,
    noise for a preview that reports the same thing in its plan."""
    recorder_logger = logging.getLogger("ocms_recorder")
    was_disabled, recorder_logger.disabled = recorder_logger.disabled, True
    try:
        yield
    finally:
        recorder_logger.disabled = was_disabled


def plan_keys(keys: Sequence[str], chart_groups: list[ChartGroup] | None = None) -> list[PlanEntry]:
    """Where the recorder would write each key, asked of the recorder itself."""
    with _quiet_recorder():
        recorder = OcmsRecorder(enabled=False, chart_groups=chart_groups, mirror_to_ocms=False)
        return [PlanEntry(*route) for route in recorder.preview(keys)]


def suggest_chart_groups(plan: Sequence[PlanEntry]) -> list[SuggestedGroup] | None:
    """Chart groups that keep every key within MAX_CHARTS charts, or None when the
    defaults already keep them all. The default groups stay (keys the scan cannot see, like
    a Trainer's own, still reach them); a dropped key widens the default chart of its
    family, else a chart named after its prefix (`reward/mean` -> `reward`)."""
    dropped = [entry.key for entry in plan if entry.chart is None]
    if not dropped:
        return None
    used = {entry.chart for entry in plan if entry.chart is not None}
    extra: dict[str, list[str]] = {}
    for key in dropped:
        extra.setdefault(suggested_chart(key), []).append(key)
    defaults = [name for name, _ in DEFAULT_CHART_GROUPS]
    new_charts = [name for name in extra if name not in defaults]
    # Default charts that nothing found uses give way first when the limit is reached.
    keep = [name for name in defaults if name in used or name in extra]
    spare = [name for name in defaults if name not in keep]
    room = MAX_CHARTS - len(keep)
    if len(new_charts) > room:
        # The last chart that fits takes the rest; with no room at all they stay dropped
        # (the suggested plan shows them unplaced).
        kept = [name for name in new_charts[: max(room - 1, 0)] if name != OTHER_CHART]
        folded = [key for name in new_charts if name not in kept for key in extra.pop(name)]
        new_charts = kept
        if room > 0:
            extra[OTHER_CHART] = folded
            new_charts.append(OTHER_CHART)
    spare_room = room - len(new_charts)
    charts = [name for name in defaults if name in keep or name in spare[:spare_room]]
    groups = [SuggestedGroup(name, True, tuple(extra.get(name, ()))) for name in charts]
    groups += [SuggestedGroup(name, False, tuple(extra[name])) for name in new_charts]
    return groups


def chart_groups_from(groups: Sequence[SuggestedGroup]) -> list[ChartGroup]:
    """The suggestion as real chart groups (what chart_groups_source() writes as code)."""
    defaults = dict(DEFAULT_CHART_GROUPS)
    return [
        (
            group.chart,
            _predicate(defaults[group.chart] if group.extends_default else None, group.keys),
        )
        for group in groups
    ]


def _predicate(default: Callable[[str], bool] | None, keys: Sequence[str]) -> Callable[[str], bool]:
    accepted = frozenset(keys)
    if default is None:
        return accepted.__contains__
    return lambda key: default(key) or key in accepted


def chart_groups_source(groups: Sequence[SuggestedGroup], indent: str = "") -> str:
    """Python source of the suggestion, for a training script that imports the recorder."""
    lines = [f"{indent}chart_groups = ["]
    for group in groups:
        keys = "{" + ", ".join(repr(key) for key in group.keys) + "}"
        if group.extends_default and group.keys:
            test = f"_ocms_default[{group.chart!r}](k) or k in {keys}"
        elif group.extends_default:
            test = f"_ocms_default[{group.chart!r}](k)"
        else:
            test = f"k in {keys}"
        lines.append(f"{indent}    ({group.chart!r}, lambda k: {test}),")
    lines.append(f"{indent}]")
    return "\n".join(lines)


def scan_project(root: Path) -> ScanResult:
    """Scan a project directory (which must exist) without importing anything of it."""
    root = Path(root)
    skipped: list[tuple[str, str]] = []
    sites: list[Site] = []
    imports: set[str] = set()
    files_read = 0
    for path in python_files(root, skipped):
        name = relative_name(root, path)
        if path.is_symlink():
            skipped.append((name, "symbolic link (not followed)"))
            continue
        try:
            module = parse_source(read_source(path), name)
            found, file_imports = find_sites(module, name)
        except (OSError, ValueError) as error:
            skipped.append(
                (
                    name,
                    str(error) if isinstance(error, ValueError) else error.strerror or str(error),
                )
            )
            continue
        files_read += 1
        sites.extend(found)
        imports |= file_imports
    keys = list(dict.fromkeys(key for site in sites for key in site.keys))
    plan = plan_keys(keys)
    suggestion = suggest_chart_groups(plan)
    suggested_plan = None if suggestion is None else plan_keys(keys, chart_groups_from(suggestion))
    return ScanResult(
        root=root,
        framework=detect_framework(sites, imports),
        sites=sites,
        plan=plan,
        suggested_chart_groups=suggestion,
        suggested_plan=suggested_plan,
        skipped=sorted(skipped),
        files_read=files_read,
    )


# ---------------------------------------------------------------------------------------
# Text output
# ---------------------------------------------------------------------------------------


def dropped_keys(plan: Sequence[PlanEntry] | None) -> list[str]:
    """The keys a plan leaves unwritten (no chart group accepts them, or no room)."""
    return [entry.key for entry in plan or () if entry.chart is None]


def drop_lines(result: ScanResult) -> list[str]:
    """Which keys the recorder's default chart groups would drop, and whether the
    suggested groups (what `init` writes) keep them: said before anything is written."""
    dropped = dropped_keys(result.plan)
    if not dropped:
        return []
    names = ", ".join(repr(key) for key in dropped[:TEXT_ROWS])
    more = f" and {len(dropped) - TEXT_ROWS} more" if len(dropped) > TEXT_ROWS else ""
    lines = [f"the default chart groups would drop {len(dropped)} key(s): {names}{more}"]
    still = dropped_keys(result.suggested_plan)
    if still:
        lines.append(
            f"  the suggested chart_groups still drop {len(still)} (more than "
            f"{MAX_CHARTS} charts): " + ", ".join(repr(key) for key in still[:TEXT_ROWS])
        )
    else:
        lines.append("  the suggested chart_groups below keep every one of them")
    return lines


def format_text(result: ScanResult) -> str:
    """A table a person reads in ten seconds. Every file-controlled text is escaped."""
    from ocms_tui.follow.report import printable

    lines = [f"framework: {result.framework or 'none found'}   ({result.files_read} files read)"]
    lines += drop_lines(result)
    if result.sites:
        lines.append(f"sites ({len(result.sites)}):")
        rows = [
            (
                f"{site.file}:{site.line}",
                site.call,
                site.function,
                ", ".join(site.keys) or "-",
            )
            for site in result.sites[:TEXT_ROWS]
        ]
        lines += _table(rows, ("where", "call", "function", "keys"))
        lines += _more(len(result.sites))
    else:
        lines.append("no metric-logging site found")
    if result.plan:
        lines.append("plan (default chart groups):")
        lines += _table(
            [(e.key, e.chart or "-", e.y_axis or "not written") for e in result.plan[:TEXT_ROWS]],
            ("key", "chart", "y_axis"),
        )
        lines += _more(len(result.plan))
    if result.suggested_chart_groups is not None:
        lines.append("suggested chart_groups (keep every key):")
        lines.append("  _ocms_default = dict(DEFAULT_CHART_GROUPS)")
        lines += chart_groups_source(result.suggested_chart_groups, "  ").splitlines()
    lines += [f"skipped {name}: {reason}" for name, reason in result.skipped[:TEXT_ROWS]]
    lines += _more(len(result.skipped))
    return "\n".join(printable(line) for line in lines) + "\n"


def _more(count: int) -> list[str]:
    """The line that says how many rows a text list leaves out."""
    if count <= TEXT_ROWS:
        return []
    return [f"  ... and {count - TEXT_ROWS} more (--format json lists them all)"]


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
