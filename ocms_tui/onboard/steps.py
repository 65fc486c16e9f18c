"""The step a logging site records at: the script's own global step, never an index that
restarts each epoch.

In order: the step the site itself logs with (`wandb.log(..., step=s)`, a printed
`iter {iter_num}`, a dict's `"iter": iter_num`) unless it restarts; a counter the script
keeps (`iter_num += 1`, `completed_steps += 1`); `epoch * len(loader) + batch_idx` in an
epoch's batch loop; the loop variable of a loop nothing encloses. Inside a loop with none
of these, init adds a counter that keeps growing across epochs; outside any loop (an
evaluation function) the values go to the last step recorded.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

ADDED_COUNTER = "_ocms_step"
_COUNTER_ORDER = (
    "global_step",
    "completed_steps",
    "iter_num",
    "total_steps",
    "num_updates",
    "global_iter",
    "step",
    "steps",
    "iteration",
    "updates",
)
_COUNTER_NAME = re.compile(r"step|iter|update", re.IGNORECASE)
_EPOCH_NAME = re.compile(r"epoch", re.IGNORECASE)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class StepChoice:
    expression: str | None  # None: the last step recorded
    how: str  # for init's plan
    counter_loop: ast.For | ast.AsyncFor | ast.While | None = None  # gets an added counter


class Tree:
    """A module with each node's parent."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self.parents: dict[ast.AST, ast.AST] = {
            child: parent for parent in ast.walk(module) for child in ast.iter_child_nodes(parent)
        }

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def scope_of(self, node: ast.AST) -> ast.AST:
        return next((a for a in self.ancestors(node) if isinstance(a, _SCOPES[:2])), self.module)

    def called_in_a_loop(self, scope: ast.AST) -> bool:
        """A function the module calls inside a loop (`for epoch ...: train()`)."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        for node in ast.walk(self.module):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == scope.name and self.loops_of(node):
                return True
        return False

    def loops_of(self, node: ast.AST) -> list[ast.For | ast.AsyncFor | ast.While]:
        """The loops around `node` inside its function, innermost first."""
        loops = []
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, _SCOPES):
                break
            if isinstance(ancestor, _LOOPS):
                loops.append(ancestor)
        return loops


def _code(node: ast.AST) -> str:
    return ast.unparse(node)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function or module, not those of functions defined inside it."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _SCOPES):
            pending.extend(ast.iter_child_nodes(node))


def _counters(scope: ast.AST) -> dict[str, int]:
    """Names the scope increments (`x += 1`), with the line of the first increment."""
    found: dict[str, int] = {}
    for node in _own_nodes(scope):
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Add)
            and isinstance(node.target, ast.Name)
            and _COUNTER_NAME.search(node.target.id)
            and not node.target.id.startswith("local_")
        ):
            found.setdefault(node.target.id, node.lineno)
    return found


def _parameters(scope: ast.AST) -> list[str]:
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    arguments = scope.args
    return [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]


def _loop_index(loop: ast.AST) -> tuple[str, ast.expr | None] | None:
    """(index name, what `enumerate` walks or None) of `for i, x in enumerate(X)` or
    `for i in range(...)`-like loops."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return None
    target, iterated = loop.target, loop.iter
    if (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id == "enumerate"
        and iterated.args
        and isinstance(target, ast.Tuple)
        and target.elts
        and isinstance(target.elts[0], ast.Name)
    ):
        return target.elts[0].id, iterated.args[0]
    if isinstance(target, ast.Name):
        return target.id, None
    return None


def _steps_directly(loop: ast.AST) -> bool:
    """The loop's own body (not a loop or function inside it) runs a backward pass or an
    optimizer step."""
    pending = list(loop.body) if isinstance(loop, _LOOPS) else []
    while pending:
        node = pending.pop()
        if isinstance(node, (*_LOOPS, *_SCOPES)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, _code(node.func.value).lower()
            if method == "backward" or (method == "step" and "optim" in receiver):
                return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def choose_step(
    tree: Tree, node: ast.AST, explicit: ast.expr | None, keyed: ast.expr | None = None
) -> StepChoice:
    """The step for a site at `node`; `explicit` is the one the site logs with, `keyed`
    the value of a step key of its dict."""
    scope = tree.scope_of(node)
    loops = tree.loops_of(node)
    epoch_names = [name for name in _parameters(scope) if _EPOCH_NAME.search(name)]
    restarting: set[str] = set()
    for depth, loop in enumerate(loops):
        index = _loop_index(loop)
        if index is None:
            continue
        if _EPOCH_NAME.search(index[0]):
            epoch_names.append(index[0])
            restarting.add(index[0])  # an epoch index is not a step
        elif depth < len(loops) - 1:  # an inner loop's index starts again each time
            restarting.add(index[0])
    if epoch_names or tree.called_in_a_loop(scope):
        # Each call (each epoch) runs the loops again: their indexes start over.
        restarting |= {i[0] for loop in loops if (i := _loop_index(loop))}
    for given, said in ((explicit, "the step the script logs with"), (keyed, "its step key")):
        if given is None or isinstance(given, ast.Constant):
            continue
        if isinstance(given, ast.Name) and given.id in restarting:
            continue
        return StepChoice(_code(given), f"{said}, `{_code(given)}`")
    counters = _counters(scope)
    if scope is not tree.module:
        counters = {**_counters(tree.module), **counters}
    usable = [name for name in counters if name not in restarting]
    if usable:
        name = min(
            usable,
            key=lambda n: (_COUNTER_ORDER.index(n) if n in _COUNTER_ORDER else 99, n),
        )
        return StepChoice(name, f"the script's own counter `{name}` (+= 1, line {counters[name]})")
    for loop in loops:
        index = _loop_index(loop)
        if index is None:
            continue
        name, walked = index
        if walked is not None and epoch_names and name in restarting:
            epoch = epoch_names[-1] if epoch_names[-1] != name else epoch_names[0]
            expression = f"{epoch} * len({_code(walked)}) + {name}"
            return StepChoice(expression, f"`{expression}`: grows across epochs")
        if name not in restarting and loop is loops[-1]:
            return StepChoice(name, f"the loop variable `{name}`")
        break
    innermost = _loop_index(loops[0]) if loops else None
    if (
        innermost is not None
        and _EPOCH_NAME.search(innermost[0])
        and len(loops) == 1
        and not tree.called_in_a_loop(scope)
        and _steps_directly(loops[0])
    ):
        # Full-batch training (`for epoch in range(5000): ... optimizer.step()`): each
        # "epoch" is one optimizer step, so its index is the script's iteration counter.
        name = innermost[0]
        return StepChoice(
            name,
            f"the loop variable `{name}`: the loop at line {loops[0].lineno} takes one "
            "optimizer step per iteration (no batch loop inside)",
        )
    if innermost is not None and _EPOCH_NAME.search(innermost[0]):
        return StepChoice(None, "once an epoch: the last step recorded (after its training steps)")
    if loops:
        return StepChoice(
            ADDED_COUNTER,
            "no global step in the script: init adds a counter that grows by one each "
            f"iteration of the loop at line {loops[0].lineno}",
            loops[0],
        )
    return StepChoice(None, "no step here: the last step recorded (an evaluation between steps)")
