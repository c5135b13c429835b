"""Finding markers in streamed text without re-scanning it.

Every parser holds back the shortest suffix of what it has seen that could still
grow into a marker, and nothing else. A `MarkerSet` answers the two questions that
needs, both in C-speed regex calls on the common path:

- where is the earliest complete marker in this buffer?
- how long is the suffix of this buffer that is a proper prefix of some marker?
"""

from __future__ import annotations

import re
from collections.abc import Iterable


class MarkerSet:
    __slots__ = ("markers", "_search", "_prefixes", "_trigger", "_hold", "trigger")

    def __init__(self, markers: Iterable[str]):
        unique = sorted(set(m for m in markers if m), key=len, reverse=True)
        if not unique:
            raise ValueError("a MarkerSet needs at least one marker")
        self.markers: tuple[str, ...] = tuple(unique)
        # Longest first, so the alternation prefers `<tool_calls>` over `<tool_call>`
        # when both start at the same position.
        self._search = re.compile("|".join(re.escape(m) for m in unique)).search
        self._prefixes = frozenset(m[:i] for m in unique for i in range(1, len(m)))
        first = sorted(set(m[0] for m in unique))
        self._trigger = re.compile("[" + "".join(re.escape(c) for c in first) + "]").search
        # `could_start` without the method call, for the hottest paths: None when no
        # marker's first character occurs in the text.
        self.trigger = self._trigger
        self._hold = max(len(m) for m in unique) - 1

    def find(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """The earliest complete marker at or after `pos`."""
        return self._search(text, pos)

    def could_start(self, text: str, pos: int = 0) -> bool:
        """Whether any marker's first character occurs at or after `pos`."""
        return self._trigger(text, pos) is not None

    def held_suffix(self, text: str, floor: int = 0) -> int:
        """Length of the longest suffix of `text[floor:]` that is a proper prefix of
        a marker: the part a streaming parser must hold back."""
        n = len(text)
        start = max(floor, n - self._hold)
        trigger = self._trigger
        prefixes = self._prefixes
        while True:
            m = trigger(text, start)
            if m is None:
                return 0
            i = m.start()
            if text[i:] in prefixes:
                return n - i
            start = i + 1

    def is_proper_prefix(self, text: str) -> bool:
        """Whether `text` could still grow into a (longer) marker."""
        return text in self._prefixes
