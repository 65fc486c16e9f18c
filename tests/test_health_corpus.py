"""The health corpus (tests/data/health_corpus): no false alarm on any healthy curve, every
injected fault found at its step, every known real event reported; RESULTS.md is current."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import health_corpus

pytestmark = pytest.mark.slow  # about 130 --check runs, a few seconds


@pytest.fixture(scope="module")
def outcomes() -> list[health_corpus.Outcome]:
    return list(health_corpus.run_corpus())


def test_the_corpus_holds_a_dozen_public_runs_and_the_synthetic_shapes(outcomes) -> None:
    sources = (health_corpus.CORPUS / "SOURCES.tsv").read_text().splitlines()
    repositories = {line.split("\t")[1] for line in sources}
    assert len(repositories) >= 12
    assert {line.split("\t")[0] for line in sources} == {
        path.name for path in health_corpus.CURVES.glob("*.csv")
    }
    assert sum(outcome.curve.source.endswith("(generated)") for outcome in outcomes) >= 10


def test_no_false_alarm_on_any_healthy_curve(outcomes) -> None:
    assert {o.curve.source: o.alarms for o in outcomes if o.alarms} == {}


def test_every_known_real_event_is_reported(outcomes) -> None:
    for outcome in outcomes:
        assert outcome.known == health_corpus.KNOWN_EVENTS.get(outcome.curve.source, [])


def test_every_injected_fault_is_found_at_its_step(outcomes) -> None:
    missed = [
        (outcome.curve.source, fault, step, findings)
        for outcome in outcomes
        for fault, step, findings in outcome.faults
        if not outcome.found(fault, step, findings)
    ]
    assert missed == []
    assert sum(len(outcome.faults) for outcome in outcomes) >= 100


def test_the_committed_result_table_is_the_one_the_script_prints(outcomes) -> None:
    assert health_corpus.table(outcomes) in health_corpus.RESULTS.read_text()
