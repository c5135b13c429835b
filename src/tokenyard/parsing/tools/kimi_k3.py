"""Kimi K3 (XTML) tool calls, in a `tools` channel after the `response` channel:

    <|open|>response<|sep|>On it.<|close|>response<|sep|>
    <|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Tokyo<|close|>argument<|sep|>
    <|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|><|close|>message<|sep|>

`<|open|>`, `<|close|>` and `<|sep|>` are special tokens. A `type="string"` value is
the raw text (the template writes it unescaped) and ends only at its own
`<|close|>argument<|sep|>`, so any other marker inside it stays part of the value;
other types are JSON (a value that is not valid JSON is kept as a string, as the
template could not have written it otherwise). Attribute values escape `&` and `"`.
The `response` and `message` wrappers are syntax: reported as markers, never
content; so is any other special token outside a channel, with the channel name
it opens or closes (a marker cut off at the end of the output). A call is
complete at its `<|close|>call<|sep|>`; a missing `<|close|>tools<|sep|>` after
it is tolerated.
"""

from __future__ import annotations

import json
import re

from ..markers import MarkerSet
from ..patterns import always_match
from .base import ToolParser
from .token_section import skip_whitespace

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
TOOLS_OPEN, TOOLS_CLOSE = f"{OPEN}tools{SEP}", f"{CLOSE}tools{SEP}"
RESPONSE_OPEN, RESPONSE_CLOSE, MESSAGE_CLOSE = f"{OPEN}response{SEP}", f"{CLOSE}response{SEP}", f"{CLOSE}message{SEP}"
WRAPPERS = (RESPONSE_OPEN, RESPONSE_CLOSE, MESSAGE_CLOSE)
_CALL_OPEN, _CALL_CLOSE = f"{OPEN}call ", f"{CLOSE}call{SEP}"
_ARG_OPEN, _ARG_CLOSE = f"{OPEN}argument ", f"{CLOSE}argument{SEP}"
# What json.dumps(ensure_ascii=False) escapes inside a string.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]').search
_VALUE_END = MarkerSet([_ARG_CLOSE])
_SKIP_END = MarkerSet([_CALL_CLOSE, TOOLS_CLOSE])
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_HEAD_LIMIT = 1024
_NAME_RUN = always_match(r"\w*")
# A call's `tool` attribute, unescaped. The head is delimited by special tokens and the
# name quoted and escaped, so whatever the attribute holds is the name the model
# called: a call whose name no API lets a tool have (`a&b`) is still delivered, as a
# call to an undeclared tool, for the client to report to the model. Only an empty
# name, or one holding control characters, names nothing.
_TOOL_NAME = re.compile(r"\s*[^\x00-\x20][^\x00-\x1f]*").fullmatch

_OPENING, _SECTION, _CALL, _VALUE, _SKIP = range(5)


def _attributes(text: str) -> dict[str, str]:
    return {k: v.replace("&quot;", '"').replace("&amp;", "&") for k, v in _ATTRIBUTE.findall(text)}


def _ahead(buf: str, i: int, literal: str) -> bool | None:
    """Whether `literal` starts at `buf[i]`; None while the buffer ends inside it."""
    chunk = buf[i : i + len(literal)]
    if chunk == literal:
        return True
    return None if literal.startswith(chunk) else False


class KimiK3ToolParser(ToolParser):
    name = "kimi_k3"
    start_markers = (TOOLS_OPEN, *WRAPPERS)
    reasoning_exit_markers = (TOOLS_OPEN,)
    # Outside the channels above, the special tokens are stray syntax: a truncated
    # or unknown channel marker (`<|close|>response` cut before its `<|sep|>`).
    stray_markers = (OPEN, CLOSE, SEP)

    def _stray_end(self, buf: str, at: int, marker: str, final: bool) -> int | None:
        end = at + len(marker)
        if marker == SEP:
            return end
        name_end = _NAME_RUN(buf, end).end()  # the channel name the token opens or closes
        if name_end == len(buf) or (not final and _ahead(buf, name_end, SEP) is None):
            return len(buf) if final else None
        return name_end + len(SEP) if buf.startswith(SEP, name_end) else name_end

    def _enter_region(self, marker: str) -> None:
        self._state = _OPENING
        self._opener = marker

    def _parse_region(self, buf: str, final: bool) -> int:
        i = 0
        while self._in_region:
            step = self._step(buf, i, final)
            if step is None:  # needs more input
                return i
            i = step
            if i == len(buf) and not final and self._state == _VALUE:
                return i  # a value read to the end of the input waits for more
        return i

    def _step(self, buf: str, i: int, final: bool) -> int | None:
        state = self._state
        if state == _OPENING:
            self._marker(self._opener)
            if self._opener == TOOLS_OPEN:
                self._state = _SECTION
            else:
                self._exit_region()
            return i + len(self._opener)
        if state == _SECTION:
            return self._section(buf, i, final)
        if state == _CALL:
            return self._call_body(buf, i, final)
        if state == _VALUE:
            return self._value(buf, i, final)
        return self._skip(buf, i, final)

    def _head(self, buf: str, at: int, opener: str, final: bool) -> tuple[dict[str, str], int] | None | bool:
        """Attributes and end of `<|open|>call ...<|sep|>`-style heads at `at`:
        None to wait, False if there is none."""
        found = _ahead(buf, at, opener)
        if found is None:
            return None if not final else False
        if not found:
            return False
        sep = buf.find(SEP, at + len(opener))
        if sep < 0:
            return None if not final and len(buf) - at <= _HEAD_LIMIT else False
        return _attributes(buf[at + len(opener) : sep]), sep + len(SEP)

    def _section(self, buf: str, i: int, final: bool) -> int | None:
        j = skip_whitespace(buf, i)
        head = self._head(buf, j, _CALL_OPEN, final)
        if head is None:
            return None
        if isinstance(head, tuple):
            attributes, end = head
            name = attributes.get("tool", "")
            self._marker(buf[i:j])
            if _TOOL_NAME(name) is None:  # no function to call: syntax with no destination
                self._skip_raw = [buf[j:end]]
                self._state = _SKIP
                return end
            self._open_call(name, buf[j:end])
            self._stream_args("{")
            self._first_argument = True
            self._state = _CALL
            return end
        closing = _ahead(buf, j, TOOLS_CLOSE)
        if closing:
            self._marker(buf[i : j + len(TOOLS_CLOSE)])
            self._exit_region()
            return j + len(TOOLS_CLOSE)
        if (closing is None or j == len(buf)) and not final:
            return None
        # The channel ends without its closing marker: what follows is text.
        self._marker(buf[i:j])
        self._exit_region()
        return j

    def _call_body(self, buf: str, i: int, final: bool) -> int | None:
        j = skip_whitespace(buf, i)
        head = self._head(buf, j, _ARG_OPEN, final)
        if head is None:
            return None
        if isinstance(head, tuple):
            attributes, end = head
            self._raw(buf[i:end])
            self._key = attributes.get("key", "")
            self._is_string = attributes.get("type", "string") == "string"
            self._value_parts: list[str] = []
            prefix = "" if self._first_argument else ", "
            self._first_argument = False
            self._stream_args(
                prefix + json.dumps(self._key, ensure_ascii=False) + ": " + ('"' if self._is_string else "")
            )
            self._state = _VALUE
            return end
        for end_marker in (_CALL_CLOSE, TOOLS_CLOSE):
            found = _ahead(buf, j, end_marker)
            if found:
                # `<|close|>tools<|sep|>` standing in for a missing call close ends it too.
                raw_end = j + len(end_marker) if end_marker == _CALL_CLOSE else j
                self._stream_args("}")
                self._close_call(buf[i:raw_end])
                self._state = _SECTION
                return raw_end
            if found is None and not final:
                return None
        if j == len(buf):
            if not final:
                return None
            # The output ended between arguments, before the call's end.
            self._stream_args("}")
            self._close_at_end_of_output(buf[i:])
            self._exit_region()
            return len(buf)
        # Text where an argument or the call's end belongs: the call can not be dispatched.
        self._raw(buf[i:j])
        self._skip_raw = []
        self._state = _SKIP
        return j

    def _value(self, buf: str, i: int, final: bool) -> int | None:
        match = _VALUE_END.find(buf, i)
        if match is not None:
            end = match.start()
        elif final or not _VALUE_END.could_start(buf, i):  # the common case: plain value text
            end = len(buf)
        else:
            end = len(buf) - _VALUE_END.held_suffix(buf, i)
        if end > i:
            piece = buf[i:end]
            self._raw(piece)
            if self._is_string:
                # Most pieces need no escaping; json.dumps is the slow path for those that do.
                self._stream_args(json.dumps(piece, ensure_ascii=False)[1:-1] if _NEEDS_ESCAPE(piece) else piece)
            else:
                self._value_parts.append(piece)
        if match is None:
            if final:
                self._fail_call("truncated")
                self._exit_region()
                return len(buf)
            return end if end > i else None
        if self._is_string:
            self._stream_args('"')
        else:
            text = "".join(self._value_parts)
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            self._stream_args(json.dumps(value, ensure_ascii=False))
        self._raw(_ARG_CLOSE)
        self._state = _CALL
        return match.end()

    def _skip(self, buf: str, i: int, final: bool) -> int | None:
        """The rest of a broken call, up to its `<|close|>call<|sep|>` (included)."""
        match = _SKIP_END.find(buf, i)
        if match is None:
            end = len(buf) if final else len(buf) - _SKIP_END.held_suffix(buf, i)
            self._skipped(buf[i:end])
            if final:
                self._end_skip()
                self._exit_region()
                return len(buf)
            return end if end > i else None
        end = match.end() if match.group() == _CALL_CLOSE else match.start()
        self._skipped(buf[i:end])
        self._end_skip()
        self._state = _SECTION
        return end

    def _skipped(self, text: str) -> None:
        if self._call_open:
            self._raw(text)
        else:
            self._skip_raw.append(text)

    def _end_skip(self) -> None:
        if self._call_open:
            self._fail_call("invalid_arguments")
        else:
            self._marker("".join(self._skip_raw))
