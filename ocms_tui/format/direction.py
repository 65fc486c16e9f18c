"""Which way is better for a series, judged from its name alone.

The format says: lower is better for loss-like names, higher for accuracy-, score- and
mIoU-like names. Anything else (a learning rate, an epoch counter, a timing) has no better
way: None, and callers say so instead of guessing.
"""

from __future__ import annotations

import re

# Whole words of a name split at `_`, `-`, `/` and `.` (names are `[A-Za-z0-9_-]`, but
# imported logs may carry a path-like key): `val_acc` is higher-better, `accumulate` is not.
_HIGHER_WORDS = frozenset(
    {
        "accuracy",
        "acc",
        "top1",
        "top5",
        "score",
        "miou",
        "iou",
        "map",
        "f1",
        "precision",
        "recall",
        "auc",
        "auroc",
        "bleu",
        "rouge",
        "dice",
        "r2",
        "reward",
        "return",
        "psnr",
        "ssim",
    }
)
_LOWER_WORDS = frozenset(
    {
        "loss",
        "error",
        "err",
        "perplexity",
        "ppl",
        "mse",
        "mae",
        "rmse",
        "wer",
        "cer",
        "nll",
        "fid",
        "regret",
    }
)
_WORD = re.compile(r"[A-Za-z0-9]+")
# Suffixes glued to a name without a separator (`train_mse_score`: the last word wins).
_SCORE_SUFFIX = re.compile(r"(score|accuracy|acc|f1)$")
_LOSS_SUFFIX = re.compile(r"(loss|error)$")


def higher_is_better(series_name: str) -> bool | None:
    """True for accuracy/score/mIoU/f1/precision/recall-like names, False for loss-like
    (`loss`, `*_loss`), error- and perplexity-like names, None when the name says nothing.
    The last word that says something decides: `mse_score` is a score, `acc_loss` a loss."""
    words = [word.lower() for word in _WORD.findall(series_name)]
    for word in reversed(words):
        if word in _LOWER_WORDS:
            return False
        if word in _HIGHER_WORDS:
            return True
    last = words[-1] if words else ""
    if _LOSS_SUFFIX.search(last):
        return False
    if _SCORE_SUFFIX.search(last):
        return True
    return None
