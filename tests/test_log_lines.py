"""The values a log line prints, with the labels a person reads in it."""

from __future__ import annotations

import ast

import pytest

from ocms_tui.onboard.log_lines import eval_prefix, label_words, read_log_line


def line(source: str, function: str = "train") -> dict[str, str] | None:
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call)
    message = call.args[1] if source.startswith("logger.log(") else call.args[0]
    found = read_log_line(message, call, function)
    if found is None:
        return None
    values = {key: ast.unparse(value) for key, value in found.values}
    if found.step is not None:
        values["<step>"] = ast.unparse(found.step)
    return values


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # nanoGPT
            'print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")',
            {
                "loss": "lossf",
                "time": "dt * 1000",
                "mfu": "running_mfu * 100",
                "<step>": "iter_num",
            },
        ),
        (
            "print(f\"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}\")",
            {"train_loss": "losses['train']", "val_loss": "losses['val']", "<step>": "iter_num"},
        ),
        (  # pytorch/examples mnist, training: the epoch index is neither step nor metric
            "print('Train Epoch: {} [{}/{} ({:.0f}%)]\\tLoss: {:.6f}'.format(epoch, "
            "batch_idx * len(data), len(loader.dataset), 100. * batch_idx / len(loader), loss.item()))",
            {"loss": "loss.item()"},
        ),
        (  # logging's lazy arguments, and `%` formatting
            "logger.info('epoch %d step %d loss=%.3f lr %.2e', e, s, loss, lr)",
            {"loss": "loss", "lr": "lr", "<step>": "s"},
        ),
        ("print('loss %.2f' % value)", {"loss": "value"}),
        ("print('loss', value, 'acc', accuracy)", {"loss": "value", "acc": "accuracy"}),
        ("print('Loss: {l:.3f} at {s}'.format(s=step, l=loss))", {"loss": "loss"}),
        ("logger.log(20, 'loss=%f', loss)", {"loss": "loss"}),
    ],
)
def test_values_take_the_words_before_them(source: str, expected: dict[str, str]) -> None:
    assert line(source) == expected


def test_evaluation_lines_are_apart_and_a_count_is_not_accuracy() -> None:
    mnist_test = (
        "print('\\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\\n'.format("
        "test_loss, correct, len(loader.dataset), 100. * correct / len(loader.dataset)))"
    )
    assert line(mnist_test, "main") == {
        "test_loss": "test_loss",
        "test_accuracy": "100.0 * correct / len(loader.dataset)",
    }
    # Without the percentage the script divides, the count is named for what it is.
    assert line("print('loss {:.3f} Accuracy: {}/{}'.format(l, c, n))", "evaluate") == {
        "eval_loss": "l",
        "eval_correct": "c",
    }
    assert line("print(f'val loss {v} train loss {t}')", "validate") == {
        "val_loss": "v",
        "train_loss": "t",
    }


def test_lines_without_a_loss_or_with_a_dict_template_are_not_log_lines() -> None:
    assert line("print(f'epoch {e} done in {t:.1f}s')") is None
    assert line("print('loss %(l)f' % {'l': 1.0})") is None  # named placeholders: left alone


def test_labels_and_prefixes() -> None:
    assert label_words(", train loss: ") == ["train", "loss"]
    assert label_words("Test set loss: ") == ["test", "loss"]
    assert line("print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, a))") == {
        "average_loss": "a"  # an epoch's mean in training: not the per-batch loss
    }
    assert label_words(" [") == []
    assert eval_prefix("Test set: Average loss: ", "main") == "test"
    assert eval_prefix("loss ", "validation_epoch") == "val"
    assert eval_prefix("loss ", "train_one_epoch") is None
