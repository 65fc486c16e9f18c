"""Import: our TensorBoard reader on 1M scalars against TensorBoard's own loaders.

TensorBoard's default loader is the Rust `tensorboard-data-server` (rustboard) when its
binary runs, which `tensorboard` itself uses; timed here from its own "Finished load cycle"
line, with `--samples-per-plugin scalars=all` so that it keeps every value as we do. The
Python EventAccumulator (TensorBoard's fallback, what scripts import) is the second baseline.
The event file is made of TensorBoard's own protos; tensorboardX-written files are the
reader tests' job.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import Row, Sizes, interleaved, make_row, not_measured, seconds
from data import Workspace

from ocms_tui.sources.fitting import fit_series
from ocms_tui.sources.tensorboard import masked_crc32c, read_tensorboard
from ocms_tui.sources.writer import write_ocms_directory

TAGS = (
    *(f"{group}/{split}" for group in ("loss", "accuracy") for split in ("train", "eval")),
    *("learning_rate", "grad_norm", "epoch", "timing/data", "timing/model", "throughput"),
)
# --quick: a tenth of the scalars (TensorBoard's Python loader alone took 60 s for 1M).
SCALARS = {"full": 1_000_000, "quick": 100_000, "tiny": 20_000}
TARGET_RATIO = 10.0
# The whole import: a 1M-scalar run converted in well under a minute.
IMPORT_TARGET_RATE = 50_000
_LOAD_CYCLE = re.compile(r"Finished load cycle \(([0-9.]+)(µs|ms|s)\)")
_UNIT = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}


def write_events(directory: Path, scalars: int) -> Path:
    """`scalars` simple_value events, one per record as tensorboardX writes them, framed
    with our CRC (the test suite checks it against TensorBoard's own)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "events.out.tfevents.1700000000.bench"
    rng = np.random.default_rng(0)
    values = rng.random(scalars).tolist()
    bodies = [event_pb2.Event(file_version="brain.Event:2").SerializeToString()]
    for index, value in enumerate(values):
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=TAGS[index % len(TAGS)], simple_value=value)]
        )
        event = event_pb2.Event(wall_time=1.7e9 + index, step=index // len(TAGS), summary=summary)
        bodies.append(event.SerializeToString())
    lengths = np.array([len(body) for body in bodies], dtype=np.int64)
    headers = np.frombuffer(struct.pack(f"<{len(bodies)}Q", *lengths.tolist()), np.uint8)
    header_crcs = masked_crc32c(headers, np.arange(len(bodies), dtype=np.int64) * 8, 8)
    data = np.frombuffer(b"".join(bodies), np.uint8)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    data_crcs = np.zeros(len(bodies), dtype=np.uint32)
    for length in np.unique(lengths):  # one vectorized CRC per record length
        group = np.flatnonzero(lengths == length)
        data_crcs[group] = masked_crc32c(data, offsets[group], int(length))
    with open(path, "wb") as handle:
        for index, body in enumerate(bodies):
            handle.write(struct.pack("<QI", int(lengths[index]), int(header_crcs[index])))
            handle.write(body)
            handle.write(struct.pack("<I", int(data_crcs[index])))
    return path


def ours(directory: Path, scalars: int) -> None:
    source = read_tensorboard(directory)
    loaded = sum(len(each) for each in source.series)
    if loaded != scalars:
        raise AssertionError(f"read {loaded} scalars, expected {scalars}")


def event_accumulator(directory: Path, scalars: int) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0})
    accumulator.Reload()
    loaded = sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])
    if loaded != scalars:
        raise AssertionError(f"EventAccumulator loaded {loaded}, expected {scalars}")


def data_server_binary() -> str | None:
    try:
        import tensorboard_data_server

        binary = tensorboard_data_server.server_binary()
        subprocess.run([binary, "--version"], capture_output=True, timeout=30, check=True)
        return binary
    except Exception:
        return None


def data_server_load(binary: str, directory: Path, checksum: bool) -> float:
    """Seconds of one load cycle of every scalar, as the server reports it."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            binary,
            "--logdir",
            str(directory),
            "--reload",
            "once",
            "--port",
            "0",
            "--port-file",
            str(Path(scratch) / "port"),
            "--samples-per-plugin",
            "scalars=all",
            "-v",
            "--checksum" if checksum else "--no-checksum",
        ]
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 600
            assert process.stderr is not None
            for line in process.stderr:
                match = _LOAD_CYCLE.search(line)
                if match:
                    return float(match.group(1)) * _UNIT[match.group(2)]
                if time.monotonic() > deadline:
                    break
            raise AssertionError("the data server never finished its load cycle")
        finally:
            process.kill()
            process.wait()


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    scalars = SCALARS[sizes.name]
    directory = workspace.scratch(f"import-tb-{scalars}")
    write_events(directory, scalars)
    label = f"TensorBoard read, {scalars:,} scalars ({len(TAGS)} tags)"
    timing = interleaved({"ours": lambda: ours(directory, scalars)}, sizes.rounds)["ours"]
    rows: list[Row] = []
    binary = data_server_binary()
    if binary is None:
        rows.append(
            not_measured(
                f"{label} vs tensorboard-data-server",
                f">= {TARGET_RATIO:g}x",
                "the data server binary does not run here",
            )
        )
    else:
        for checksum in (False, True):
            server = sorted(
                data_server_load(binary, directory, checksum) for _ in range(sizes.slow_rounds)
            )[sizes.slow_rounds // 2]
            speedup = server / timing.median
            rows.append(
                make_row(
                    f"{label} vs tensorboard-data-server (Rust, {'--checksum' if checksum else 'default: no checksum'})",
                    seconds(timing.median),
                    seconds(server),
                    speedup,
                    f">= {TARGET_RATIO:g}x",
                    speedup >= TARGET_RATIO,
                    f"ratio = speed-up; ours checks every CRC; server time is its own load-cycle "
                    f"figure (no process start); {scalars / timing.median:,.0f} scalars/s",
                )
            )
    accumulator = interleaved(
        {"ea": lambda: event_accumulator(directory, scalars)}, sizes.slow_rounds, warmup=False
    )["ea"]
    speedup = accumulator.median / timing.median
    rows.append(
        make_row(
            f"{label} vs EventAccumulator (Python, size_guidance scalars=0)",
            seconds(timing.median),
            seconds(accumulator.median),
            speedup,
            f">= {TARGET_RATIO:g}x",
            speedup >= TARGET_RATIO,
            f"ratio = speed-up; medians of {sizes.rounds} / {sizes.slow_rounds} rounds",
        )
    )
    rows.append(full_import_row(directory, scalars, sizes, workspace))
    return rows


def full_import_row(directory: Path, scalars: int, sizes: Sizes, workspace: Workspace) -> Row:
    """The whole `ocms-tui import`: read, fit, write through the recorder, verify."""
    outputs = iter(range(1_000_000))

    def convert() -> None:
        source = read_tensorboard(directory)
        out = workspace.root / f"import-out-{next(outputs)}"
        write_ocms_directory(
            out, fit_series(source.series, source.chart_groups), source.series, [directory]
        )

    timing = interleaved({"import": convert}, max(1, sizes.slow_rounds))["import"]
    rate = scalars / timing.median
    return make_row(
        f"ocms-tui import of {scalars:,} TensorBoard scalars (read, fit, write, verify)",
        f"{rate:,.0f} scalars/s",
        "-",
        None,
        f">= {IMPORT_TARGET_RATE:,} scalars/s",
        rate >= IMPORT_TARGET_RATE,
        f"{seconds(timing.median)}; the recorder writes and flushes row by row",
    )


if __name__ == "__main__":
    sys.exit("run it through bench/run.py --only import")
