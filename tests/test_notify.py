"""--notify: the bell and the terminal's desktop notification, once per finding."""

from __future__ import annotations

import re

from ocms_tui.follow.notify import Notifier, notification_for, terminal_notification
from ocms_tui.format.problems import Problem, Rule


def spike(step: int, path: str = "loss.csv") -> Problem:
    return Problem(
        Rule.SPIKE, path, f"loss spikes at step {step}", None, False, "loss", "loss", step
    )


def test_the_notification_is_a_bell_an_osc_9_and_an_osc_777() -> None:
    assert terminal_notification("ocms-tui spike", "loss spikes") == (
        "\a\x1b]9;ocms-tui spike: loss spikes\x07\x1b]777;notify;ocms-tui spike;loss spikes\x07"
    )


def test_text_from_a_file_cannot_end_the_sequence_or_add_a_field() -> None:
    text = terminal_notification("t", "a\x07b\x1b]52;c;evil\x07;x\n" + "y" * 500)
    # The bell, OSC 9 with its text, OSC 777 with a title and a body: no control
    # character and no extra field inside them (\x07 is both the bell and the OSC end).
    shape = re.fullmatch(
        r"\x07\x1b\]9;([^\x00-\x1f;]*)\x07\x1b\]777;notify;([^\x00-\x1f;]*);([^\x00-\x1f;]*)\x07",
        text,
    )
    assert shape is not None, repr(text)
    assert len(shape.group(3)) <= 200


def test_each_finding_rings_once_and_format_problems_never() -> None:
    notifier = Notifier()
    width = Problem(Rule.ROW_WIDTH, "loss.csv", "3 fields", 4)
    assert notifier.new_findings([width, spike(10)]) == [spike(10)]
    assert notifier.new_findings([width, spike(10)]) == []
    assert notifier.new_findings([spike(10), spike(20)]) == [spike(20)]


def test_a_stall_rings_again_after_the_run_wrote_meanwhile() -> None:
    notifier = Notifier()
    stalled = Problem(Rule.STALLED, ".", "no new row for 300 s", None)
    assert notifier.new_findings([stalled]) == [stalled]
    assert notifier.new_findings([stalled]) == []
    notifier.forget_missing([])  # it wrote again: the finding went away
    assert notifier.new_findings([stalled]) == [stalled]


def test_one_update_with_many_findings_is_one_notification() -> None:
    text = notification_for([spike(10), spike(20), spike(30)])
    assert text.count("\x1b]9;") == 1 and "(+2 more)" in text and "step 10" in text
