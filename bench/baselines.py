"""The readers we compare against, importable and runnable as a fresh process.

As a command (so that a baseline pays for its interpreter and imports exactly as
`ocms-tui --check` does): `python bench/baselines.py polars|polars-plain|csv-reader SERIES FILE...`.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import numpy as np


def polars_load(path: Path, series: int) -> list[np.ndarray]:
    """polars with an explicit schema, every column to numpy (NaN for gaps)."""
    import polars as pl

    schema = {"step": pl.Int64, **{f"v{i}": pl.Float64 for i in range(series)}}
    frame = pl.read_csv(path, has_header=False, schema=schema)
    return [frame.get_column(name).to_numpy() for name in frame.columns]


def polars_plain_load(path: Path, series: int) -> list[object]:
    """What a user would type: `polars.read_csv` with no schema and no conversion (the
    strongest peer: no types declared, columns left in polars)."""
    import polars as pl

    frame = pl.read_csv(path, has_header=False)
    return [frame.get_column(name) for name in frame.columns]


def csv_reader_load(path: Path, series: int) -> list[list[float]]:
    """The obvious pure-Python reader, keeping what it parses (a bad number becomes NaN)."""
    steps: list[int] = []
    columns: list[list[float]] = [[] for _ in range(series)]
    nan = math.nan
    with path.open(newline="") as handle:
        for fields in csv.reader(handle):
            steps.append(int(fields[0]))
            for column, field in zip(columns, fields[1:], strict=True):
                try:
                    column.append(float(field) if field else nan)
                except ValueError:
                    column.append(nan)
    return [steps, *columns]


READERS = {
    "polars": polars_load,
    "polars-plain": polars_plain_load,
    "csv-reader": csv_reader_load,
}


def command(reader: str, series: int, paths: list[Path]) -> list[str]:
    """The argv that runs `reader` over `paths` in a new interpreter."""
    return [sys.executable, __file__, reader, str(series), *map(str, paths)]


def main(arguments: list[str]) -> int:
    reader, series, *paths = arguments
    load = READERS[reader]
    rows = sum(len(load(Path(path), int(series))[0]) for path in paths)
    print(f"{reader}: {rows} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
