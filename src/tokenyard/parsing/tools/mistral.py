"""Mistral, both shapes after `[TOOL_CALLS]`:

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]
    [TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo", "days": 3}[TOOL_CALLS]other[ARGS]{}

The first (tokenizers before v11) is a JSON call array; the region ends after its
`]`, and a later `[TOOL_CALLS]` starts another. In the second (v11+) every call
carries its own `[TOOL_CALLS]`, and the call is ready the moment its arguments' JSON
value completes. `[TOOL_CALLS]` is a control token, so it is a Marker whatever
follows it. Some tokenizers put a model call id
between name and arguments (`name[CALL_ID]a1B2c3D4e[ARGS]{...}`), kept as the
call's id; decoders that drop special tokens leave `name{...}`, also accepted, and
turn `[TOOL_CALLS][{...}]` into a bare `[{...}]` (Mistral-7B v0.3 behind such a
decoder; Dynamo's tests): a JSON call list (or one call object) opening the output
is read as calls when its first call names a declared tool.
"""

from __future__ import annotations

from collections.abc import Callable

from ...events import ParseEvent, ToolCallDelta
from ..json_stream import JsonStreamError, JsonValueScanner
from ..patterns import always_match
from .base import is_function_name, starts_with
from .call_list import WHITESPACE
from .json_call_list import (
    FIRST_SUBCLASS_STATE,
    LIST_OPEN,
    MARKER,
    OUTPUT_START,
    SKIP,
    JsonCallListConfig,
    OpeningCallListParser,
)

_TOOL_CALLS = "[TOOL_CALLS]"
_TOOL_CALLS_END = "[/TOOL_CALLS]"
_ARGS = "[ARGS]"
_CALL_ID = "[CALL_ID]"
_NAME_RUN = always_match(r"[\w.\-:/]*")
_ID_RUN = always_match(r"[\w\-]*")

_SHAPE, _NAME, _NAME_END, _ID, _ID_END, _ARGS_START, _ARGUMENTS = range(FIRST_SUBCLASS_STATE, FIRST_SUBCLASS_STATE + 7)


class MistralToolParser(OpeningCallListParser):
    name = "mistral"
    # `[/TOOL_CALLS]` closes the calls in some outputs (Dynamo's fixtures): syntax.
    config = JsonCallListConfig(start_markers=(_TOOL_CALLS, _TOOL_CALLS_END), reasoning_exit_markers=(_TOOL_CALLS,))

    def _output_start(self, buf: str, final: bool) -> int:
        i = WHITESPACE(buf).end()
        self._text(buf[:i])  # whitespace decides nothing
        rest = buf[i:]
        if rest[:1] == "{":  # one call object without its list
            self._bare = True
            self._state = LIST_OPEN
            return i
        if rest[:1] == "[" and not _TOOL_CALLS.startswith(rest[:12]) and not _TOOL_CALLS_END.startswith(rest[:13]):
            j = WHITESPACE(rest, 1).end()
            if j == len(rest) and not final:
                return i  # `[` then nothing yet: a list, or prose in brackets?
            if rest[j : j + 1] == "{":
                self._bare = True
                self._state = LIST_OPEN
                return i
        elif (not rest or _TOOL_CALLS.startswith(rest) or _TOOL_CALLS_END.startswith(rest)) and not final:
            return i  # nothing, or maybe the start of `[TOOL_CALLS]`: wait
        self._exit_region()  # not a bare list; the scan for `[TOOL_CALLS]` goes on
        return i

    def _after_start_marker(self) -> int:
        return _SHAPE

    def take_string_text(self, text: str) -> list[ParseEvent] | None:
        # v11's `name[ARGS]{...}`: plain text inside a string argument streams as is.
        if self._state == _ARGUMENTS and not self._buf and text:
            call = self._call
            if call is not None and self._scanner.take_plain(text):
                call.raw.append(text)
                call.arguments.append(text)
                return [ToolCallDelta(call.index, text)]
            return None
        return super().take_string_text(text)

    def _step(self, buf: str, final: bool) -> int:
        state = self._state
        if state == MARKER and self._start_marker == _TOOL_CALLS_END:
            self._marker(_TOOL_CALLS_END)
            self._exit_region()
            return len(_TOOL_CALLS_END)
        if state == MARKER:
            # `[TOOL_CALLS]` is a control token: syntax whether or not a call follows
            # it, so a call that breaks after it returns its own text, not the token.
            self._marker(_TOOL_CALLS)
            self._state = _SHAPE
            return len(_TOOL_CALLS)
        if state == OUTPUT_START:
            return self._output_start(buf, final)
        if state < FIRST_SUBCLASS_STATE:
            return super()._step(buf, final)
        if state == _SHAPE:
            i = self._pend_whitespace(buf, final)
            if i == len(buf):
                return i
            if buf[i] in "[{":  # a call list, or one call object without its list
                self._state = LIST_OPEN
            elif _NAME_RUN(buf, i).end() > i:
                self._state = _NAME
                self._name = ""
                self._model_id = ""
            else:
                self._end_list()
            return i
        if state == _NAME:
            self._name, end, decides = self._pend_run(buf, final, _NAME_RUN, self._name)
            if not decides:
                return end
            if buf[end] == "[":
                self._state = _NAME_END
            elif buf[end] == "{":  # special tokens dropped by the decoder
                self._announce()
            else:
                self._end_list()
            return end
        if state == _NAME_END:
            return self._after_tag(buf, final, {_ARGS: self._announce, _CALL_ID: self._read_id})
        if state == _ID:
            self._model_id, end, decides = self._pend_run(buf, final, _ID_RUN, self._model_id)
            if not decides:
                return end
            if buf[end] == "[":
                self._state = _ID_END
            else:
                self._end_list()
            return end
        if state == _ID_END:
            return self._after_tag(buf, final, {_ARGS: self._announce})
        if state == _ARGS_START:
            i = WHITESPACE(buf).end()
            self._raw(buf[:i])
            if i == len(buf):
                if final:
                    self._fail_call("truncated")
                    self._exit_region()
                return i
            if buf[i] == "{":
                self._scanner = JsonValueScanner()
                self._state = _ARGUMENTS
            else:  # arguments must be an object
                self._state = SKIP
            return i
        return self._parse_arguments(buf, final)

    def _after_tag(self, buf: str, final: bool, tags: dict[str, Callable[[], None]]) -> int:
        """`buf` starts with `[`: one of `tags` (then its action), or not a call."""
        undecided = False
        for tag, action in tags.items():
            found = starts_with(buf, tag)
            if found:
                self._pending += tag
                action()
                return len(tag)
            undecided = undecided or found is None
        if not undecided or final:
            self._end_list()
        return 0

    def _read_id(self) -> None:
        self._state = _ID

    def _announce(self) -> None:
        if not is_function_name(self._name):
            self._end_list()
            return
        # `name[ARGS]` belongs to this call's raw.
        raw, self._pending = self._pending, ""
        self._open_call(self._name, raw, self._model_id or None)
        self._state = _ARGS_START

    def _parse_arguments(self, buf: str, final: bool) -> int:
        try:
            out, end = self._scanner.feed(buf)
        except JsonStreamError as error:
            self._stream_args(error.valid)
            consumed = min(len(buf), error.offset + 1)
            self._raw(buf[:consumed])
            self._state = SKIP
            return consumed
        self._stream_args(out)
        if end >= 0:
            self._close_call(buf[:end])
            self._exit_region()
            return end
        self._raw(buf)
        if final:
            self._fail_call("truncated")
            self._exit_region()
        return len(buf)
