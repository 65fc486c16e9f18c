"""ProblemsPane: the checker's findings, live, one per line: rule, file:line, message."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from ocms_tui.format.problems import Problem, Severity
from ocms_tui.widgets.safe_text import visible

MAX_SHOWN = 200  # the pane is a summary; `ocms-tui --check` lists everything


def problems_title(problems: Sequence[Problem]) -> Text:
    errors = sum(problem.is_error for problem in problems)
    warnings = len(problems) - errors
    title = Text(f"Problems ({len(problems)})", style="bold")
    if errors:
        title.append(f" · {errors} error{'s' if errors != 1 else ''}", style="bold red")
    if warnings:
        title.append(f" · {warnings} warning{'s' if warnings != 1 else ''}", style="yellow")
    return title


def problem_line(problem: Problem) -> Text:
    """`✖ row-width  loss.csv:12  message`; every part from a file stays plain text."""
    is_error = problem.severity is Severity.ERROR
    line = Text("✖ " if is_error else "▲ ", style="bold red" if is_error else "bold yellow")
    line.append(problem.rule.value, style="bold")
    line.append("  ")
    location = problem.path if problem.line is None else f"{problem.path}:{problem.line}"
    line.append(visible(location), style="underline")
    line.append("  ")
    line.append(visible(problem.message))
    return line


class ProblemsPane(VerticalScroll, can_focus=False):
    DEFAULT_CSS = """
    ProblemsPane {
        height: auto;
        max-height: 9;
        border: round $error 60%;
        border-title-color: $text;
        background: $surface;
        padding: 0 1;
    }
    ProblemsPane > Static {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    ProblemsPane.-clean {
        /* Nothing to list: one line, not three (80x24 needs its rows for the charts). */
        border: none;
        padding: 0 2;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.body = Static("", markup=False)
        self._shown: tuple[Problem, ...] | None = None

    def compose(self) -> ComposeResult:
        yield self.body

    def show(self, problems: Sequence[Problem]) -> None:
        problems = tuple(problems)
        if problems == self._shown:
            return
        self._shown = problems
        self.border_title = problems_title(problems)
        self.set_class(not problems, "-clean")
        if not problems:
            self.body.update(Text("✓ no problems (p hides this line)", style="green"))
            return
        lines = Text("\n").join(problem_line(problem) for problem in problems[:MAX_SHOWN])
        if len(problems) > MAX_SHOWN:
            lines.append(f"\n… {len(problems) - MAX_SHOWN} more (run ocms-tui --check DIR)")
        self.body.update(lines)
