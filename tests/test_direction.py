"""Which way is better for a series name."""

import pytest

from ocms_tui.format.direction import higher_is_better, is_loss_like, says_direction


@pytest.mark.parametrize(
    "name",
    [
        "loss",
        "eval_loss",
        "vlm_loss",
        "train/loss",
        "val-loss",
        "perplexity",
        "mse_score",
        "wer",
        "action_dit_loss",
        "error_rate",
    ],
)
def test_lower_is_better(name):
    assert not higher_is_better(name)
    assert says_direction(name)


@pytest.mark.parametrize(
    "name",
    [
        "accuracy",
        "eval_accuracy",
        "mIoU",
        "f1",
        "bleu",
        "eval_score",
        "top1_acc",
        "reward",
        "val/acc",
        "rouge-l",
    ],
)
def test_higher_is_better(name):
    assert higher_is_better(name)
    assert says_direction(name)


def test_unknown_name_is_lower_better_and_says_so():
    assert not higher_is_better("grad_norm")
    assert not says_direction("grad_norm")
    assert not says_direction("")


def test_user_override_wins():
    assert higher_is_better("grad_norm", ["grad_norm"])
    assert higher_is_better("eval_loss", ["eval_loss"])
    assert not higher_is_better("eval_loss", ["loss"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("loss", True),
        ("eval_loss", True),
        ("val/loss", True),
        ("lossy", False),
        ("loss_scale", False),
        ("accuracy", False),
        ("", False),
    ],
)
def test_loss_like(name, expected):
    assert is_loss_like(name) is expected
