"""Text from files reaches reports and the dashboard escaped: no control, format (Cf) or
line/paragraph separator character acts on a terminal, a CI log or a reader's eyes, and
ordinary non-ASCII names (é, CJK, emoji) stay readable."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from app_support import screen_text, write_layout

from ocms_tui.follow.report import printable
from ocms_tui.format.problems import UNPRINTABLE, escape_code
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.safe_text import visible
from tests.sources_support import run_cli

# Cf characters of Unicode versions after the one this Python knows (15.0: Egyptian
# hieroglyph format controls); the pattern must hold them on any Python.
LATER_FORMAT_CHARACTERS = [chr(code) for code in range(0x13439, 0x13440)]
HIDDEN = sorted(
    {
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp")
    }
    | set(LATER_FORMAT_CHARACTERS)
    # Not Cf, but draw nothing: the grapheme joiner, Hangul fillers, Khmer inherent vowels,
    # Mongolian variation selectors.
    | set("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0")
)
READABLE = ["é", "損失", "Ωmega", "naïve", "🙂", "Ünïcödé", "تعلم"]


def test_every_format_and_separator_character_is_unprintable() -> None:
    missing = [f"U+{ord(char):04X}" for char in HIDDEN if not UNPRINTABLE.fullmatch(char)]
    assert missing == []
    assert len(HIDDEN) > 160


def test_ordinary_letters_symbols_and_spaces_are_left_alone() -> None:
    caught = [
        f"U+{code:04X}"
        for code in range(0xA0, sys.maxunicode + 1)
        if UNPRINTABLE.fullmatch(chr(code))
        and unicodedata.category(chr(code)) not in ("Cf", "Zl", "Zp", "Cs", "Cc")
        and chr(code) not in HIDDEN
    ]
    assert caught == []
    for name in READABLE:
        assert printable(name) == name and visible(name) == name


def test_escapes_name_the_code_point_as_python_writes_it() -> None:
    assert printable("a\u200bb\U000e0041c\u2028d") == "a\\u200bb\\U000e0041c\\u2028d"
    for char in HIDDEN:
        assert printable(char) == escape_code(ord(char))
        assert (
            printable(char).encode().decode("unicode_escape") == char
            or 0xDC80 <= ord(char) <= 0xDCFF
        )


def _chunks(characters: list[str], size: int) -> list[str]:
    return ["".join(characters[start : start + size]) for start in range(0, len(characters), size)]


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[Path, list[str]]:
    """A run with orphan CSVs named with every hidden character (50 to a name: within the
    255-byte name limit) and with readable non-ASCII names."""
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_text("1,0.5\n")
    names = [f"x{chunk}y.csv" for chunk in _chunks(HIDDEN, 50)]
    names += [f"{name}.csv" for name in READABLE]
    for name in names:
        (tmp_path / name).write_text("1,2\n")
    return tmp_path, names


@pytest.mark.parametrize("output_format", ["text", "github"])
def test_check_output_escapes_every_hidden_character_and_keeps_readable_names(
    hostile_run: tuple[Path, list[str]], output_format: str
) -> None:
    directory, names = hostile_run
    result = run_cli("--check", "--format", output_format, str(directory))
    assert result.returncode == 0, result.stderr
    shown = [char for char in HIDDEN if char in result.stdout]
    assert shown == [], [f"U+{ord(char):04X}" for char in shown]
    for name in names:
        assert printable(name) in result.stdout
    for readable in READABLE:
        assert f"{readable}.csv" in result.stdout
    assert result.stdout.count("orphan-csv") == min(len(names), 20)


def test_json_output_keeps_the_names_exactly_as_escaped_json(
    hostile_run: tuple[Path, list[str]],
) -> None:
    directory, names = hostile_run
    result = run_cli("--check", "--format", "json", str(directory))
    assert not [char for char in HIDDEN if char in result.stdout]
    paths = {problem["path"] for problem in json.loads(result.stdout)["problems"]}
    assert paths == set(names[:20])  # machine-readable: the real names, JSON-escaped


async def test_the_dashboard_shows_escapes_not_the_characters(tmp_path: Path) -> None:
    series = [f"s{chunk}" for chunk in _chunks(HIDDEN[:60], 12)] + ["損失", "é_loss"]
    write_layout(tmp_path, {"loss": series})
    (tmp_path / "loss.csv").write_text("1" + ",0.5" * len(series) + "\n")
    (tmp_path / f"orphan{''.join(HIDDEN[60:110])}.csv").write_text("1,2\n")
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(200, 60)) as pilot:
        await app.settle()
        await pilot.pause()
        screen = screen_text(app)
    assert [f"U+{ord(char):04X}" for char in HIDDEN if char in screen] == []
    # As a terminal shows it: each wide character fills two cells (screen_lines).
    assert "損 失" in screen and "é_loss" in screen and "\\u200b" in screen
