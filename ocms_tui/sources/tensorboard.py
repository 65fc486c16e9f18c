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
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ocms_tui.sources.common import (
    SeriesBuilder,
    Source,
    SourceError,
    SourceKind,
    open_regular_file,
)

HEADER_BYTES = 12  # length + its checksum
FOOTER_BYTES = 4  # the data's checksum
READ_CHUNK_BYTES = 4 << 20
# An event this large is an image, audio or a graph, never a scalar: stepped over unread.
LARGEST_PARSED_RECORD = 1 << 20
# A length field beyond this is corruption, not a record (TensorFlow's own cap is 2 GiB).
LARGEST_RECORD = 1 << 31
EVENT_FILE_MARKER = "tfevents"
MAX_LISTED_PROBLEMS = 20
MAX_SEARCH_DEPTH = 3
MAX_EVENT_FILES = 10_000

# TensorFlow DataType numbers of the float types the scalars dashboard draws.
_DT_FLOAT, _DT_DOUBLE, _DT_BFLOAT16, _DT_HALF = 1, 2, 14, 19
_CONTENT_FORMATS = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_HALF: "<e"}

_U64 = struct.Struct("<Q")
_MASK_DELTA = 0xA282EAD8


def _crc32c_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for index in range(256):
        crc = index
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table[index] = crc
    return table


_CRC_TABLE = _crc32c_table()


def masked_crc32c(data: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """TFRecord's masked CRC32C of `length` bytes at each of `starts` in `data`, computed
    for all of them together: one table lookup per byte column instead of per byte."""
    crc = np.full(len(starts), 0xFFFFFFFF, dtype=np.uint32)
    for column in range(length):
        crc = _CRC_TABLE[(crc ^ data[starts + column]) & 0xFF] ^ (crc >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    return ((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)


def _stored_u32(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The little-endian u32 at each of `offsets`."""
    value = np.zeros(len(offsets), dtype=np.uint32)
    for byte in range(4):
        value |= data[offsets + byte].astype(np.uint32) << np.uint32(8 * byte)
    return value


def _event_class() -> Any:
    """An `Event` message class with only the fields scalars need, field numbers as in
    tensorflow/core/util/event.proto and summary.proto. Built at run time from descriptors,
    so the package needs protobuf alone. The tag is declared `bytes`: a tag that is not
    UTF-8 must still be read (proto3 `string` would reject the whole event)."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError as error:
        raise SourceError(
            "reading TensorBoard files needs protobuf: pip install 'ocms-tui[import]'"
        ) from error
    types = descriptor_pb2.FieldDescriptorProto
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="ocms_tui_event.proto", package="ocms_tui_tb", syntax="proto3"
    )

    def message(name: str, fields: list[tuple[str, int, int, int, str]]) -> Any:
        described = file_proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            added = described.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                added.type_name = type_name
        return described

    optional, repeated = types.LABEL_OPTIONAL, types.LABEL_REPEATED
    message("Dim", [("size", 1, types.TYPE_INT64, optional, "")])
    message("Shape", [("dim", 2, types.TYPE_MESSAGE, repeated, ".ocms_tui_tb.Dim")])
    message(
        "Tensor",
        [
            ("dtype", 1, types.TYPE_INT32, optional, ""),
            ("tensor_shape", 2, types.TYPE_MESSAGE, optional, ".ocms_tui_tb.Shape"),
            ("tensor_content", 4, types.TYPE_BYTES, optional, ""),
            ("float_val", 5, types.TYPE_FLOAT, repeated, ""),
            ("double_val", 6, types.TYPE_DOUBLE, repeated, ""),
            ("half_val", 13, types.TYPE_INT32, repeated, ""),
        ],
    )
    value = message(
        "Value",
        [
            ("tag", 1, types.TYPE_BYTES, optional, ""),
            ("simple_value", 2, types.TYPE_FLOAT, optional, ""),
            ("image", 4, types.TYPE_BYTES, optional, ""),
            ("histo", 5, types.TYPE_BYTES, optional, ""),
            ("audio", 6, types.TYPE_BYTES, optional, ""),
            ("tensor", 8, types.TYPE_MESSAGE, optional, ".ocms_tui_tb.Tensor"),
        ],
    )
    value.oneof_decl.add(name="value")
    for described in value.field[1:]:
        described.oneof_index = 0  # which kind of value it is: WhichOneof tells
    message("Summary", [("value", 1, types.TYPE_MESSAGE, repeated, ".ocms_tui_tb.Value")])
    message(
        "Event",
        [
            ("wall_time", 1, types.TYPE_DOUBLE, optional, ""),
            ("step", 2, types.TYPE_INT64, optional, ""),
            ("summary", 5, types.TYPE_MESSAGE, optional, ".ocms_tui_tb.Summary"),
        ],
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ocms_tui_tb.Event"))


_EVENT: Any = None


def _parse_event() -> Callable[[bytes], Any]:
    global _EVENT
    if _EVENT is None:
        _EVENT = _event_class()
    return _EVENT.FromString


def tensor_scalar(tensor: Any) -> float | None:
    """The value of a scalar float tensor; None for any other tensor (text, a histogram,
    an image's encoded bytes, a vector)."""
    dtype = tensor.dtype
    if dtype not in (_DT_FLOAT, _DT_DOUBLE, _DT_HALF, _DT_BFLOAT16):
        return None
    if any(dim.size != 1 for dim in tensor.tensor_shape.dim):
        return None
    content = tensor.tensor_content
    if content:
        if dtype == _DT_BFLOAT16:  # the high half of a float32
            return struct.unpack("<f", b"\x00\x00" + content)[0] if len(content) == 2 else None
        layout = _CONTENT_FORMATS[dtype]
        return (
            struct.unpack(layout, content)[0] if len(content) == struct.calcsize(layout) else None
        )
    if dtype == _DT_FLOAT and len(tensor.float_val) == 1:
        return float(tensor.float_val[0])
    if dtype == _DT_DOUBLE and len(tensor.double_val) == 1:
        return float(tensor.double_val[0])
    if len(tensor.half_val) == 1:
        bits = tensor.half_val[0] & 0xFFFF
        if dtype == _DT_HALF:
            return struct.unpack("<e", bits.to_bytes(2, "little"))[0]
        return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
    return None


def _decode_tag(raw: bytes) -> str:
    # Undecodable bytes become lone surrogates, as os.fsdecode does with a file name: the
    # report shows them as \xff, sanitize_key turns them into `_`.
    return raw.decode("utf-8", "surrogateescape")


class EventFileReader:
    """One event file, read from where the last `read()` stopped (files only grow)."""

    def __init__(self, path: Path, series_suffix: str = "") -> None:
        self.path = path
        self.series_suffix = series_suffix  # "/<subdirectory>" for a run's subdirectory
        self.offset = 0
        self.records = 0
        self.problems: list[str] = []
        self.broken = False  # a bad length checksum: nothing after it can be trusted
        self.incomplete_tail = False
        self.skipped_tags: dict[str, str] = {}  # tag -> why it is not a scalar
        self._tags: dict[bytes, str] = {}
        self._crc_failures = 0

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

    def _fail(self, message: str) -> None:
        self.broken = True
        self.problems.append(f"{self.path}: {message}")

    def _read_records(self, data: bytes, builder: SeriesBuilder) -> tuple[int, int | None]:
        """Parse the complete records at the start of `data`; returns (bytes consumed,
        file offset to skip to when a large record stopped the walk)."""
        starts, lengths, end, large_length = _walk(data)
        array = np.frombuffer(data, dtype=np.uint8)
        # The header after the last complete record is checked too: a large record's before
        # it is stepped over, a cut-short one's before waiting for the rest of it.
        has_next_header = end + HEADER_BYTES <= len(data)
        header_starts = np.array(starts + [end] * has_next_header, dtype=np.int64)
        if len(header_starts):
            stored = _stored_u32(array, header_starts + 8)
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
            stored = _stored_u32(array, data_starts + length)
            valid[group] = stored == masked_crc32c(array, data_starts, int(length))
        for index in np.flatnonzero(~valid):
            self._crc_failures += 1
            if self._crc_failures <= MAX_LISTED_PROBLEMS:
                self.problems.append(
                    f"{self.path}: offset {self.offset + starts[index]}: data checksum "
                    "mismatch; record skipped"
                )
        parse = _parse_event()
        tags = self._tags
        add = builder.add
        for start, length, ok in zip(starts, lengths, valid.tolist(), strict=True):
            if not ok:
                continue
            self.records += 1
            body = data[start + HEADER_BYTES : start + HEADER_BYTES + length]
            try:
                event = parse(body)
            except Exception:
                self.problems.append(
                    f"{self.path}: offset {self.offset + start}: not an Event; record skipped"
                )
                continue
            if not event.HasField("summary"):
                continue
            step = event.step
            for value in event.summary.value:
                tag = tags.get(value.tag)
                if tag is None:
                    tag = tags[value.tag] = _decode_tag(value.tag) + self.series_suffix
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    add(tag, step, value.simple_value)
                elif kind == "tensor" and (number := tensor_scalar(value.tensor)) is not None:
                    add(tag, step, number)
                else:
                    self.skipped_tags.setdefault(tag, kind or "no value")


def _walk(data: bytes) -> tuple[list[int], list[int], int, int | None]:
    """Record starts and data lengths of the complete records at the start of `data`,
    the offset after the last, and the length of a too-large record that stopped the walk."""
    starts: list[int] = []
    lengths: list[int] = []
    unpack = _U64.unpack_from
    position, size = 0, len(data)
    overhead = HEADER_BYTES + FOOTER_BYTES
    while position + HEADER_BYTES <= size:
        (length,) = unpack(data, position)
        if length > LARGEST_PARSED_RECORD:
            return starts, lengths, position, length
        end = position + overhead + length
        if end > size:
            break
        starts.append(position)
        lengths.append(length)
        position = end
    return starts, lengths, position, None


def is_event_file(path: Path) -> bool:
    return EVENT_FILE_MARKER in path.name


def find_event_files(root: Path) -> list[Path]:
    """Event files in `root` and its subdirectories (a few levels, hidden ones skipped),
    in name order (the names begin with the time they were created)."""
    found: list[Path] = []
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
                    found.append(Path(entry.path))
                if len(found) >= MAX_EVENT_FILES:
                    return found
        level = next_level
    return found


def has_event_files(root: Path) -> bool:
    return bool(find_event_files(root))


class TensorBoardSource:
    """A run directory (event files in it and its subdirectories) or one event file,
    re-readable as it grows: `read()` again reads only what was appended."""

    kind = SourceKind.TENSORBOARD

    def __init__(self, path: Path) -> None:
        self.path = path
        self._readers: dict[Path, EventFileReader] = {}
        self._builder = SeriesBuilder()

    def _files(self) -> Iterator[tuple[Path, str]]:
        if not self.path.is_dir():
            yield self.path, ""
            return
        for file in find_event_files(self.path):
            parent = file.parent.relative_to(self.path)
            # A subdirectory is TensorBoard's run-within-a-run (`train/`, `validation/`,
            # add_scalars' `loss_train/`): its tags get it as a suffix, so `epoch_loss`
            # of train/ and validation/ stay two series that group together.
            yield file, "" if parent == Path(".") else "/" + parent.as_posix()

    def read(self) -> Source:
        unreadable: list[str] = []
        for file, suffix in self._files():
            reader = self._readers.get(file)
            if reader is None:
                reader = self._readers[file] = EventFileReader(file, suffix)
            try:
                reader.read(self._builder)
            except SourceError as error:
                if file == self.path:  # the one file given: it is the source
                    raise
                # One foreign or unopenable file (a FIFO, a stray *tfevents* name) among a
                # run's event files costs that file, not the run.
                reader.broken = True
                reader.problems.append(f"{error}; file left out")
                unreadable.append(str(error))
        if unreadable and len(unreadable) == len(self._readers):
            raise SourceError(
                unreadable[0]
                + (f" (and {len(unreadable) - 1} more files)" if len(unreadable) > 1 else "")
            )
        problems = [problem for reader in self._readers.values() for problem in reader.problems]
        problems += self._builder.problems()
        skipped: dict[str, str] = {}
        for reader in self._readers.values():
            skipped.update(reader.skipped_tags)
        if not self._readers:
            raise SourceError(f"{self.path}: no TensorBoard event files (*tfevents*) found")
        return Source(
            SourceKind.TENSORBOARD,
            self.path,
            self._builder.series(),
            problems,
            left_out={tag: f"not a scalar ({kind})" for tag, kind in skipped.items()},
            incomplete_tail=any(reader.incomplete_tail for reader in self._readers.values()),
        )


def read_tensorboard(path: Path) -> Source:
    return TensorBoardSource(path).read()
