"""Which way is better for a series: the one rule the health checks, `diff` and sorting share.

Lower is better for loss-like names (`loss`, `*_loss`, `*loss`, perplexity, error rates);
higher for accuracy-, score-, mIoU-, F1-, BLEU-, AUC-, reward-like names. A name that says
neither is lower-better (most logged metrics are losses) unless the user names it in
`--higher-better NAME`; `says_direction()` tells whether the name decided it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Matched against the lower-cased name split into words at `_`, `-`, `/`, `.` and digits.
_HIGHER_WORDS = frozenset(
    {
        "acc",
        "accuracy",
        "score",
        "miou",
        "iou",
        "map",
        "f1",
        "bleu",
        "rouge",
        "auc",
        "auroc",
        "precision",
        "recall",
        "reward",
        "return",
        "psnr",
        "ssim",
        "dice",
        "top1",
        "top5",
        "exact",
        "match",
    }
)
_LOWER_WORDS = frozenset(
    {"loss", "error", "err", "perplexity", "ppl", "wer", "cer", "mse", "mae", "rmse", "nll"}
)
_WORD_SPLIT = re.compile(r"[_\-/. ]+")


def _words(name: str) -> list[str]:
    return [word for word in _WORD_SPLIT.split(name.lower()) if word]


def is_loss_like(name: str) -> bool:
    """The format's loss-like names: `loss` or ending `_loss` (also `eval/loss`, `val-loss`)."""
    words = _words(name)
    return bool(words) and words[-1] == "loss"


def _name_direction(name: str) -> bool | None:
    """True: higher is better; False: lower; None: the name does not say."""
    words = _words(name)
    # The last word decides ("loss_acc_weighted_loss" is a loss); `*_score` after `mse` too:
    # "mse_score" is the format's own example of an evaluation score where lower is better.
    for word in reversed(words):
        if word in _LOWER_WORDS or word.endswith("loss"):
            return False
        if word in _HIGHER_WORDS or word.startswith(("acc", "top")):
            return not (word == "score" and any(other in _LOWER_WORDS for other in words))
    return None


def says_direction(name: str) -> bool:
    """Whether the name alone says which way is better."""
    return _name_direction(name) is not None


def higher_is_better(name: str, higher_better: Iterable[str] = ()) -> bool:
    """Whether a larger value of series `name` is better. `higher_better` lists the names
    the user declared higher-better (`--higher-better NAME`), which win over the name."""
    if name in set(higher_better):
        return True
    return bool(_name_direction(name))
