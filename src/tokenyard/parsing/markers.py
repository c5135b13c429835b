"""Finding markers in streamed text without re-scanning it.

Every parser holds back the shortest suffix of what it has seen that could still
grow into a marker, and nothing else. A `MarkerSet` answers the two questions that
needs, both in C-speed regex calls on the common path:

- where is the earliest complete marker in this buffer?
- how long is the suffix of this buffer that is a proper prefix of some marker?
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache


def _prefix_pattern(marker: str) -> str:
    """A regex matching `marker` or any non-empty prefix of it that reaches the end."""
    pattern = re.escape(marker[-1])
    for c in reversed(marker[:-1]):
        pattern = f"{re.escape(c)}(?:{pattern}|\\Z)"
    return pattern


Search = Callable[..., re.Match[str] | None]


@lru_cache(maxsize=1024)
def _built(given: tuple[str, ...]) -> tuple[tuple[str, ...], Search, frozenset[str], Search, str, int]:
    """Everything a `MarkerSet` of `given` holds: (its markers longest first, find a
    marker, every proper prefix, find where one starts, the lead, the hold). Built
    once per marker set, as every request's parsers make the same sets."""
    # Longest first, so the alternation prefers `<tool_calls>` over `<tool_call>`
    # when both start at the same position.
    markers = tuple(sorted(set(m for m in given if m), key=len, reverse=True))
    if not markers:
        raise ValueError("a MarkerSet needs at least one marker")
    search = re.compile("|".join(re.escape(m) for m in markers)).search
    prefixes = frozenset(m[:i] for m in markers for i in range(1, len(m)))
    # Matches where a marker starts, or where text ends in the beginning of one:
    # the only places a parser must look at. A marker's first character alone
    # (the `t` of Muse Glimmer's `to=self`, common in prose) is not enough.
    trigger = re.compile("|".join(_prefix_pattern(m) for m in markers)).search
    # The character every marker begins with ("" when they differ): text without
    # it can start none, one `in` test cheaper than `trigger` (`lead not in text
    # or trigger(text) is None`; "" is in every text, so `trigger` decides). A
    # letter or digit (Muse Glimmer's `to=self`) is in most prose: no lead there.
    firsts = {m[0] for m in markers}
    lead = firsts.pop() if len(firsts) == 1 else ""
    return markers, search, prefixes, trigger, "" if lead.isalnum() else lead, max(len(m) for m in markers) - 1


class MarkerSet:
    __slots__ = ("markers", "_search", "_prefixes", "_trigger", "_hold", "trigger", "lead")

    def __init__(self, markers: Iterable[str]):
        self.markers: tuple[str, ...]
        self.markers, self._search, self._prefixes, self._trigger, self.lead, self._hold = _built(tuple(markers))
        # `could_start` without the method call, for the hottest paths: None when no
        # marker's first character occurs in the text.
        self.trigger = self._trigger

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
