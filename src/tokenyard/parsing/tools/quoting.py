"""Markdown context of the text a tool parser has let through: inside a fenced code
block, an inline code span, or right after a quote mark. A format whose call
syntax a model also writes when it explains the format (DSML) uses it to keep a
call in code as text (an example is not a call to execute), and a damaged tag
right after a quote mark as the text it quotes. A well-formed call right after a
quote mark is still a call: prose may end in one."""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"[`~\n]").search
QUOTE_CHARS = frozenset("'\"`“‘«")


class QuoteContext:
    __slots__ = ("_in_fence", "_ticks", "_line_head", "_head_done", "_blank_line", "_last")

    def __init__(self) -> None:
        self._in_fence = False
        self._ticks = 0  # backticks in the current paragraph, outside fences
        self._line_head = ""  # the current line's first characters after its indent
        self._head_done = False  # the line's head is known (3 characters read)
        self._blank_line = True  # nothing but spaces on the current line so far
        self._last = ""  # the last text noted (its last character is what matters)

    @property
    def in_code(self) -> bool:
        """Inside a fenced code block or an inline code span."""
        return self._in_fence or self._ticks % 2 == 1

    @property
    def after_quote_mark(self) -> bool:
        return self._last[-1:] in QUOTE_CHARS

    def note(self, text: str) -> None:
        # The hot path (prose, token by token): no line break, backtick or tilde, and
        # the line's head already known: only the last text is kept.
        if self._head_done and "\n" not in text and "`" not in text and "~" not in text:
            if text:
                self._last = text
            return
        if not text:
            return
        if _SPECIAL(text) is None:
            self._last = text
            self._extend_line(text)
            return
        for char in text:
            if char == "\n":
                if self._line_head.startswith(("```", "~~~")):
                    self._in_fence = not self._in_fence
                    self._ticks = 0
                elif self._blank_line:
                    self._ticks = 0  # a blank line ends the paragraph (and any open span)
                self._line_head = ""
                self._head_done = False
                self._blank_line = True
            else:
                self._extend_line(char)
                if char == "`" and not self._in_fence and not self._line_head.startswith("``"):
                    self._ticks += 1
        self._last = text

    def _extend_line(self, text: str) -> None:
        if self._head_done:
            return
        if self._blank_line:
            stripped = text.lstrip(" \t")
            if not stripped:
                return
            self._blank_line = False
            text = stripped
        self._line_head += text[: 3 - len(self._line_head)]
        self._head_done = len(self._line_head) == 3
