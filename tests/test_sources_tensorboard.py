"""TensorBoard event files written by tensorboardX, torch.utils.tensorboard and
TensorBoard's own writer, and broken ones, read by ocms_tui.sources.tensorboard."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

# TensorBoard's own writers and parsers are the reference (the [bench] and [import] extras).
pytest.importorskip("tensorboard")
pytest.importorskip("google.protobuf")
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import (
    masked_crc32c as tb_crc,
)
from tensorboard.summary.writer.record_writer import RecordWriter

from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.sources import SourceKind, detect_kind, read_source
from ocms_tui.sources.common import SourceError
from ocms_tui.sources.tensorboard import TensorBoardSource, masked_crc32c
from tests.sources_support import run_cli, tree_state

tensorboardX = pytest.importorskip("tensorboardX")
torch_tensorboard = pytest.importorskip("torch.utils.tensorboard")


def series_of(path: Path) -> dict[str, list[tuple[int, float]]]:
    source = read_source(path)
    return {
        each.name: list(zip(each.steps.tolist(), each.values.tolist(), strict=True))
        for each in source.series
    }


def f32(value: float) -> float:
    return float(np.float32(value))


def write_tbx(directory: Path) -> None:
    writer = tensorboardX.SummaryWriter(str(directory))
    for step in range(5):
        writer.add_scalar("loss/train", 1.0 / (step + 1), step)
        writer.add_scalar("learning_rate", 0.1 * step, step)
        if step % 2 == 0:
            writer.add_scalar("loss/eval", 2.0 / (step + 1), step)
    writer.add_histogram("weights", np.arange(10.0), 3)
    writer.add_text("note", "hello", 0)
    writer.close()


def event_file(directory: Path) -> Path:
    (found,) = [path for path in directory.rglob("*") if "tfevents" in path.name]
    return found


def record(data: bytes) -> bytes:
    """One TFRecord, framed by TensorBoard's own CRC code."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", tb_crc(header)) + data + struct.pack("<I", tb_crc(data))


def test_crc_matches_tensorboards_own() -> None:
    rng = np.random.default_rng(1)
    blobs = [rng.bytes(37) for _ in range(50)]
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    starts = np.arange(50, dtype=np.int64) * 37
    assert masked_crc32c(data, starts, 37).tolist() == [tb_crc(blob) for blob in blobs]


def test_tensorboardx_scalars_every_value_at_its_step(tmp_path: Path) -> None:
    write_tbx(tmp_path)
    assert detect_kind(tmp_path) is SourceKind.TENSORBOARD
    source = read_source(tmp_path)
    found = series_of(tmp_path)
    assert found["loss/train"] == [(step, f32(1.0 / (step + 1))) for step in range(5)]
    assert found["loss/eval"] == [(step, f32(2.0 / (step + 1))) for step in (0, 2, 4)]
    assert found["learning_rate"] == [(step, f32(0.1 * step)) for step in range(5)]
    assert set(source.left_out) == {"weights", "note/text_summary"}  # not scalars
    assert not source.incomplete_tail and not source.problems


def test_torch_writer_simple_value_new_style_and_add_scalars(tmp_path: Path) -> None:
    writer = torch_tensorboard.SummaryWriter(str(tmp_path))
    writer.add_scalar("old", 0.25, 1)
    writer.add_scalar("new_float", 0.5, 2, new_style=True)
    writer.add_scalar("new_double", 0.1, 3, new_style=True, double_precision=True)
    writer.add_scalars("loss", {"train": 1.5, "eval": 2.5}, 4)
    writer.close()
    found = series_of(tmp_path)
    assert found["old"] == [(1, 0.25)]
    assert found["new_float"] == [(2, 0.5)]
    assert found["new_double"] == [(3, 0.1)]  # a double stays a double
    # add_scalars writes a subdirectory per curve; each keeps it as a suffix.
    assert found["loss/loss_train"] == [(4, 1.5)]
    assert found["loss/loss_eval"] == [(4, 2.5)]


def tensor_event(tag: str, step: int, tensor: tensor_pb2.TensorProto) -> bytes:
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    value.metadata.plugin_data.plugin_name = "scalars"
    return event_pb2.Event(
        step=step, summary=summary_pb2.Summary(value=[value])
    ).SerializeToString()


def test_tf2_tensor_scalars_by_tensorboards_writer(tmp_path: Path) -> None:
    """tf.summary.scalar's layout: a 0-d tensor with tensor_content, float or double."""
    path = tmp_path / "events.out.tfevents.1.host"
    with open(path, "wb") as handle:
        writer = RecordWriter(handle)
        writer.write(event_pb2.Event(file_version="brain.Event:2").SerializeToString())
        as_float = tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT, tensor_content=struct.pack("<f", 0.75)
        )
        as_double = tensor_pb2.TensorProto(
            dtype=types_pb2.DT_DOUBLE, tensor_content=struct.pack("<d", 0.3)
        )
        vector = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.0, 2.0])
        vector.tensor_shape.dim.add(size=2)
        text = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b"hi"])
        writer.write(tensor_event("epoch_loss", 7, as_float))
        writer.write(tensor_event("epoch_accuracy", 7, as_double))
        writer.write(tensor_event("vector", 7, vector))
        writer.write(tensor_event("text", 7, text))
    source = read_source(path)
    found = series_of(path)
    assert found == {"epoch_loss": [(7, 0.75)], "epoch_accuracy": [(7, 0.3)]}
    assert set(source.left_out) == {"vector", "text"}


def test_truncated_last_record_is_a_live_run_read_on_growth(tmp_path: Path) -> None:
    write_tbx(tmp_path / "full")
    data = event_file(tmp_path / "full").read_bytes()
    path = tmp_path / "live" / "events.out.tfevents.2.host"
    path.parent.mkdir()
    cut = data.index(b"loss/train", data.index(b"loss/train") + 1) + 3  # mid-record
    path.write_bytes(data[:cut])
    source_reader = TensorBoardSource(path.parent)
    half = source_reader.read()
    assert half.incomplete_tail and not half.problems
    points_before = sum(len(each) for each in half.series)
    assert 0 < points_before < 13
    with open(path, "ab") as handle:  # the writer finishes the record and goes on
        handle.write(data[cut:])
    whole = source_reader.read()
    assert not whole.incomplete_tail and not whole.problems
    assert sum(len(each) for each in whole.series) == 13  # 5 + 5 + 3, none twice


def test_bad_data_checksum_skips_that_record_only(tmp_path: Path) -> None:
    write_tbx(tmp_path)
    path = event_file(tmp_path)
    data = bytearray(path.read_bytes())
    position = data.index(b"learning_rate")  # inside one record's data
    data[position] ^= 0x20
    path.write_bytes(bytes(data))
    source = read_source(tmp_path)
    assert any("data checksum mismatch" in problem for problem in source.problems)
    found = series_of(tmp_path)
    assert len(found["learning_rate"]) == 4  # one of the five skipped
    assert len(found["loss/train"]) == 5


def test_bad_length_checksum_stops_the_file_keeping_what_came_before(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.3.host"
    good = [
        tensor_event("x", step, tensor_pb2.TensorProto(dtype=1, float_val=[step]))
        for step in range(3)
    ]
    broken = bytearray(record(good[2]))
    broken[0] ^= 1  # the length no longer matches its checksum
    path.write_bytes(record(good[0]) + record(good[1]) + bytes(broken))
    source = read_source(path)
    assert series_of(path) == {"x": [(0, 0.0), (1, 1.0)]}
    assert any("length checksum mismatch" in problem for problem in source.problems)


def test_huge_length_field_is_reported_not_allocated(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.4.host"
    first = record(tensor_event("x", 1, tensor_pb2.TensorProto(dtype=1, float_val=[1.0])))
    header = struct.pack("<Q", 1 << 60)
    path.write_bytes(first + header + struct.pack("<I", tb_crc(header)) + b"\0" * 64)
    source = read_source(path)
    assert series_of(path) == {"x": [(1, 1.0)]}
    assert any("not plausible" in problem for problem in source.problems)


def test_large_record_beyond_the_end_waits_as_a_live_run(tmp_path: Path) -> None:
    """A 5 MB image event half written: stepped over once complete, not read into memory."""
    path = tmp_path / "events.out.tfevents.5.host"
    first = record(tensor_event("x", 1, tensor_pb2.TensorProto(dtype=1, float_val=[1.0])))
    big = record(b"\0" * (5 << 20))
    last = record(tensor_event("x", 2, tensor_pb2.TensorProto(dtype=1, float_val=[2.0])))
    path.write_bytes(first + big[: 1 << 20])
    reader = TensorBoardSource(path)
    assert reader.read().incomplete_tail
    path.write_bytes(first + big + last)
    source = reader.read()
    assert series_of(path) == {"x": [(1, 1.0), (2, 2.0)]}
    assert not source.incomplete_tail and not source.problems


def test_non_utf8_tag_is_read_with_its_bytes_escaped(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.6.host"
    event = tensor_event("AB", 1, tensor_pb2.TensorProto(dtype=1, float_val=[1.0]))
    path.write_bytes(record(event.replace(b"AB", b"\xff\xfe")))
    assert series_of(path) == {"\udcff\udcfe": [(1, 1.0)]}  # as os.fsdecode would
    out = tmp_path / "out"
    result = run_cli("import", str(path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert check_directory(out).errors == 0
    assert "'\\xff\\xfe' -> __" in result.stdout


def test_foreign_file_named_like_an_event_file_exits_2_without_output(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.7.host"
    path.write_bytes(b"this is a plain text file, not TFRecords\n" * 10)
    with pytest.raises(SourceError, match="not a TensorBoard event file"):
        read_source(path)
    result = run_cli("import", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "not a TensorBoard event file" in result.stderr
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no output, no temp directory


def test_empty_directory_and_fifo_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("import", str(empty), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "not a log this can import" in result.stderr
    fifo = tmp_path / "events.out.tfevents.8.host"
    os.mkfifo(fifo)
    result = run_cli("import", str(fifo), "--out", str(tmp_path / "out"), timeout=60)
    assert result.returncode == 2 and "not a regular file" in result.stderr
    assert not (tmp_path / "out").exists()


def test_import_passes_check_keeps_every_value_and_only_reads_the_source(tmp_path: Path) -> None:
    source = tmp_path / "runs"
    write_tbx(source)
    before = tree_state(source)
    out = tmp_path / "out"
    result = run_cli("import", str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert tree_state(source) == before
    assert check_directory(out).errors == 0
    model = RunModel(out)
    model.load_settled()
    charts = {chart.name: chart for chart in model.charts}
    assert list(charts) == ["loss", "learning_rate"]  # default groups, in their order
    loss = charts["loss"]
    assert loss.y_axis == ("loss_train", "loss_eval")
    assert loss.steps().tolist() == [0, 1, 2, 3, 4]
    assert loss.values(1)[[0, 2, 4]].tolist() == [f32(2.0 / (s + 1)) for s in (0, 2, 4)]
    assert np.isnan(loss.values(1)[[1, 3]]).all()  # not logged there: a gap
    assert "'loss/eval' -> loss_eval" in result.stdout
    assert "'weights': not a scalar (histo)" in result.stdout


def test_output_inside_the_source_or_existing_is_refused(tmp_path: Path) -> None:
    write_tbx(tmp_path / "runs")
    before = tree_state(tmp_path / "runs")
    result = run_cli("import", str(tmp_path / "runs"), "--out", str(tmp_path / "runs" / "o"))
    assert result.returncode == 2 and "only read" in result.stderr
    assert tree_state(tmp_path / "runs") == before
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    result = run_cli("import", str(tmp_path / "runs"), "--out", str(tmp_path / "taken"))
    assert result.returncode == 2 and "already exists" in result.stderr
    assert os.listdir(tmp_path / "taken") == ["keep.txt"]


def test_a_write_failure_leaves_no_partial_output(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes every write past 2 KB fail (EFBIG): the import fails whole."""
    import resource
    import signal

    writer = tensorboardX.SummaryWriter(str(tmp_path / "runs"))
    for step in range(2000):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.close()

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    out = tmp_path / "new" / "parents" / "out"
    result = run_cli("import", str(tmp_path / "runs"), "--out", str(out), preexec_fn=limit)
    assert result.returncode == 2
    assert "cannot write" in result.stderr and "File too large" in result.stderr
    # Neither out, nor its temp directory, nor the parents made for it.
    assert sorted(os.listdir(tmp_path)) == ["runs"]


def test_fast_path_reads_exactly_what_protobuf_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectorized decoder of tensorboardX's one-scalar records against TensorBoard's own
    Event proto over a file with steps of 1, 2 and 3 varint bytes, values of every sign and
    interleaved non-scalar records; and it did take the records (else this proves nothing)."""
    from ocms_tui.sources import tensorboard as reader_module

    writer = tensorboardX.SummaryWriter(str(tmp_path))
    rng = np.random.default_rng(3)
    for step in [*range(0, 3000, 7), 20_000, 20_001]:  # long regular runs: the walk guesses
        writer.add_scalar("loss/train", float(rng.normal()), step)
        writer.add_scalar("a_much_longer_tag_name/of_some_length", float(rng.normal()) * 1e30, step)
        if step % 49 == 0:
            writer.add_histogram("h", rng.normal(size=5), step)
    writer.close()
    path = event_file(tmp_path)
    data = path.read_bytes()
    expected: dict[str, list[tuple[int, float]]] = {}
    position = 0
    while position < len(data):
        (length,) = struct.unpack_from("<Q", data, position)
        event = event_pb2.Event.FromString(data[position + 12 : position + 12 + length])
        for value in event.summary.value:
            if value.WhichOneof("value") == "simple_value":
                expected.setdefault(value.tag, []).append((event.step, value.simple_value))
        position += 16 + length
    taken = []
    original = reader_module.decode_simple_values

    def counting(*arguments: object) -> tuple:
        result = original(*arguments)  # type: ignore[arg-type]
        taken.append(len(result[0]))
        return result

    monkeypatch.setattr(reader_module, "decode_simple_values", counting)  # a spy: calls it
    assert series_of(path) == expected
    assert sum(taken) >= 2 * 429  # every scalar record but step 0's took the fast path


def test_a_fifo_and_a_foreign_file_in_a_run_directory_are_skipped(tmp_path: Path) -> None:
    write_tbx(tmp_path / "run")
    os.mkfifo(tmp_path / "run" / "events.out.tfevents.0.fifo")
    (tmp_path / "run" / "events.out.tfevents.0.text").write_text("not records at all, no")
    source = read_source(tmp_path / "run")
    assert len(series_of(tmp_path / "run")["loss/train"]) == 5
    assert sum("not a regular file; skipped" in problem for problem in source.problems) == 1
    assert sum("not a TensorBoard event file" in problem for problem in source.problems) == 1
    for path in (tmp_path / "run").iterdir():
        if not path.name.endswith((".fifo", ".text")):
            path.unlink()  # tensorboardX's own file
    with pytest.raises(SourceError):  # nothing readable left: the directory is foreign
        read_source(tmp_path / "run")
