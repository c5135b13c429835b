"""QuoteContext: the markdown context (code fence, inline code span, quote mark)
of the text a DSML tool parser has let through, read lazily in one pass."""

from __future__ import annotations

import random

import pytest

from tokenyard.parsing.tools.quoting import FLUSH_AT, QuoteContext


def _context(*pieces: str) -> tuple[bool, bool]:
    quotes = QuoteContext()
    for piece in pieces:
        quotes.note(piece)
    return quotes.in_code, quotes.after_quote_mark


@pytest.mark.parametrize(
    ("text", "in_code", "after_quote"),
    [
        ("plain prose ", False, False),
        ("an example: `", True, True),
        ("an example: `x` and ", False, False),
        ("```python\nprint(1)\n", True, False),
        ("```python\nprint(1)\n```\nafter ", False, False),
        ("~~~\ncode ", True, False),
        ("   ```\nindented fence ", True, False),
        ("open `span\n\nnew paragraph ", False, False),  # a blank line ends the span
        ("open `span\nsame paragraph ", True, False),
        ("``not a fence`", True, True),  # a line opening with two backticks counts one
        ('he wrote "', False, True),
        ("« ", False, False),
    ],
)
def test_context(text: str, in_code: bool, after_quote: bool) -> None:
    assert _context(text) == (in_code, after_quote)


def _by_character(text: str) -> tuple[bool, bool]:
    quotes = QuoteContext()
    for char in text:
        quotes.note(char)
        _ = quotes.in_code  # read each character on its own
    return quotes.in_code, quotes.after_quote_mark


def test_pieces_read_like_characters() -> None:
    """Noted piece by piece (past the join threshold) and asked at random points,
    the answers are those for the same text read one character at a time."""
    alphabet = ["`", "``", "```", "~~~", "\n", "\n\n", " ", "\t", "a", "b c", "'", '"', "```py\n", "\n```\n"]
    rng = random.Random(7)
    for _ in range(100):
        pieces = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(1, 1200))]
        quotes = QuoteContext()
        seen: list[str] = []
        for piece in pieces:
            quotes.note(piece)
            seen.append(piece)
            if rng.random() < 0.01:
                assert (quotes.in_code, quotes.after_quote_mark) == _by_character("".join(seen))
        assert len(quotes.pending) < FLUSH_AT
        assert (quotes.in_code, quotes.after_quote_mark) == _by_character("".join(pieces))
