"""Markdown context of the text a tool parser has let through: inside a fenced code
block, an inline code span, or right after a quote mark. A format whose call
syntax a model also writes when it explains the format (DSML) uses it to keep a
call in code as text (an example is not a call to execute), and a damaged tag
right after a quote mark as the text it quotes. A well-formed call right after a
quote mark is still a call: prose may end in one."""

from __future__ import annotations

import re

_FENCE_CHAR = re.compile(r"[`~]").search
_BLANK_LINE = re.compile(r"^[ \t]*\n", re.MULTILINE).search
QUOTE_CHARS = frozenset("'\"`“‘«")
# Noted text is kept as it comes (one list append per token on the hot path),
# joined into one piece whenever this many pieces have piled up, and read in one
# pass only when a question is asked (a call's syntax appears): linear, and free
# for output that has none.
FLUSH_AT = 512


class QuoteContext:
    __slots__ = ("_in_fence", "_ticks", "_line_head", "_head_done", "_blank_line", "_last", "pending", "_unread")

    def __init__(self) -> None:
        self._in_fence = False
        self._ticks = 0  # backticks in the current paragraph, outside fences
        self._line_head = ""  # the current line's first characters after its indent
        self._head_done = False  # the line's head is known (3 characters read)
        self._blank_line = True  # nothing but spaces on the current line so far
        self._last = ""  # the last character of the text read so far
        # Text noted, not yet read. The hottest path appends to it directly (no method
        # call) and then calls `settle()` once it holds `FLUSH_AT` pieces.
        self.pending: list[str] = []
        # Earlier noted text, joined in pieces: it is read only when a question is
        # asked, so output with no call syntax in it is never read at all.
        self._unread: list[str] = []

    @property
    def in_code(self) -> bool:
        """Inside a fenced code block or an inline code span."""
        if self.pending or self._unread:
            self._flush()
        return self._in_fence or self._ticks % 2 == 1

    @property
    def after_quote_mark(self) -> bool:
        if self.pending or self._unread:
            self._flush()
        return self._last in QUOTE_CHARS

    def note(self, text: str) -> None:
        pending = self.pending
        pending.append(text)
        if len(pending) >= FLUSH_AT:
            self.settle()

    def settle(self) -> None:
        """Join the noted pieces into one (cheap to keep, read later)."""
        pending = self.pending
        self._unread.append("".join(pending))
        pending.clear()

    def _flush(self) -> None:
        unread = self._unread
        unread.append("".join(self.pending))
        self.pending.clear()
        text = "".join(unread)
        unread.clear()
        if not text:
            return
        self._last = text[-1]
        first, newline, rest = text.partition("\n")
        if first:
            self._segment(first)
        if not newline:
            return
        self._newline()
        # Whole lines between backticks and tildes change nothing but (inside an
        # inline span) the paragraph: skip them in C.
        pos = 0
        while True:
            m = _FENCE_CHAR(rest, pos)
            if m is None:
                line_start = max(pos, rest.rfind("\n", pos) + 1)
                if line_start > pos:
                    self._plain_lines(rest, pos, line_start)
                if line_start < len(rest):
                    self._segment(rest[line_start:])
                return
            special = m.start()
            line_start = max(pos, rest.rfind("\n", pos, special) + 1)
            if line_start > pos:
                self._plain_lines(rest, pos, line_start)
            line_end = rest.find("\n", special)
            if line_end < 0:
                self._segment(rest[line_start:])
                return
            self._segment(rest[line_start:line_end])
            self._newline()
            pos = line_end + 1

    def _plain_lines(self, text: str, start: int, end: int) -> None:
        """Whole lines `text[start:end]` (ending in a line break) with no backtick or
        tilde, read from the start of a line: only a blank one matters (it ends the
        paragraph, and an open inline span with it)."""
        if self._ticks % 2 and _BLANK_LINE(text, start, end):
            self._ticks = 0

    def _newline(self) -> None:
        if self._line_head in ("```", "~~~"):
            self._in_fence = not self._in_fence
            self._ticks = 0
        elif self._blank_line:
            self._ticks = 0  # a blank line ends the paragraph (and any open span)
        self._line_head = ""
        self._head_done = False
        self._blank_line = True

    def _segment(self, text: str) -> None:
        """Text within one line (no line break)."""
        if not self._head_done:
            if self._blank_line:
                stripped = text.lstrip(" \t")
                if not stripped:
                    return
                self._blank_line = False
                text = stripped
            need = 3 - len(self._line_head)
            head = text[:need]
            for char in head:
                self._line_head += char
                # A line that opens with two backticks (a fence being typed) counts
                # only its first one.
                if char == "`" and not self._in_fence and not self._line_head.startswith("``"):
                    self._ticks += 1
            self._head_done = len(self._line_head) == 3
            text = text[need:]
            if not text:
                return
        if not self._in_fence and not self._line_head.startswith("``"):
            self._ticks += text.count("`")
