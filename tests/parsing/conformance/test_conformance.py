"""Every peer case, fed whole, one character at a time and in seeded random
chunkings: each feeding gives the same events, and the result is the case's
expectation (the peer's, or tokenyard's documented decision where they differ)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenyard.events import check_events, merge_adjacent

from .cases import RULES, Case, agrees, chunkings, engine_output, load_cases, outcome, run
from .table import ceiling_line

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case) -> None:
    output = engine_output(case)
    events = run(case, [output])
    whole = merge_adjacent(events)
    for chunks in chunkings(output, seed=case.name):
        chunked = run(case, chunks)
        check_events(chunked, output)
        assert merge_adjacent(chunked) == whole, f"chunking changed the events: {chunks!r}"
    problems = agrees(outcome(events), case.expect)
    assert not problems, "\n".join(problems)


def test_every_disagreement_is_documented() -> None:
    for case in CASES:
        if case.disagreement is not None:
            assert case.disagreement.get("reason"), f"{case.name}: a disagreement needs its reason"
            assert "peer" in case.disagreement, f"{case.name}: record the peer's expectation"
            assert case.disagreement.get("rule") in RULES, f"{case.name}: name the rule behind it (cases.RULES)"


# Issues 13 and 23 ask for >= 95%; with every case of every peer parser test file
# read (3,217) tokenyard agrees on 93.5% (3,007), each other case a documented
# decision (README); 100 of those are rules an issue requires or peer cases another
# contradicts. This floor keeps agreement from sliding back.
AGREEMENT_FLOOR = 0.9347


def test_agreement_with_peers_does_not_fall_below_its_floor() -> None:
    peer = [case for case in CASES if case.from_peer]
    agreeing = sum(1 for case in peer if case.disagreement is None)
    assert peer and agreeing / len(peer) >= AGREEMENT_FLOOR, f"{agreeing}/{len(peer)} peer cases agree with the peers"


def test_own_cases_never_claim_a_peer_disagreement() -> None:
    for case in CASES:
        assert case.from_peer or case.disagreement is None, case.name


def test_the_readme_table_counts_the_cases() -> None:
    peer = [case for case in CASES if case.from_peer]
    agreeing = sum(1 for case in peer if case.disagreement is None)
    total = (
        f"| **total** | {len(CASES)} | {len(peer)} | {agreeing} ({100 * agreeing / len(peer):.1f}%) "
        f"| {len(peer) - agreeing} | {len(CASES) - len(peer)} |"
    )
    readme = (Path(__file__).parent / "README.md").read_text(encoding="utf-8")
    assert total in readme, f"update the README table: {total}"
    assert ceiling_line(peer) in readme, f"update the README's count by rule: {ceiling_line(peer)}"
