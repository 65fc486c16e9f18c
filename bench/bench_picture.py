"""What the picture checks (ocms_tui.follow.picture) add to `--check` on a large run.

The same `check_directory` in one process, in alternating rounds: as it is, and with the
picture checks switched off (the tally fed nothing, no check run), which is `--check` as it
was before them. Wall and CPU seconds (CPU moves less with other work on a shared machine).

    python bench/bench_picture.py [ROWS] [ROUNDS]     (default: 1,000,000 rows, 5 rounds)
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from unittest import mock

from common import interleaved, seconds
from data import RUN_CHARTS, Workspace

from ocms_tui.follow import chart_data
from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.picture import PICTURE_RULES, PictureTally


def picture_cpu(directory: object) -> float:
    """CPU seconds spent inside the picture code during one check (each call timed on its
    own thread): the cost itself, which other work on the machine does not move."""
    spent = [0.0]
    lock = threading.Lock()

    def timed(function: Callable[..., object]) -> Callable[..., object]:
        def wrapper(*args: object) -> object:
            start = time.thread_time()
            try:
                return function(*args)
            finally:
                with lock:
                    spent[0] += time.thread_time() - start

        return wrapper

    with (
        mock.patch.object(PictureTally, "add", timed(PictureTally.add)),
        mock.patch.object(chart_data, "picture_problems", timed(chart_data.picture_problems)),
    ):
        check_directory(directory)
    return spent[0]


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    workspace = Workspace()
    try:
        directory = workspace.run(rows)
        found = [p.rule.value for p in check_directory(directory).problems]

        def without_picture() -> object:
            with (
                mock.patch.object(PictureTally, "add", lambda *_: None),
                mock.patch.object(chart_data, "picture_problems", lambda *_: []),
            ):
                result = check_directory(directory)
            assert not any(p.rule in PICTURE_RULES for p in result.problems)
            return result

        spent = picture_cpu(directory)
        timings = interleaved(
            {"with picture checks": lambda: check_directory(directory), "without": without_picture},
            rounds,
        )
    finally:
        workspace.close()
    with_, without = timings["with picture checks"], timings["without"]
    print(f"--check of {len(RUN_CHARTS)} charts x {rows:,} rows x 4 series, {rounds} rounds")
    print(f"problems found (synthetic data): {found}")
    print(f"{'':22}{'wall median':>14}{'cpu median':>14}")
    for name, timing in timings.items():
        print(f"{name:22}{seconds(timing.median):>14}{seconds(timing.cpu_median):>14}")
    print(
        f"{'inside the picture code':22}{'':>14}{seconds(spent):>14}"
        f"  ({spent / without.cpu_median * 100:.1f}% of a check's CPU without it)"
    )
    print(
        f"{'extra':22}{(with_.median / without.median - 1) * 100:>13.1f}%"
        f"{(with_.cpu_median / without.cpu_median - 1) * 100:>13.1f}%"
    )


if __name__ == "__main__":
    main()
