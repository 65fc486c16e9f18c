"""What `ocms-tui init` tells before it writes: the plan, site by site (file:line, the
step, the series and the chart each feeds, what it leaves out and why), and the diff of
every pending change. Text only, every line made printable.
"""

from __future__ import annotations

import ast
import difflib

from ocms_tui.follow.report import printable
from ocms_tui.onboard.init_plan import InitPlan, wired_keys
from ocms_tui.onboard.scan import chart_groups_from, plan_keys, suggest_chart_groups


def render_plan(plan: InitPlan) -> str:
    """What init records, site by site, and what it leaves out and why."""
    lines: list[str] = []
    suggestion = suggest_chart_groups(plan_keys(wired_keys(plan)))
    groups = None if suggestion is None else chart_groups_from(suggestion)
    charts = {entry.key: entry.chart for entry in plan_keys(wired_keys(plan), groups)}
    if plan.wired or plan.hooked:
        lines.append("plan:")
    for file, wiring in plan.wired:
        lines.append(f"  {file}:{wiring.site.line}  {wiring.site.call}")
        lines.append(
            f"    step: {wiring.step.expression or '(last step recorded)'}  ({wiring.step.how})"
        )
        series = ", ".join(f"{key} -> {charts.get(key) or 'not charted'}" for key in wiring.keys)
        if wiring.whole is not None:
            series = (
                (f"{series}; " if series else "")
                + f"every key of {wiring.whole}"
                + (f" except {', '.join(wiring.axis_keys)}" if wiring.axis_keys else "")
            )
        lines.append(f"    series -> chart: {series}")
        if wiring.joined_into is not None:
            lines.append(
                f"    recorded by the call after line {wiring.joined_into} (one row a step)"
            )
        if wiring.inside_guard:
            lines.append(
                f"    recorded inside `if {wiring.inside_guard}:`: only that branch computes them"
            )
        if wiring.guard:
            lines.append(f"    recorded after `if {wiring.guard}:` (off by default), not inside it")
        for hoist in wiring.hoists:
            lines.append(
                f"    `{ast.unparse(hoist.node)}` bound once to {hoist.name} (not evaluated twice)"
            )
        lines += [f"    not recorded: {why}" for why in wiring.dropped]
    lines += [f"  {line}" for line in plan.hooked]
    if plan.not_wired:
        lines.append("not wired:")
        lines += [f"  {line}" for line in plan.not_wired]
    return "".join(printable(line) + "\n" for line in lines)


def render_diff(plan: InitPlan) -> str:
    """The unified diff of every pending change; copies are named, not shown."""
    out: list[str] = []
    for change in plan.pending:
        name = change.path.relative_to(plan.project).as_posix()
        if change.copied_from is not None:
            how = (
                "byte for byte"
                if change.after == change.copied_from.read_bytes()
                else "imports rewritten"
            )
            out.append(printable(f"copy {change.copied_from} -> {name} ({how})") + "\n")
            continue
        before = [] if change.before is None else _text(change.before).splitlines(keepends=True)
        after = _text(change.after).splitlines(keepends=True)
        source = "/dev/null" if change.before is None else f"a/{name}"
        for line in difflib.unified_diff(before, after, source, f"b/{name}"):
            out.append(printable(line.rstrip("\n")) + "\n")
    return "".join(out)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")
