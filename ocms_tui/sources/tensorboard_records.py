"""TensorBoard's records, byte by byte: TFRecord framing and its masked CRC32C, the
minimal `Event` schema protobuf parses, and the numpy fast path that decodes the one-scalar
events tensorboardX and torch write without protobuf. tensorboard.py reads files with it.

A record is `length (u64 LE) | masked CRC32C of length (u32) | data | masked CRC32C of data
(u32)`, each data an `Event` protobuf.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from ocms_tui.sources.common import SourceError

HEADER_BYTES = 12  # length + its checksum
FOOTER_BYTES = 4  # the data's checksum
# An event this large is an image, audio or a graph, never a scalar: stepped over unread.
LARGEST_PARSED_RECORD = 1 << 20
# A length field beyond this is corruption, not a record (TensorFlow's own cap is 2 GiB).
LARGEST_RECORD = 1 << 31
# Steps of up to 8 varint bytes (56 bits, beyond MAX_STEP) are decoded by the fast path.
MAX_FAST_VARINT_BYTES = 8
# The record walk checks a guess of the coming lengths every this many records.
SPECULATE_EVERY = 64
MAX_SPECULATED_PERIOD = 32
MAX_SPECULATED_CYCLES = 1 << 14

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


def stored_u32(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
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


def event_parser() -> Callable[[bytes], Any]:
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


def decode_tag(raw: bytes) -> str:
    # Undecodable bytes become lone surrogates, as os.fsdecode does with a file name: the
    # report shows them as \xff, sanitize_key turns them into `_`.
    return raw.decode("utf-8", "surrogateescape")


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(rows, axis=0, return_inverse=True) by a hash of each row, checked row by
    row against its representative (np.unique's row sort takes seconds on 1M tags)."""
    hashes = np.zeros(len(rows), dtype=np.uint64)
    for column in rows.T:
        hashes = hashes * np.uint64(1099511628211) + column
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    distinct = rows[first]
    if not (rows == distinct[inverse]).all():  # a hash collision: the slow, exact way
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    return distinct, inverse.reshape(-1)


def decode_simple_values(
    array: np.ndarray, data_starts: np.ndarray, length: int, records: np.ndarray
) -> tuple[np.ndarray, list[bytes], np.ndarray, np.ndarray, np.ndarray]:
    """Decode, without protobuf and for all of them at once, the records of one length
    that have exactly the layout tensorboardX and torch write for one scalar:

        09 <wall_time: 8> 10 <step: varint> 2a L1 0a L2 0a L3 <tag: L3> 15 <simple_value: 4>

    Every byte of that frame is checked; a record that differs anywhere (a second value,
    metadata, a tensor, step 0 which proto3 leaves out) is left to protobuf.
    Returns (record indices taken, distinct tags, tag index per record, steps, values).
    """
    none = np.zeros(0, dtype=np.int64)
    empty: tuple[np.ndarray, list[bytes], np.ndarray, np.ndarray, np.ndarray] = (
        none,
        [],
        none,
        none,
        np.zeros(0),
    )
    if length < 20:
        return empty

    def byte(offsets: np.ndarray, position: int) -> np.ndarray:
        return array[offsets + position]

    frame = (byte(data_starts, 0) == 0x09) & (byte(data_starts, 9) == 0x10)
    varint_length = np.zeros(len(data_starts), dtype=np.int64)
    for position in range(min(MAX_FAST_VARINT_BYTES, length - 19)):
        ends_here = (varint_length == 0) & (byte(data_starts, 10 + position) < 0x80)
        varint_length[ends_here] = position + 1
    frame &= varint_length > 0
    taken, tags, tag_ids, steps, values = [], [], [], [], []
    for step_bytes in np.unique(varint_length[frame]).tolist():
        summary_at = 10 + step_bytes
        summary_length = length - summary_at - 2
        tag_length = summary_length - 4 - 5
        if not (tag_length > 0 and summary_length < 0x80):
            continue  # multi-byte lengths: protobuf's job
        members = np.flatnonzero(frame & (varint_length == step_bytes))
        offsets = data_starts[members]
        checks = (
            (0, 0x2A),
            (1, summary_length),
            (2, 0x0A),
            (3, summary_length - 2),
            (4, 0x0A),
            (5, tag_length),
            (6 + tag_length, 0x15),
        )
        exact = np.ones(len(offsets), dtype=bool)
        for position, expected in checks:
            exact &= byte(offsets, summary_at + position) == expected
        members, offsets = members[exact], offsets[exact]
        if not len(members):
            continue
        step = np.zeros(len(offsets), dtype=np.int64)
        for position in range(step_bytes):
            step |= (byte(offsets, 10 + position).astype(np.int64) & 0x7F) << (7 * position)
        value_at = summary_at + 7 + tag_length
        value_bits = np.zeros(len(offsets), dtype=np.uint32)
        for position in range(4):
            value_bits |= byte(offsets, value_at + position).astype(np.uint32) << (8 * position)
        tag_bytes = array[offsets[:, None] + (summary_at + 6) + np.arange(tag_length)]
        distinct, inverse = _distinct_rows(tag_bytes)
        tag_ids.append(inverse + len(tags))
        tags.extend(row.tobytes() for row in distinct)
        taken.append(records[members])
        steps.append(step)
        values.append(value_bits.view(np.float32).astype(np.float64))
    if not taken:
        return empty
    return (
        np.concatenate(taken),
        tags,
        np.concatenate(tag_ids),
        np.concatenate(steps),
        np.concatenate(values),
    )


def walk_records(data: bytes) -> tuple[list[int], list[int], int, int | None]:
    """Record starts and data lengths of the complete records at the start of `data`,
    the offset after the last, and the length of a too-large record that stopped the walk.

    Record by record in Python, but every SPECULATE_EVERY records it guesses that the
    lengths go on repeating their recent cycle (one event per tag, tag after tag) and
    checks the guess for thousands of records at once: a record's start follows from the
    previous one's length, so the prefix whose lengths match is exactly the real chain.
    """
    starts: list[int] = []
    lengths: list[int] = []
    unpack = _U64.unpack_from
    array = np.frombuffer(data, dtype=np.uint8)
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
        if len(starts) % SPECULATE_EVERY == 0:
            position = _speculate(array, starts, lengths, position)
    return starts, lengths, position, None


def _speculate(array: np.ndarray, starts: list[int], lengths: list[int], position: int) -> int:
    """Extend `starts`/`lengths` by the records after `position` that repeat the last
    cycle of lengths; returns the position after them."""
    overhead = HEADER_BYTES + FOOTER_BYTES
    for period in range(1, min(MAX_SPECULATED_PERIOD, len(lengths) // 2) + 1):
        if lengths[-period:] == lengths[-2 * period : -period]:
            break
    else:
        return position
    cycle = np.array(lengths[-period:], dtype=np.int64)
    within = np.concatenate(([0], np.cumsum(cycle + overhead)[:-1]))
    cycle_bytes = int((cycle + overhead).sum())
    cycles = min((len(array) - position) // cycle_bytes, MAX_SPECULATED_CYCLES)
    if cycles <= 0:
        return position
    candidates = (position + np.arange(cycles)[:, None] * cycle_bytes + within).reshape(-1)
    found = np.zeros(len(candidates), dtype=np.uint64)
    for byte in range(8):
        found |= array[candidates + byte].astype(np.uint64) << np.uint64(8 * byte)
    matches = found == np.tile(cycle, cycles).astype(np.uint64)
    taken = len(matches) if matches.all() else int(np.argmin(matches))
    starts.extend(candidates[:taken].tolist())
    lengths.extend(np.tile(cycle, cycles)[:taken].tolist())
    return position if taken == 0 else int(candidates[taken - 1]) + overhead + lengths[-1]
