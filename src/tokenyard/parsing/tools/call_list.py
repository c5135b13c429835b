"""`CallListParser`: what the list-of-calls formats share (json_call_list.py's
JSON lists, pythonic.py's `[f(a=1), g()]`).

After a start marker the region reads a list of calls through a small state
machine (`_step`). What is read before a call is announced stays pending: a start
that turns out not to be a list comes out as text, whole; once a call is real,
what led up to it (start marker, `[`, `,`) is syntax (a start marker the
tokenizer writes as plain text goes with the list's first call instead). A reasoning marker that
interrupts the list between calls ends it.
"""

from __future__ import annotations

from ...events import ParseEvent
from ..patterns import AlwaysMatch, always_match
from .base import JsonCallReader, ToolParser

WHITESPACE = always_match(r"[ \t\r\n]*")
# A function name or call id longer than this is no call's.
LONGEST_NAME = 256


class CallListParser(ToolParser):
    _pending = ""  # read, not yet known to be syntax (Marker) or text
    _state = 0
    _delivered = False  # a call of the current list was delivered

    def _step(self, buf: str, final: bool) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _parse_region(self, buf: str, final: bool) -> int:
        while True:
            state = self._state
            consumed = self._step(buf, final)
            # A state change that consumed nothing: the new state reads on.
            if consumed or not self._in_region or self._state == state:
                return consumed

    def _end_list(self, closed: bool = False) -> None:
        """The region ends here: what is pending after a closed list is syntax (a
        Marker); else it (an unrecognised start, whitespace after a call) is text."""
        if closed:
            self._marker(self._pending)
        else:
            self._text(self._pending)
        self._pending = ""
        self._exit_region()

    def _pend_whitespace(self, buf: str, final: bool) -> int:
        """Whitespace at the start of `buf` is pending; returns where it ends. Where
        it is all that is left of the output, the list ends there."""
        i = WHITESPACE(buf).end()
        self._pending += buf[:i]
        if final and i == len(buf):
            self._end_list()
        return i

    def _pend_run(self, buf: str, final: bool, run: AlwaysMatch, so_far: str) -> tuple[str, int, bool]:
        """Read on a name-like `run` (a function name, a call id) begun as `so_far`,
        pending. Returns the run so far, where it stops in `buf`, and whether the
        character there decides what it is (False: it grew too long and the list
        ended, or `buf` ended inside it)."""
        end = run(buf).end()
        text = so_far + buf[:end]
        self._pending += buf[:end]
        if len(text) > LONGEST_NAME or (final and end == len(buf)):
            self._end_list()
            return text, end, False
        return text, end, end < len(buf)

    def _json_call_cut(self, reader: JsonCallReader, held: str = "", *, recover_complete: bool = False) -> None:
        # What the list held before the object is text too.
        super()._json_call_cut(reader, self._pending + held, recover_complete=recover_complete)
        self._pending = ""

    def _no_call(self, reader: JsonCallReader) -> None:
        # What was held before the object is text too; the list ends (a format that
        # reads one call per line goes on with the next line instead).
        self._text(self._pending + "".join(reader.pre_raw))
        self._pending = ""
        self._exit_region()

    def _open_call(self, name: str, raw: str = "", model_id: str | None = None) -> None:
        # The call is real, so what led up to it is syntax; or, where the list began
        # with text the model wrote (`_lead_is_text`), that text goes with the call:
        # syntax if the call is delivered, shown with the call's text if it never is.
        pending, self._pending = self._pending, ""
        if self._lead_is_text():
            raw = pending + raw
        else:
            self._marker(pending)
        super()._open_call(name, raw, model_id)

    def _lead_is_text(self) -> bool:
        """Whether the list began with text the model wrote (not a special token) and
        none of its calls was delivered yet."""
        return False

    def _close_call(self, raw: str = "") -> None:
        super()._close_call(raw)
        self._delivered = True

    def release_held(self) -> list[ParseEvent]:
        if self._in_region and not self.in_call_region:
            # A reasoning marker interrupts the list between calls: it ends here.
            self._end_list()
            return self._held_is_text()
        return super().release_held()
