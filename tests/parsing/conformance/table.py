"""Print the README's per-family table, category counts, peer sources and the
disagreements counted by rule from the case data, and with `--disagreements` the
list of documented disagreements: `python -m tests.parsing.conformance.table`
(from the repo root, src on the path)."""

from __future__ import annotations

import sys
from collections import Counter

from .cases import CATEGORIES, RULES, Case, load_cases


def disagreements() -> None:
    """Per rule, one bullet per reason, listing the cases that share it."""
    cases = load_cases()
    for rule, (decision, _) in RULES.items():
        by_reason: dict[str, list[str]] = {}
        for c in cases:
            if c.disagreement is not None and c.disagreement["rule"] == rule:
                source = c.source
                where = f"`{c.name}` ({source['repo']} `{source['file']}` — {source['test']})"
                by_reason.setdefault(c.disagreement["reason"], []).append(where)
        if by_reason:
            print(f"\n### `{rule}`: {decision}\n")
            for reason, where in by_reason.items():
                print(f"- {'; '.join(where)}: {reason}")


def ceiling_line(peer: list[Case]) -> str:
    """How many disagreements no parser can remove (an issue requires the rule, or
    another peer case on the same input contradicts the peer), and agreement over
    the cases where agreement is possible."""
    agreeing = sum(1 for c in peer if c.disagreement is None)
    fixed = sum(1 for c in peer if c.disagreement is not None and RULES[c.disagreement["rule"]][1] is not None)
    possible = len(peer) - fixed
    return (
        f"Required or contradicted: {fixed} of {len(peer) - agreeing}; at most {possible} "
        f"({100 * possible / len(peer):.1f}%) peer cases can agree; agreement where it is possible: "
        f"{agreeing} / {possible} ({100 * agreeing / possible:.1f}%)."
    )


def rules(peer: list[Case]) -> None:
    counts = Counter(c.disagreement["rule"] for c in peer if c.disagreement is not None)
    print("| rule | tokenyard's decision | required by | cases |")
    print("|---|---|---|---|")
    for rule, (decision, required) in RULES.items():
        if counts[rule]:
            print(f"| `{rule}` | {decision} | {required or '—'} | {counts[rule]} |")
    print()
    print(ceiling_line(peer))


def main() -> None:
    if "--disagreements" in sys.argv:
        disagreements()
        return
    cases = load_cases()
    print("| family | cases | from peers | agree | documented disagreements | tokenyard's own |")
    print("|---|---|---|---|---|---|")
    for family in sorted({c.family for c in cases}):
        mine = [c for c in cases if c.family == family]
        peer = [c for c in mine if c.from_peer]
        split = sum(1 for c in peer if c.disagreement is not None)
        print(f"| {family} | {len(mine)} | {len(peer)} | {len(peer) - split} | {split} | {len(mine) - len(peer)} |")
    peer = [c for c in cases if c.from_peer]
    agreeing = sum(1 for c in peer if c.disagreement is None)
    print(
        f"| **total** | {len(cases)} | {len(peer)} | {agreeing} ({100 * agreeing / len(peer):.1f}%) "
        f"| {len(peer) - agreeing} | {len(cases) - len(peer)} |"
    )
    categories = Counter(c.category for c in cases)
    print()
    print(", ".join(f"{k} {categories[k]}" for k in sorted(CATEGORIES) if categories[k]))
    sources = Counter(c.source["repo"] for c in peer)
    print("Peer cases by source: " + ", ".join(f"{repo} {n}" for repo, n in sources.most_common()) + ".")
    print()
    rules(peer)


if __name__ == "__main__":
    main()
