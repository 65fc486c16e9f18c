"""Make plotext draw with the numpy speedups, or with its own code again.

`install()` swaps draw.plotext_utility_speedups into `plotext._utility` (which
`plotext._build` reads at call time) and draw.plotext_build_speedups into plotext's matrix,
monitor and build classes; `uninstall()` puts plotext's own back (tests compare the two).
"""

from __future__ import annotations

import plotext._build as plotext_build
import plotext._utility as plotext_utility
from plotext._matrix import matrix_class
from plotext._monitor import monitor_class

from ocms_tui.draw import plotext_build_speedups as build
from ocms_tui.draw import plotext_speedups as pixels
from ocms_tui.draw import plotext_utility_speedups as utility

_REPLACED = {
    "get_lines": (utility.get_lines, utility.ORIGINAL_GET_LINES),
    "hd_group": (utility.hd_group, utility.ORIGINAL_HD_GROUP),
    "brush": (utility.brush, utility.ORIGINAL_BRUSH),
    "get_matrix_data": (utility.get_matrix_data, pixels.ORIGINAL_GET_MATRIX_DATA),
    "remove_outsiders": (utility.remove_outsiders, utility.ORIGINAL_REMOVE_OUTSIDERS),
    "get_lim": (utility.get_lim, pixels.ORIGINAL_GET_LIM),
    "join": (utility.join, utility.ORIGINAL_JOIN),
}
_REPLACED_METHODS = {
    "insert_element": (build.insert_element, build.ORIGINAL_INSERT_ELEMENT),
    "set_matrices": (build.set_matrices, build.ORIGINAL_SET_MATRICES),
}
_REPLACED_MONITOR_METHODS = {"to_time": (build.to_time, build.ORIGINAL_TO_TIME)}
_REPLACED_BUILD_METHODS = {"build_plot": (build.FASTER_BUILD_PLOT, build.ORIGINAL_BUILD_PLOT)}


def install() -> None:
    """Make plotext use these (idempotent)."""
    for name, (faster, _) in _REPLACED.items():
        setattr(plotext_utility, name, faster)
    for name, (faster, _) in _REPLACED_METHODS.items():
        setattr(matrix_class, name, faster)
    for name, (faster, _) in _REPLACED_BUILD_METHODS.items():
        setattr(plotext_build.build_class, name, faster)
    for name, (faster, _) in _REPLACED_MONITOR_METHODS.items():
        setattr(monitor_class, name, faster)


def uninstall() -> None:
    """plotext's own helpers again (tests compare the two)."""
    for name, (_, original) in _REPLACED.items():
        setattr(plotext_utility, name, original)
    for name, (_, original) in _REPLACED_METHODS.items():
        setattr(matrix_class, name, original)
    for name, (_, original) in _REPLACED_BUILD_METHODS.items():
        setattr(plotext_build.build_class, name, original)
    for name, (_, original) in _REPLACED_MONITOR_METHODS.items():
        setattr(monitor_class, name, original)
