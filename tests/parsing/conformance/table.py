"""Print the README's per-family table, category counts and peer sources from the
case data, and with `--disagreements` the list of documented disagreements:
`python -m tests.parsing.conformance.table` (from the repo root, src on the path)."""

from __future__ import annotations

import sys
from collections import Counter

from .cases import CATEGORIES, load_cases


def disagreements() -> None:
    """One bullet per reason, listing the cases that share it."""
    by_reason: dict[str, list[str]] = {}
    for c in load_cases():
        if c.disagreement is not None:
            source = c.source
            where = f"`{c.name}` ({source['repo']} `{source['file']}` — {source['test']})"
            by_reason.setdefault(c.disagreement["reason"], []).append(where)
    for reason, where in by_reason.items():
        print(f"- {'; '.join(where)}: {reason}")


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


if __name__ == "__main__":
    main()
