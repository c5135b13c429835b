"""The README's numbers, from the data: `python -m tests.parsing.conformance.report`
prints the category line, the per-family table, the source counts and the list of
documented disagreements, ready to paste into README.md (test_conformance checks the
table's total row against the data)."""

from __future__ import annotations

from collections import Counter, defaultdict

from .cases import CATEGORIES, Case, load_cases


def table(cases: list[Case]) -> str:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for case in cases:
        row = rows[case.family]
        row[0] += 1
        if not case.from_peer:
            row[4] += 1
        elif case.disagreement is None:
            row[1] += 1
            row[2] += 1
        else:
            row[1] += 1
            row[3] += 1
    lines = [
        "| family | cases | from peers | agree | documented disagreements | tokenyard's own |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {family} | {' | '.join(map(str, row))} |" for family, row in sorted(rows.items())]
    total = [sum(row[i] for row in rows.values()) for i in range(5)]
    share = 100 * total[2] / total[1] if total[1] else 0.0
    lines.append(f"| **total** | {total[0]} | {total[1]} | {total[2]} ({share:.1f}%) | {total[3]} | {total[4]} |")
    return "\n".join(lines)


def categories(cases: list[Case]) -> str:
    counts = Counter(case.category for case in cases)
    return ", ".join(f"{name} {counts[name]}" for name in sorted(CATEGORIES) if counts[name])


def sources(cases: list[Case]) -> str:
    counts = Counter(case.source["repo"] for case in cases if case.from_peer)
    return ", ".join(f"{repo} {n}" for repo, n in counts.most_common())


def disagreements(cases: list[Case]) -> str:
    lines = []
    for case in cases:
        if case.disagreement is not None:
            source = case.source
            lines.append(
                f"- `{case.name}` ({source['repo']} `{source['file']}` — {source['test']}): "
                f"{case.disagreement['reason']}"
            )
    return "\n".join(lines)


def main() -> None:
    cases = load_cases()
    print(categories(cases), end="\n\n")
    print(table(cases), end="\n\n")
    print(f"Peer cases by source: {sources(cases)}.", end="\n\n")
    print(disagreements(cases))


if __name__ == "__main__":
    main()
