"""Patterns that match the empty string, so a match always exists.

The parsers' hot loops skip runs (whitespace, string bodies) with `pattern.match`;
typing those matchers as never returning None keeps a None check out of the loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import cast

AlwaysMatch = Callable[..., re.Match[str]]


def always_match(pattern: str) -> AlwaysMatch:
    """`re.compile(pattern).match`, for a pattern that matches the empty string."""
    compiled = re.compile(pattern)
    if compiled.match("") is None:
        raise ValueError(f"{pattern!r} does not match the empty string")
    return cast(AlwaysMatch, compiled.match)


def always_search(pattern: str) -> AlwaysMatch:
    """`re.compile(pattern).search`, for a pattern every string has a match of."""
    compiled = re.compile(pattern)
    if compiled.search("") is None:
        raise ValueError(f"{pattern!r} does not match the empty string")
    return cast(AlwaysMatch, compiled.search)
