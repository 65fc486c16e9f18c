"""TensorBoard event files, read without TensorFlow.

An event file is a sequence of TFRecords: `length (u64 LE) | masked CRC32C of length (u32) |
data | masked CRC32C of data (u32)`, each data an `Event` protobuf. Scalars arrive as a
summary value's `simple_value` (TF1, tensorboardX, torch's default) or as a scalar float
tensor (TF2's `tf.summary.scalar`, `new_style=True`): `dtype` plus `tensor_content` or
`float_val`/`double_val`/`half_val`.

The reader streams the file in chunks (memory bounded by the chunk, not the file), walks
the records in Python but checks their checksums with numpy, a column of bytes at a time
over all records of one length, and parses the events with protobuf's C parser against a
minimal schema built here (only the fields read; no TensorBoard or TensorFlow needed).
A last record cut short is a run still writing: not an error, read again later.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ocms_tui.sources.common import (
    CappedProblems,
    SeriesBuilder,
    Source,
    SourceError,
    SourceKind,
    open_regular_file,
)
from ocms_tui.sources.tensorboard_records import (
    FOOTER_BYTES,
    HEADER_BYTES,
    LARGEST_RECORD,
    decode_simple_values,
    decode_tag,
    event_parser,
    masked_crc32c,
    stored_u32,
    tensor_scalar,
    walk_records,
)

READ_CHUNK_BYTES = 4 << 20
EVENT_FILE_MARKER = "tfevents"
MAX_SEARCH_DEPTH = 3
MAX_EVENT_FILES = 10_000


class EventFileReader:
    """One event file, read from where the last `read()` stopped (files only grow)."""

    def __init__(self, path: Path, series_suffix: str = "") -> None:
        self.path = path
        self.series_suffix = series_suffix  # "/<subdirectory>" for a run's subdirectory
        self.offset = 0
        self.records = 0  # records whose checksum matched
        self.problems: list[str] = []
        self.broken = False  # a bad length checksum: nothing after it can be trusted
        self.foreign = False  # not an event file at all (or not a regular file): skipped
        self.incomplete_tail = False
        self.skipped_tags: dict[str, str] = {}  # tag -> why it is not a scalar
        self._tags: dict[bytes, str] = {}
        self._checksum_failures = CappedProblems(f"{path}: data checksum mismatches")

    def read(self, builder: SeriesBuilder) -> None:
        """Read every complete record after `offset` into `builder`."""
        if self.broken:
            return
        fd = open_regular_file(self.path)
        try:
            size = os.fstat(fd).st_size
            if size < self.offset:
                self._fail(f"shrank from {self.offset} to {size} bytes; not read again")
                return
            pending = b""
            position = self.offset
            os.lseek(fd, position, os.SEEK_SET)
            while not self.broken:
                chunk = os.read(fd, READ_CHUNK_BYTES)
                if not chunk:
                    break
                data = pending + chunk if pending else chunk
                consumed, skip_to = self._read_records(data, builder)
                position += consumed
                self.offset = position
                pending = data[consumed:]
                if skip_to is not None:  # a record too large to parse: step over it
                    if skip_to > size:
                        break  # still being written
                    position = self.offset = skip_to
                    os.lseek(fd, position, os.SEEK_SET)
                    pending = b""
            self.incomplete_tail = not self.broken and self.offset < size
        finally:
            os.close(fd)

    def checksum_problems(self) -> list[str]:
        return self._checksum_failures.lines()

    def _fail(self, message: str) -> None:
        self.broken = True
        self.problems.append(f"{self.path}: {message}")

    def _read_records(self, data: bytes, builder: SeriesBuilder) -> tuple[int, int | None]:
        """Parse the complete records at the start of `data`; returns (bytes consumed,
        file offset to skip to when a large record stopped the walk)."""
        starts, lengths, end, large_length = walk_records(data)
        array = np.frombuffer(data, dtype=np.uint8)
        # The header after the last complete record is checked too: a large record's before
        # it is stepped over, a cut-short one's before waiting for the rest of it.
        has_next_header = end + HEADER_BYTES <= len(data)
        header_starts = np.array(starts + [end] * has_next_header, dtype=np.int64)
        if len(header_starts):
            stored = stored_u32(array, header_starts + 8)
            bad = np.flatnonzero(stored != masked_crc32c(array, header_starts, 8))
            if len(bad):
                first_bad = int(bad[0])
                offset = self.offset + int(header_starts[first_bad])
                if offset == 0:
                    raise SourceError(
                        f"{self.path}: not a TensorBoard event file (no TFRecord at its start)"
                    )
                self._fail(f"offset {offset}: length checksum mismatch; the rest is not read")
                starts, lengths = starts[:first_bad], lengths[:first_bad]
                end, large_length = int(header_starts[first_bad]), None
        if large_length is not None and large_length > LARGEST_RECORD:
            self._fail(f"offset {self.offset + end}: record length {large_length} is not plausible")
            large_length = None
        self._parse_checked(data, array, starts, lengths, builder)
        if large_length is None:
            return end, None
        return end, self.offset + end + HEADER_BYTES + large_length + FOOTER_BYTES

    def _parse_checked(
        self,
        data: bytes,
        array: np.ndarray,
        starts: list[int],
        lengths: list[int],
        builder: SeriesBuilder,
    ) -> None:
        if not starts:
            return
        start_array = np.array(starts, dtype=np.int64)
        length_array = np.array(lengths, dtype=np.int64)
        valid = np.ones(len(starts), dtype=bool)
        for length in np.unique(length_array):
            group = np.flatnonzero(length_array == length)
            data_starts = start_array[group] + HEADER_BYTES
            stored = stored_u32(array, data_starts + length)
            valid[group] = stored == masked_crc32c(array, data_starts, int(length))
        for index in np.flatnonzero(~valid):
            self._checksum_failures.add(
                f"{self.path}: offset {self.offset + starts[index]}: data checksum "
                "mismatch; record skipped"
            )
        fast = [
            decode_simple_values(array, start_array[group] + HEADER_BYTES, int(length), group)
            for length in np.unique(length_array)
            if len(group := np.flatnonzero(valid & (length_array == length)))
        ]
        decoded = np.zeros(len(starts), dtype=bool)
        for records, _, _, _, _ in fast:
            decoded[records] = True
        slow = self._parse_slowly(data, starts, lengths, np.flatnonzero(valid & ~decoded))
        self.records += int(valid.sum())
        self._collect(fast, slow, builder)

    def _parse_slowly(
        self, data: bytes, starts: list[int], lengths: list[int], indices: np.ndarray
    ) -> list[tuple[int, bytes, int, float]]:
        """(record index, tag, step, value) of records the fast path did not take, parsed
        by protobuf: several values per event, tensors, metadata, step 0."""
        parse = event_parser()
        found: list[tuple[int, bytes, int, float]] = []
        for index in indices.tolist():
            start = starts[index] + HEADER_BYTES
            try:
                event = parse(data[start : start + lengths[index]])
            except Exception:
                self.problems.append(
                    f"{self.path}: offset {self.offset + starts[index]}: not an Event; "
                    "record skipped"
                )
                continue
            if not event.HasField("summary"):
                continue
            step = event.step
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    found.append((index, value.tag, step, value.simple_value))
                elif kind == "tensor" and (number := tensor_scalar(value.tensor)) is not None:
                    found.append((index, value.tag, step, number))
                else:
                    self.skipped_tags.setdefault(self._name(value.tag), kind or "no value")
        return found

    def _name(self, tag: bytes) -> str:
        name = self._tags.get(tag)
        if name is None:
            name = self._tags[tag] = decode_tag(tag) + self.series_suffix
        return name

    def _collect(
        self,
        fast: list[tuple[np.ndarray, list[bytes], np.ndarray, np.ndarray, np.ndarray]],
        slow: list[tuple[int, bytes, int, float]],
        builder: SeriesBuilder,
    ) -> None:
        """Hand both paths' points to `builder` per series, in record order."""
        names: dict[str, int] = {}
        parts = []
        for records, tags, tag_ids, steps, values in fast:
            ids = np.array([names.setdefault(self._name(tag), len(names)) for tag in tags])
            parts.append((records, ids[tag_ids], steps, values))
        if slow:
            records, tags, steps, values = zip(*slow, strict=True)
            ids = [names.setdefault(self._name(tag), len(names)) for tag in tags]
            parts.append(
                (
                    np.array(records),
                    np.array(ids),
                    np.array(steps, dtype=np.int64),
                    np.array(values, dtype=np.float64),
                )
            )
        if not parts:
            return
        records, ids, steps, values = (
            np.concatenate(column) for column in zip(*parts, strict=True)
        )
        order = np.argsort(records, kind="stable")
        ids, steps, values = ids[order], steps[order], values[order]
        first_seen = sorted(names.items(), key=lambda item: int(np.argmax(ids == item[1])))
        for name, series_id in first_seen:
            mine = ids == series_id
            builder.extend(name, steps[mine], values[mine])


def is_event_file(path: Path) -> bool:
    return EVENT_FILE_MARKER in path.name


@dataclass(frozen=True)
class EventSearch:
    files: list[Path]
    notes: tuple[str, ...] = ()  # what the search left out, said


def search_event_files(root: Path, limit: int = MAX_EVENT_FILES) -> EventSearch:
    """Event files in `root` and its subdirectories (a few levels, hidden ones skipped),
    in name order (the names begin with the time they were created). Past `limit` files
    the rest are counted, not read, and a note says how many were left out."""
    found: list[Path] = []
    beyond = 0
    level = [root]
    for _depth in range(MAX_SEARCH_DEPTH + 1):
        next_level: list[Path] = []
        for directory in level:
            try:
                with os.scandir(directory) as entries:
                    children = sorted(entries, key=lambda entry: entry.name)
            except OSError:
                continue
            for entry in children:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    next_level.append(Path(entry.path))
                elif EVENT_FILE_MARKER in entry.name:
                    if len(found) < limit:
                        found.append(Path(entry.path))
                    else:
                        beyond += 1
        level = next_level
    notes = ()
    if beyond:
        notes = (
            f"{root}: {limit + beyond} event files; the first {limit} are read (up to "
            f"{found[-1]}), {beyond} more are left out",
        )
    return EventSearch(found, notes)


def find_event_files(root: Path) -> list[Path]:
    return search_event_files(root).files


def has_event_files(root: Path) -> bool:
    return bool(search_event_files(root, limit=1).files)


class TensorBoardSource:
    """A run directory (event files in it and its subdirectories) or one event file,
    re-readable as it grows: `read()` again reads only what was appended."""

    kind = SourceKind.TENSORBOARD

    def __init__(self, path: Path) -> None:
        self.path = path
        self._readers: dict[Path, EventFileReader] = {}
        self._builder = SeriesBuilder()
        self._search_notes: tuple[str, ...] = ()

    def _files(self) -> Iterator[tuple[Path, str]]:
        if not self.path.is_dir():
            yield self.path, ""
            return
        search = search_event_files(self.path)
        self._search_notes = search.notes
        for file in search.files:
            parent = file.parent.relative_to(self.path)
            # A subdirectory is TensorBoard's run-within-a-run (`train/`, `validation/`,
            # add_scalars' `loss_train/`): its tags get it as a suffix, so `epoch_loss`
            # of train/ and validation/ stay two series that group together.
            yield file, "" if parent == Path(".") else "/" + parent.as_posix()

    def read(self) -> Source:
        for file, suffix in self._files():
            reader = self._readers.get(file)
            if reader is None:
                reader = self._readers[file] = EventFileReader(file, suffix)
            try:
                reader.read(self._builder)
            except SourceError as error:
                if not self.path.is_dir():
                    raise  # the one file named is foreign, a FIFO, unreadable
                # One bad file of a run directory (a FIFO, a stray file named like an event
                # file) is said and skipped; the others are still read.
                reader.broken = reader.foreign = True
                reader.problems.append(f"{error}; skipped")
        if not self._readers:
            raise SourceError(f"{self.path}: no TensorBoard event files (*tfevents*) found")
        if all(reader.foreign for reader in self._readers.values()):
            # Every file is foreign; a file damaged after its first records is not: what
            # came before the damage is kept, as for the file alone.
            first = next(iter(self._readers.values()))
            raise SourceError(first.problems[-1])
        problems = list(self._search_notes)
        problems += [
            problem
            for reader in self._readers.values()
            for problem in reader.problems + reader.checksum_problems()
        ]
        problems += self._builder.problems()
        skipped: dict[str, str] = {}
        for reader in self._readers.values():
            skipped.update(reader.skipped_tags)
        return Source(
            SourceKind.TENSORBOARD,
            self.path,
            self._builder.series(),
            problems,
            left_out={tag: f"not a scalar ({kind})" for tag, kind in skipped.items()},
            incomplete_tail=any(reader.incomplete_tail for reader in self._readers.values()),
            damaged=any(
                reader.broken or reader.checksum_problems() for reader in self._readers.values()
            ),
        )


def read_tensorboard(path: Path) -> Source:
    return TensorBoardSource(path).read()
