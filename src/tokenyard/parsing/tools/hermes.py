"""Hermes / Qwen2.5 / Qwen3: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`.

One call object per block is the template's shape (the block's opening marker and
the whitespace before the object are that call's raw). Qwen 2.5-family models also
write a JSON list of call objects inside one block,

    <tool_call>
    [{"name": "a", "arguments": {...}}, {"name": "b", "arguments": {...}}]
    </tool_call>

read as json_call_list.py reads a list: each object is one call whose raw is
exactly the object; the opening marker, `[`, separators, `]` and the closing
marker are syntax; an entry that is not a call ends the reading (the calls before
it stand, the rest of the block is text), and a list that is not a call list from
its first entry is text, whole. A call object in doubled braces,
`{{"name": ..., "arguments": {...}}}`, copies the shape Qwen2.5's template shows:
it is the call object inside, closed by `}}` or by one brace
(`ToolParser.doubled_braces`); a brace too many after a call object is syntax, as
the block's markers are.
"""

from __future__ import annotations

from .base import JsonCallReader
from .call_list import WHITESPACE
from .json_call_list import FIRST_SUBCLASS_STATE, ITEM, OBJECT, SKIP, JsonCallListConfig, JsonCallListParser

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"

# The list's states (json_call_list.py) read a `[...]` block; these, one object.
_MARKER, _OBJECT, _AFTER_OBJECT = range(FIRST_SUBCLASS_STATE, FIRST_SUBCLASS_STATE + 3)


class HermesToolParser(JsonCallListParser):
    """JSON call objects between an opening and a closing marker; a format with
    other markers (internlm, longcat: rows in formats.py) sets `start_markers` and
    `close_tag` in its `JsonCallListConfig`."""

    name = "hermes"
    aliases = ("qwen25",)
    config = JsonCallListConfig(start_markers=(_OPEN,), close_tag=_CLOSE, doubled_braces=True)

    _reader: JsonCallReader | None = None

    _object_states = frozenset((OBJECT, _OBJECT))

    @property
    def in_call_region(self) -> bool:
        # The whole block is call syntax, between a list's items too.
        return self._in_region

    def _enter_region(self, marker: str) -> None:
        super()._enter_region(marker)
        self._state = _MARKER
        self._reader = None

    def _parse_region(self, buf: str, final: bool) -> int:
        state = self._state
        if state < FIRST_SUBCLASS_STATE:
            return super()._parse_region(buf, final)  # a list, or the rest of a broken call
        if state == _MARKER:
            # The first character after the marker decides: `[` opens a list.
            start = len(self._start_marker)
            i = WHITESPACE(buf, start).end()
            if i == len(buf) and not final:
                return 0
            if buf[i : i + 1] == "[":
                self._pending = buf[: i + 1]
                self._state = ITEM
                return i + 1
            self._reader = JsonCallReader(self, self._start_marker)
            self._state = _OBJECT
            return start
        if state == _OBJECT:
            reader = self._reader
            assert reader is not None
            return self._read_object(reader, buf, final, closed=_AFTER_OBJECT, broken=SKIP)
        # _AFTER_OBJECT
        stripped = buf.lstrip()
        lead = len(buf) - len(stripped)
        close = self.close_tag
        if stripped.startswith(close):
            self._marker(buf[: lead + len(close)])
            self._exit_region()
            return lead + len(close)
        if (not stripped or close.startswith(stripped)) and not final:
            return 0
        if stripped[:1] == "," or stripped[:1] == "{":
            # Several call objects in one block (`{...}, {...}</tool_call>`): the
            # separator opens the next call's raw, as `<tool_call>` opened the first.
            after = lead + (stripped[0] == ",")
            after += len(buf) - after - len(buf[after:].lstrip())
            if after == len(buf) and not final:
                return 0
            self._reader = JsonCallReader(self, buf[:after])
            self._state = _OBJECT
            return after
        if stripped[:1] == "}":
            # A brace too many after the call object (`{...}}}`: the doubled-brace
            # shape closed once more): noise inside the block, syntax like its
            # markers, so the closing tag after it stays syntax too.
            self._marker(buf[: lead + 1])
            return lead + 1
        # No closing tag (the model went straight on): the call stands.
        self._marker(buf[:lead])
        self._exit_region()
        return lead
