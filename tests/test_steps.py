"""The step a site records at: the script's own global step, never a restarting index."""

from __future__ import annotations

import ast

from ocms_tui.onboard.steps import ADDED_COUNTER, Tree, choose_step


def step_at(source: str, explicit: str | None = None) -> tuple[str | None, str]:
    """The step for the `print(...)` call of `source` (the one marked `# here`)."""
    module = ast.parse(source)
    tree = Tree(module)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# here" in text)
    call = next(
        node for node in ast.walk(module) if isinstance(node, ast.Call) and node.lineno == line
    )
    given = None if explicit is None else ast.parse(explicit, mode="eval").body
    choice = choose_step(tree, call, given)
    return choice.expression, choice.how


def test_a_counter_the_script_keeps_wins_over_a_restarting_index() -> None:
    source = (
        "def train(loader, epochs):\n"
        "    completed_steps = 0\n"
        "    for epoch in range(epochs):\n"
        "        for step, batch in enumerate(loader):\n"
        "            completed_steps += 1\n"
        "            print(loss)  # here\n"
    )
    assert step_at(source)[0] == "completed_steps"
    assert step_at(source, explicit="step")[0] == "completed_steps"  # `step` restarts
    assert step_at(source, explicit="completed_steps")[0] == "completed_steps"


def test_a_module_level_loop_uses_its_counter() -> None:
    source = (
        "iter_num = 0\nlocal_iter_num = 0\nwhile True:\n"
        "    print(loss)  # here\n"
        "    iter_num += 1\n    local_iter_num += 1\n"
    )
    assert step_at(source)[0] == "iter_num"


def test_a_batch_index_in_a_function_called_per_epoch_grows_with_the_epoch() -> None:
    source = (
        "def train(model, train_loader, epoch):\n"
        "    for batch_idx, (data, target) in enumerate(train_loader):\n"
        "        print(loss)  # here\n"
    )
    assert step_at(source)[0] == "epoch * len(train_loader) + batch_idx"
    nested = (
        "for epoch in range(3):\n"
        "    for i, batch in enumerate(loader):\n"
        "        print(loss)  # here\n"
    )
    assert step_at(nested)[0] == "epoch * len(loader) + i"


def test_no_step_at_all_adds_a_counter_or_uses_the_last_step() -> None:
    source = "for epoch in range(3):\n    for batch in loader:\n        print(loss)  # here\n"
    expression, how = step_at(source)
    assert expression == ADDED_COUNTER and "adds a counter" in how
    assert step_at("def test(model):\n    print(loss)  # here\n")[0] is None
    assert step_at("for step in range(10):\n    print(loss)  # here\n")[0] == "step"
