"""Write Octopus ocms training metrics: metrics.json plus one headerless CSV per chart.

Standalone on purpose: Python 3.8+ and the standard library only, so this one file can be
copied into a training project. It is also the single home of the format's rules (name
charset, chart limit, file naming, default chart groups, sanitizing); ocms-tui imports
them from here instead of keeping a second copy.
"""

import os
import re
from typing import Callable, List, Optional, Tuple

__version__ = "0.1.0"

# ---------------------------------------------------------------------------
# The format (see ocms-format.md). Everything below is shared with the reader/checker.
# ---------------------------------------------------------------------------

FORMAT_VERSION = 1
MAX_CHARTS = 6  # ocms hard limit
METRICS_JSON = "metrics.json"
CSV_SUFFIX = ".csv"
METRICS_ENV = "METRICS"
DEFAULT_SUBDIR = "ocms_metrics"
X_AXIS = "step"
NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

ChartGroup = Tuple[str, Callable[[str], bool]]

DEFAULT_CHART_GROUPS = [
    ("loss", lambda k: k == "loss" or k.endswith("_loss")),
    ("learning_rate", lambda k: k == "learning_rate" or k.startswith("learning_rate/")),
    ("epoch", lambda k: k == "epoch"),
    ("timing", lambda k: k.startswith("timing/")),
    ("eval_score", lambda k: k in ("mse_score", "accuracy", "mIoU")),
    ("grad_norm", lambda k: k == "grad_norm"),
]  # type: List[ChartGroup]


def is_valid_name(name: object) -> bool:
    """True when `name` is a legal chart or y-axis name for ocms."""
    return isinstance(name, str) and NAME_RE.fullmatch(name) is not None


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


def resolve_metrics_dir(output_dir: Optional[str] = None) -> str:
    """`$METRICS` when set and not empty, else `<output_dir>/ocms_metrics`
    (`./ocms_metrics` when no output dir is given)."""
    env = os.environ.get(METRICS_ENV, "")
    if env:
        return env
    return os.path.join(output_dir if output_dir else ".", DEFAULT_SUBDIR)
