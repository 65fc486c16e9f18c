"""Where and how `ocms-tui init` records a plain training loop, decided on the syntax tree
before anything is edited. The promise: the training does not change.

- No expression of the script is evaluated twice. A value that is not a plain name (or
  arithmetic of names) is bound once to a fresh name just before its statement, and both
  the statement and the recorder read that name; when that would reorder calls the
  statement makes, the value is not recorded and the plan says why.
- The call goes right after the site's own statement, before anything later on the same
  line (`print(...); running_loss = 0.0`).
- A site under an optional logger's guard (`if wandb_log:`, `if args.with_tracking:`) is
  recorded after that guard, so a default run records too; only values the guard did not
  compute, and that can be read again without effect, are recorded there.
- The step is the script's own (`steps.choose_step`); x-axis counters are not metrics.
No Textual here.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocms_tui.follow.picture import FRACTION_NAME
from ocms_tui.onboard.init_syntax import (
    has_effect,
    is_axis_key,
    is_optional_logger_guard,
    key_text,
    literal_items,
    names_assigned,
    position,
    rereadable,
)
from ocms_tui.onboard.log_lines import STEP_WORDS, is_percentage, read_log_line
from ocms_tui.onboard.scan_sites import (
    ACCELERATOR,
    LOGGER,
    METRICS_DICT,
    PRINT,
    TB_SCALAR,
    TB_SCALARS,
    TQDM,
    WANDB,
    Site,
)
from ocms_tui.onboard.steps import ADDED_COUNTER, StepChoice, Tree, choose_step

# In one block, the first kind of this list is the one recorded: it carries the most
# complete metrics (a wandb dict over a printed loss).
LOOP_SITE_PRIORITY = (WANDB, ACCELERATOR, TB_SCALAR, TB_SCALARS, METRICS_DICT, TQDM, LOGGER, PRINT)
_CONDITIONAL = (ast.Lambda, ast.IfExp, ast.BoolOp, ast.ListComp, ast.SetComp, ast.DictComp)
_SIMPLE_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)


@dataclass(frozen=True)
class Hoist:
    """`name = <node>` added before the statement, and `name` in place of the node."""

    name: str
    node: ast.expr


@dataclass
class Wiring:
    site: Site
    statement: ast.stmt  # the site's statement: hoisted values go before it
    anchor: ast.stmt  # the call goes right after this (the statement, or a guard `if`)
    step: StepChoice
    metrics: list[tuple[str, str]]  # (key as Python source, value as Python source)
    whole: str | None = None  # a dict logged as it is (minus x-axis keys)
    axis_keys: tuple[str, ...] = ()  # keys of `whole` left out
    guard: str | None = None  # the optional logger's test the call was moved out of
    hoists: list[Hoist] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # "key: why"
    whole_keys: list[str] = field(default_factory=list)  # the keys `whole` is known to hold
    stated_step: str | None = None  # the step the site logs with (an epoch, say)
    inside: Wiring | None = None  # the values only the guard computes, recorded inside it
    inside_guard: str | None = None  # set on such a wiring: the guard it stays in
    joined: list[Wiring] = field(default_factory=list)  # earlier sites this call records too
    joined_into: int | None = None  # set on such a site: the line whose call records it

    @property
    def keys(self) -> list[str]:
        keys = list(self.whole_keys)
        for key, _ in self.metrics:
            try:
                keys.append(ast.literal_eval(key))
            except (ValueError, SyntaxError):
                keys.append(key)
        return keys

    def call(self, output_dir_expr: str | None) -> str | None:
        """The added `ocms_log(step, {...})` line, or None when nothing is left to record."""
        if self.whole is not None:
            metrics = self.whole
            if self.axis_keys:
                left_out = ", ".join(repr(key) for key in self.axis_keys)
                metrics = f"{{k: v for k, v in {metrics}.items() if k not in ({left_out},)}}"
        elif self.metrics:
            pairs = [pair for wiring in [*self.joined, self] for pair in wiring.metrics]
            metrics = "{" + ", ".join(f"{key}: {value}" for key, value in pairs) + "}"
        else:
            return None
        extra = f", output_dir={output_dir_expr}" if output_dir_expr else ""
        return f"ocms_log({self.step.expression or 'None'}, {metrics}{extra})"


class _FileWiring:
    def __init__(self, module: ast.Module, taken: set[str]) -> None:
        self.tree = Tree(module)
        self.taken = taken | {node.id for node in ast.walk(module) if isinstance(node, ast.Name)}

    def fresh(self, key: str) -> str:
        base = "_ocms_" + (re.sub(r"\W+", "_", key).strip("_").lower() or "value")
        name, number = base, 1
        while name in self.taken:
            number += 1
            name = f"{base}_{number}"
        self.taken.add(name)
        return name

    def node_of(self, site: Site) -> ast.AST | None:
        for node in ast.walk(self.tree.module):
            if getattr(node, "lineno", None) != site.line:
                continue
            if site.kind == METRICS_DICT and isinstance(node, (ast.Assign, ast.AnnAssign)):
                return node
            if isinstance(node, ast.Call) and node.col_offset == site.column:
                return node
        return None

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        if isinstance(node, ast.stmt):
            return node
        return next((a for a in self.tree.ancestors(node) if isinstance(a, ast.stmt)), None)

    def values_of(
        self, site: Site, node: ast.AST
    ) -> tuple[list[tuple[str, ast.expr]], ast.expr | None, ast.expr | None]:
        """(key source, value) pairs, the step the site states, and a whole-dict value."""
        if site.kind in (PRINT, LOGGER) and isinstance(node, ast.Call) and node.args:
            message = node.args[0]
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "log" and len(node.args) > 1:
                message = node.args[1]
            line = read_log_line(message, node, site.function)
            if line is None:
                return [], None, None
            return (
                [(repr(key), value) for key, value in line.values],
                line.step,
                None,
            )
        if site.kind == METRICS_DICT and isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            return literal_items(node.value), None, target
        if not isinstance(node, ast.Call):
            return [], None, None
        keywords = {item.arg: item.value for item in node.keywords if item.arg}
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        if site.kind in (WANDB, ACCELERATOR):
            data = positional[0] if positional else keywords.get("data", keywords.get("values"))
            step = keywords.get("step")
            if site.kind == ACCELERATOR and step is None and len(positional) > 1:
                step = positional[1]
            if isinstance(data, ast.Dict):
                return literal_items(data), step, None
            return [], step, data
        if site.kind == TQDM:
            items = literal_items(positional[0]) if positional else []
            items += [(repr(k), v) for k, v in keywords.items() if k != "refresh"]
            return items, None, None
        if site.kind == TB_SCALAR:
            tag = positional[0] if positional else keywords.get("tag")
            value = positional[1] if len(positional) > 1 else keywords.get("scalar_value")
            step = positional[2] if len(positional) > 2 else keywords.get("global_step")
            if tag is None or value is None:
                return [], step, None
            return [(ast.unparse(tag), value)], step, None
        return [], None, None

    def wire(self, site: Site) -> Wiring | str:
        node = self.node_of(site)
        statement = None if node is None else self.statement_of(node)
        if node is None or statement is None:
            return "not found in the file's syntax tree"
        if not isinstance(statement, _SIMPLE_STATEMENTS):
            return f"inside a `{type(statement).__name__.lower()}` statement's header"
        parent = self.tree.parents.get(statement)
        if parent is not None and getattr(parent, "lineno", 0) == statement.lineno:
            return "on the same line as its `if`/`for` (a one-line block)"
        anchor, guard = statement, None
        while True:
            parent = self.tree.parents.get(anchor)
            if (
                isinstance(parent, ast.If)
                and anchor in parent.body
                and is_optional_logger_guard(parent.test)
            ):
                anchor, guard = parent, ast.unparse(parent.test)
                continue
            if (
                isinstance(parent, ast.If)
                and guard is not None
                and parent.orelse == [anchor]
                and is_optional_logger_guard(parent.test)
            ):
                # `if use_tb: ... elif wandb_log: ...`: after the whole chain, so that the
                # values are recorded whichever logger is on, and with none.
                anchor = parent
                continue
            if (
                isinstance(parent, (ast.With, ast.AsyncWith))
                and anchor in parent.body
                and any(is_optional_logger_guard(item.context_expr) for item in parent.items)
            ):
                anchor = parent  # `with writer:` / `with writer.as_default():` is the logger's
                continue
            break
        pairs, explicit, whole = self.values_of(site, node)
        if site.kind == TB_SCALARS:
            return "add_scalars is recorded by hand (its tag joins each key)"
        keyed = next((v for k, v in pairs if key_text(k).lower() in STEP_WORDS), None)
        step = choose_step(self.tree, node, explicit, keyed)
        wiring = Wiring(site, statement, anchor, step, [], guard=guard)
        logged = node.args[0] if isinstance(node, ast.Call) and node.args else None
        if site.kind in (WANDB, ACCELERATOR) and isinstance(logged, ast.Dict):
            wiring.dropped += [
                f"`{ast.unparse(key)}`: a key computed at run time (init records literal keys)"
                for key in logged.keys
                if key is not None
                and not (isinstance(key, ast.Constant) and isinstance(key.value, str))
            ]
        if explicit is not None and rereadable(explicit):
            wiring.stated_step = ast.unparse(explicit)
        guarded_names = self.guarded_names(anchor) if guard else set()
        axis: list[str] = []
        guard_only: list[tuple[str, ast.expr]] = []
        for key, value in pairs:
            if is_axis_key(key_text(key), value):
                axis.append(key_text(key))
                continue
            if whole is not None:
                wiring.whole_keys.append(key_text(key))
                continue  # the dict is logged as it is: its values are not read again
            if (
                guard is not None
                and {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} & guarded_names
            ):
                guard_only.append((key, value))
                continue
            expression = self.expression_for(wiring, key_text(key), value, guarded_names)
            if expression is not None:
                wiring.metrics.append((key, expression))
        if guard_only:
            # Computed only when the optional logger is on: recorded where they are, inside
            # the guard, in addition to the rest recorded after it.
            inside = Wiring(site, statement, statement, wiring.step, [], inside_guard=guard)
            for key, value in guard_only:
                expression = self.expression_for(inside, key_text(key), value, set())
                if expression is not None:
                    inside.metrics.append((key, expression))
            wiring.inside = inside if inside.metrics else None
            wiring.dropped += inside.dropped
        if whole is not None:
            wiring.axis_keys = tuple(axis)
            wiring.whole = self.expression_for(wiring, "metrics", whole, guarded_names)
        if (
            explicit is not None
            and not rereadable(explicit)
            and step.expression == ast.unparse(explicit)
        ):
            name = self.expression_for(wiring, "step", explicit, guarded_names)
            if name is None:
                return "its step cannot be read again without running it twice"
            wiring.step = StepChoice(name, step.how)
        return wiring

    def guarded_names(self, anchor: ast.stmt) -> set[str]:
        """Names only optional-logger guards of the function assign (`total_loss` set and
        summed under `if args.with_tracking:`): undefined, or stale, in a default run."""
        scope = self.tree.scope_of(anchor)
        inside: set[str] = names_assigned(anchor)
        outside: set[str] = set()
        for node in ast.walk(scope):
            if not isinstance(node, (ast.Name)) or not isinstance(node.ctx, ast.Store):
                continue
            guards = [
                a
                for a in self.tree.ancestors(node)
                if isinstance(a, ast.If) and is_optional_logger_guard(a.test)
            ]
            (inside if guards else outside).add(node.id)
        return inside - outside

    def expression_for(
        self, wiring: Wiring, key: str, value: ast.expr, guarded: set[str]
    ) -> str | None:
        """What the added call reads for `value`: its own text, or a fresh name bound once.
        An accuracy the script prints as a percentage is recorded as the fraction it is
        (`--check` warns of an accuracy above 1, with the same name pattern)."""
        read = self.reading_for(wiring, key, value, guarded)
        if read is not None and FRACTION_NAME.search(key_text(key)) and is_percentage(value):
            return f"({read}) / 100"
        return read

    def reading_for(
        self, wiring: Wiring, key: str, value: ast.expr, guarded: set[str]
    ) -> str | None:
        read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if wiring.guard is not None:
            if read & guarded:
                wiring.dropped.append(f"{key}: computed only when `{wiring.guard}`")
                return None
            if not rereadable(value):
                wiring.dropped.append(
                    f"{key}: `{ast.unparse(value)}` runs only when `{wiring.guard}`; "
                    "init does not run it again"
                )
                return None
            return ast.unparse(value)
        if rereadable(value):
            return ast.unparse(value)
        why = self.hoist_blocker(wiring, value)
        if why is not None:
            wiring.dropped.append(f"{key}: `{ast.unparse(value)}` {why}")
            return None
        name = self.fresh(key)
        wiring.hoists.append(Hoist(name, value))
        return name

    def hoist_blocker(self, wiring: Wiring, value: ast.expr) -> str | None:
        """Why binding `value` before its statement would change what the script does."""
        statement = wiring.statement
        for ancestor in self.tree.ancestors(value):
            if ancestor is statement:
                break
            if isinstance(ancestor, (*_CONDITIONAL, ast.GeneratorExp)):
                return "is evaluated only under a condition or in its own scope"
        inside = set(ast.walk(value))
        above = set(self.tree.ancestors(value))
        hoisted = {n for hoist in wiring.hoists for n in ast.walk(hoist.node)}
        for node in ast.walk(statement):
            if node in inside or node in above or node in hoisted or not has_effect(node):
                continue
            if position(node) < position(value):
                return (
                    "comes after a call on the same statement; moving it first would reorder them"
                )
        return None


def _joinable(tree: Tree, first: Wiring, second: Wiring) -> bool:
    """`second` can record `first`'s values too: the same step, and nothing but calls
    (`writer.add_scalar`, `print`) between them that could rebind what `first` reads."""
    if first.whole is not None or second.whole is not None or first.inside or second.inside:
        return False
    if first.step.expression != second.step.expression or first.guard != second.guard:
        return False
    if first.inside_guard or second.inside_guard:
        return False
    if first.anchor is second.anchor:
        return True
    parent = tree.parents.get(first.anchor)
    if parent is None or parent is not tree.parents.get(second.anchor):
        return False
    for name in ("body", "orelse", "finalbody"):
        body = getattr(parent, name, None)
        if isinstance(body, list) and first.anchor in body and second.anchor in body:
            between = body[body.index(first.anchor) + 1 : body.index(second.anchor)]
            return all(
                isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                for statement in between
            )
    return False


def _join_neighbours(tree: Tree, block: list[Wiring]) -> None:
    """One `ocms_log` after a run of neighbouring sites at the same step (cleanrl's eight
    `writer.add_scalar(..., global_step)` lines): one row per step, not one per site."""
    for previous, current in itertools.pairwise(block):
        if previous.step.counter_loop is None and _joinable(tree, previous, current):
            current.joined = [*previous.joined, previous]
            previous.joined = []
            for wiring in current.joined:
                wiring.joined_into = current.site.line


def wire_file(
    module: ast.Module,
    sites: Sequence[Site],
    taken: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[list[Wiring], list[str]]:
    """The wirings of a file's loop sites (one per block, the richest kind) and, for each
    site left out, `line: why`."""
    wiring = _FileWiring(module, set(taken))
    chosen: dict[tuple[int, str], list[Wiring]] = {}
    notes: list[str] = []
    for site in sorted(sites, key=lambda s: LOOP_SITE_PRIORITY.index(s.kind)):
        outcome = wiring.wire(site)
        if isinstance(outcome, str):
            notes.append(f"{site.line}: not wired: {outcome}")
            continue
        if outcome.call(None) is None and outcome.inside is not None:
            # Nothing a default run computes: only what the guard computes, inside it
            # (transformers' run_glue_no_trainer: train_loss sums under `with_tracking`).
            notes.append(
                f"{site.line}: a default run records nothing here: nothing it logs is "
                f"computed without `{outcome.guard}` or can be read again"
                + (f" ({'; '.join(outcome.dropped)})" if outcome.dropped else "")
            )
            outcome = outcome.inside
        parent = wiring.tree.parents.get(outcome.anchor)
        block = (
            id(parent),
            "orelse"
            if parent is not None and outcome.anchor in getattr(parent, "orelse", [])
            else "body",
        )
        first = chosen.get(block, [None])[0]
        if first is not None and first.site.kind != site.kind:
            notes.append(
                f"{site.line}: not wired: the {first.site.call} at line "
                f"{first.site.line} records this block"
            )
            continue
        if outcome.call(None) is None:
            notes.append(
                f"{site.line}: not wired: nothing left to record ({'; '.join(outcome.dropped) or 'no value'})"
            )
            continue
        chosen.setdefault(block, []).append(outcome)
    for block in chosen.values():
        _join_neighbours(wiring.tree, sorted(block, key=lambda w: w.site.line))
    wirings = [wiring for block in chosen.values() for wiring in block]
    if all(wiring.step.expression is None for wiring in wirings):
        # No site records per iteration: the epoch a site logs with is the only x axis
        # there is (Accelerate's tracking example: `accelerator.log(..., step=epoch)`).
        for wiring in wirings:
            if wiring.stated_step is not None:
                wiring.step = StepChoice(
                    wiring.stated_step,
                    f"the step the script logs with, `{wiring.stated_step}`: "
                    "nothing in the script counts iterations",
                )
    for wiring in wirings:
        if wiring.inside is not None:
            wiring.inside.step = wiring.step
    wirings += [wiring.inside for wiring in wirings if wiring.inside is not None]
    return sorted(wirings, key=lambda w: w.site.line), notes


__all__ = ["ADDED_COUNTER", "LOOP_SITE_PRIORITY", "Hoist", "Wiring", "wire_file"]
