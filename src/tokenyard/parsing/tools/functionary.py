"""MeetKai Functionary v3.x: one JSON arguments object after the function's name,
framed two ways (both from the models' chat templates).

v3.1 (`functionary_v3_1`), Llama 3.1 based:

    <function=get_weather>{"city": "Tokyo", "days": 3}</function>

v3.2 (`functionary_v3_2`): every message part is addressed with `>>>recipient` and
a newline; `all` is the user (the answer text), any other recipient is a function
and its JSON arguments follow. The generation prompt ends with `>>>`, so the output
opens on a recipient:

    get_weather
    {"city": "Tokyo", "days": 3}>>>all
    It is sunny.

The arguments stream as validated JSON; a marker inside a JSON string is the
string's text. A call whose arguments are not a JSON object is not delivered (its
text is the call's raw, `invalid_arguments`). A v3.2 recipient line that is neither
`all` nor followed by a JSON object (prose after a `>>>` in a Python session, the
python tool's raw code) is text, whole.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...conversation import ToolSpec
from ...events import ParseEvent
from ..json_stream import JsonStreamError, JsonValueScanner
from ..markers import MarkerSet
from .base import CallIds, StepParser, is_function_name, starts_with
from .token_section import skip_whitespace

# A function name is at most this long (base.FUNCTION_NAME): a longer header is text.
_HEADER_LIMIT = 260

# States shared by both framings.
_HEAD, _ARGS_START, _ARGS, _AFTER_ARGS, _BROKEN = range(5)


class _JsonArgumentsParser(StepParser):
    """A header naming the function, then one JSON object; a subclass reads the
    header and says how a call ends."""

    # What ends a call whose arguments broke (the rest up to it is the call's raw).
    _broken_ends: MarkerSet
    # The call's own closing tag after its arguments ("" where the object's brace
    # ends it).
    close_tag = ""

    def _enter_region(self, marker: str) -> None:
        self._state = _HEAD

    def _head(self, buf: str, i: int, final: bool) -> int | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _begin(self, name: str, header: str) -> None:
        self._open_call(name, header)
        self._scanner = JsonValueScanner()
        self._state = _ARGS_START

    def _args_start(self, buf: str, i: int, final: bool) -> int | None:
        j = skip_whitespace(buf, i)
        if j == len(buf) and not final:
            self._raw(buf[i:j])
            return j if j > i else None
        self._raw(buf[i:j])
        if j < len(buf) and buf[j] == "{":
            self._state = _ARGS
            return j
        if j == len(buf):  # the output ended right after the name
            self._fail_call("truncated")
            self._exit_region()
            return j
        self._state = _BROKEN  # arguments that are not a JSON object
        return j

    def _args(self, buf: str, i: int, final: bool) -> int | None:
        chunk = buf[i:]
        try:
            out, done_at = self._scanner.feed(chunk)
        except JsonStreamError as error:
            self._stream_args(error.valid)
            self._raw(chunk[: error.offset])
            self._state = _BROKEN
            return i + error.offset
        self._stream_args(out)
        if done_at >= 0:
            self._raw(chunk[:done_at])
            if not self.close_tag:  # the object's closing brace ends the call
                self._close_call()
                self._exit_region()
            else:
                self._state = _AFTER_ARGS
            return i + done_at
        self._raw(chunk)
        if final:
            self._fail_call("truncated")
            self._exit_region()
        return len(buf)

    def _after_args(self, buf: str, i: int, final: bool) -> int | None:
        j = skip_whitespace(buf, i)
        found = starts_with(buf[j:], self.close_tag)
        if found:
            self._close_call(buf[i : j + len(self.close_tag)])
            self._exit_region()
            return j + len(self.close_tag)
        if found is None and not final:
            self._raw(buf[i:j])
            return j if j > i else None
        if j == len(buf) or found is None:
            # The output ended after complete arguments, without the closing tag:
            # the call is whole (the end-of-output policy in base.py).
            self._close_call(buf[i:])
            self._exit_region()
            return len(buf)
        self._raw(buf[i:j])
        self._state = _BROKEN  # something else follows the arguments
        return j

    def _broken(self, buf: str, i: int, final: bool) -> int | None:
        return self._fail_through(buf, i, final, self._broken_ends, (self.close_tag,))

    _STEPS = {_HEAD: _head, _ARGS_START: _args_start, _ARGS: _args, _AFTER_ARGS: _after_args, _BROKEN: _broken}


class FunctionaryV31ToolParser(_JsonArgumentsParser):
    name = "functionary_v3_1"
    aliases = ("functionary_v31",)
    start_markers = ("<function=",)
    close_tag = "</function>"
    _broken_ends = MarkerSet(("</function>", "<function="))

    def _head(self, buf: str, i: int, final: bool) -> int | None:
        start = i + len("<function=")
        gt = buf.find(">", start, start + _HEADER_LIMIT)
        if gt < 0 and not final and len(buf) - start < _HEADER_LIMIT:
            return None
        name = buf[start:gt] if gt >= 0 else ""
        if not is_function_name(name):
            # `<function=` that names no function is text.
            self._text(buf[i:start])
            self._exit_region()
            return start
        self._begin(name, buf[i : gt + 1])
        return gt + 1


_ANSWER = "all"


class FunctionaryV32ToolParser(_JsonArgumentsParser):
    name = "functionary_v3_2"
    aliases = ("functionary_v32",)
    start_markers = (">>>",)
    _broken_ends = MarkerSet((">>>",))

    def __init__(self, tools: Iterable[ToolSpec] | None = None, call_ids: CallIds | None = None) -> None:
        super().__init__(tools, call_ids)
        # The generation prompt ends with `>>>`: the output opens on a recipient.
        self._in_region = True
        self._state = _HEAD

    def _head(self, buf: str, i: int, final: bool) -> int | None:
        if i == len(buf):  # the output ended (or was empty) before any recipient
            self._exit_region()
            return i
        start = i + 3 if buf.startswith(">>>", i) else i
        newline = buf.find("\n", start, start + _HEADER_LIMIT)
        again = buf.find(">>>", start, newline if newline >= 0 else start + _HEADER_LIMIT)
        if newline < 0 and again < 0 and not final and len(buf) - start < _HEADER_LIMIT:
            return None
        if again >= 0:
            newline = -1  # a recipient line never holds `>>>`: this one is text
        recipient = buf[start:newline].strip() if newline >= 0 else ""
        if recipient == _ANSWER:
            self._marker(buf[i : newline + 1])
            self._exit_region()
            return newline + 1
        if newline >= 0 and is_function_name(recipient):
            j = skip_whitespace(buf, newline + 1)
            if j == len(buf) and not final:
                return None  # the arguments decide whether this is a call
            if j < len(buf) and buf[j] == "{":
                self._marker(buf[i:start])
                self._begin(recipient, buf[start : newline + 1])
                return newline + 1
        # No recipient, or one followed by no JSON object: text, up to the next `>>>`.
        end = again if again > i else (newline + 1 if newline >= 0 else len(buf))
        self._text(buf[i:end])
        self._exit_region()
        return end

    def release_held(self) -> list[ParseEvent]:
        if self._in_region and self._call is None and self._buf:
            return self._held_is_text()
        return super().release_held()
