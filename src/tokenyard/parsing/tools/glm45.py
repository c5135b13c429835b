"""GLM-4.5 / GLM-4.6 tool calls:

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Tokyo</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call>

GLM-4.7 writes the same without the newlines (glm47.py); this parser reads both.
Values are untyped text, typed by the tool's schema (object/array values arrive
as JSON). Models sometimes write a literal `\\n` between tags: it is skipped like
whitespace. A value ends only at its own `</arg_value>` (tags inside it are its
text). Known failure shape handled: a call with no arguments
(`<tool_call>name</tool_call>`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..markers import MarkerSet
from ..patterns import always_match, always_search
from .base import ToolParser, is_function_name
from .xml_args import ArgumentsBuilder

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"
_KEY_OPEN = "<arg_key>"
_KEY_CLOSE = "</arg_key>"
_VALUE_OPEN = "<arg_value>"
_VALUE_CLOSE = "</arg_value>"
_NAME_ENDS = MarkerSet(["\n", _KEY_OPEN, _CLOSE])
_KEY_STOPS = MarkerSet([_KEY_CLOSE, _KEY_OPEN, _VALUE_OPEN, _CLOSE])
# A value ends only at its own closing tag: other tags inside it are its text.
_VALUE_STOPS = MarkerSet([_VALUE_CLOSE])
_CLOSE_SET = MarkerSet([_CLOSE])
_WHITESPACE = always_match(r"\s*")
_GAP = always_match(r"(?:\s|\\n)*")  # whitespace, or a literal backslash-n
# A name's trailing gap (and a backslash that may still become a literal `\n`).
_NAME_TAIL = always_search(r"(?:\s|\\n)*\\?\Z")
_KEY_LIMIT = 256


def _bare_name(text: str) -> str:
    return text[: _NAME_TAIL(text).start()]


def _ends_inside(buf: str, at: int, *tags: str) -> bool:
    """Whether the buffer ends at `at` or inside one of `tags` begun there (a lone
    backslash may still become a literal `\\n`)."""
    ahead = buf[at : at + 16]
    return at + len(ahead) == len(buf) and any(tag.startswith(ahead) for tag in tags)


# States.
_HEAD, _BODY, _KEY, _AFTER_KEY, _VALUE, _SKIP = range(6)


class Glm45ToolParser(ToolParser):
    name = "glm45"
    start_markers = (_OPEN,)

    def _enter_region(self, marker: str) -> None:
        self._state = _HEAD
        self._key = ""

    def _parse_region(self, buf: str, final: bool) -> int:
        i = 0
        while self._in_region:
            step = self._STEPS[self._state](self, buf, i, final)
            if step is None:  # needs more input
                return i
            i = step
        return i

    # ---- steps: each returns the new position, or None to wait for more input ----

    def _head(self, buf: str, i: int, final: bool) -> int | None:
        """`<tool_call>NAME`: nothing is consumed until the name is known."""
        start = _WHITESPACE(buf, i + len(_OPEN)).end()
        match = _NAME_ENDS.find(buf, start)
        if match is None:
            stop = len(buf) if final else len(buf) - _NAME_ENDS.held_suffix(buf, start)
            name = _bare_name(buf[start:stop])
            if not final and (not name or is_function_name(name)) and stop - start <= _KEY_LIMIT:
                return None
            return self._not_a_call(i)
        name = _bare_name(buf[start : match.start()])
        if not is_function_name(name):
            return self._not_a_call(i)
        end = match.end() if match.group() == "\n" else match.start()
        self._open_call(name, buf[i:end])
        self._arguments = ArgumentsBuilder(self, self._tool(name))
        self._state = _BODY
        return end

    def _not_a_call(self, i: int) -> int:
        self._text(_OPEN)
        self._exit_region()
        return i + len(_OPEN)

    def _body(self, buf: str, i: int, final: bool) -> int | None:
        """Between parameters: the next `<arg_key>` or the call's end."""
        j = self._gap(buf, i)
        if buf.startswith(_KEY_OPEN, j):
            self._raw(_KEY_OPEN)
            self._state = _KEY
            return j + len(_KEY_OPEN)
        if buf.startswith(_CLOSE, j):
            self._arguments.close()
            self._close_call(_CLOSE)
            self._exit_region()
            return j + len(_CLOSE)
        if _ends_inside(buf, j, _KEY_OPEN, _CLOSE, "\\"):
            if not final:
                return j if j > i else None
            # The output ended between parameters: every value so far closed.
            self._arguments.close()
            self._close_at_end_of_output(buf[j:])
            self._exit_region()
            return len(buf)
        self._state = _SKIP
        return j

    def _key_text(self, buf: str, i: int, final: bool) -> int | None:
        match = _KEY_STOPS.find(buf, i)
        if match is None:
            end = len(buf) - _KEY_STOPS.held_suffix(buf, i)
            self._raw(buf[i:end])
            self._key += buf[i:end]
            if final:
                return self._truncated(buf, end)
            if len(self._key) > _KEY_LIMIT:
                self._state = _SKIP
            return end if end > i else None
        self._raw(buf[i : match.start()])
        self._key += buf[i : match.start()]
        if match.group() != _KEY_CLOSE:
            self._state = _SKIP
            return match.start()
        self._raw(_KEY_CLOSE)
        self._state = _AFTER_KEY
        return match.end()

    def _after_key(self, buf: str, i: int, final: bool) -> int | None:
        j = self._gap(buf, i)
        if buf.startswith(_VALUE_OPEN, j):
            self._raw(_VALUE_OPEN)
            self._arguments.begin(self._key.strip())
            self._key = ""
            self._state = _VALUE
            return j + len(_VALUE_OPEN)
        if _ends_inside(buf, j, _VALUE_OPEN, "\\"):
            return self._truncated(buf, j) if final else (j if j > i else None)
        self._state = _SKIP
        return j

    def _value(self, buf: str, i: int, final: bool) -> int | None:
        if i >= len(buf) and not final:
            return None  # everything so far is streamed; wait for more
        match = _VALUE_STOPS.find(buf, i)
        if match is not None:
            end = match.start()
        elif _VALUE_STOPS.could_start(buf, i):
            end = len(buf) - _VALUE_STOPS.held_suffix(buf, i)
        else:  # the common case: plain value text, nothing to hold back
            end = len(buf)
        self._raw(buf[i:end])
        self._arguments.text(buf[i:end])
        if match is None:
            if final:
                self._arguments.end()
                return self._truncated(buf, end)
            return end if end > i else None
        self._arguments.end()
        self._state = _BODY
        self._raw(_VALUE_CLOSE)
        return match.end()

    def _skip(self, buf: str, i: int, final: bool) -> int | None:
        """The rest of a call whose syntax broke belongs to it."""
        match = _CLOSE_SET.find(buf, i)
        if match is None:
            end = len(buf) if final else len(buf) - _CLOSE_SET.held_suffix(buf, i)
            self._raw(buf[i:end])
            if final:
                self._fail_call("invalid_arguments")
                self._exit_region()
            return end if end > i or final else None
        self._fail_call("invalid_arguments", buf[i : match.end()])
        self._exit_region()
        return match.end()

    def _gap(self, buf: str, i: int) -> int:
        """Skip the whitespace between tags into the call's raw."""
        j = _GAP(buf, i).end()
        self._raw(buf[i:j])
        return j

    def _truncated(self, buf: str, i: int) -> int:
        self._raw(buf[i:])
        self._arguments.close()
        self._fail_call("truncated")
        self._exit_region()
        return len(buf)

    _STEPS: ClassVar[dict[int, Callable[..., int | None]]] = {
        _HEAD: _head,
        _BODY: _body,
        _KEY: _key_text,
        _AFTER_KEY: _after_key,
        _VALUE: _value,
        _SKIP: _skip,
    }
