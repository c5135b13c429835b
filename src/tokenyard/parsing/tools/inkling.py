"""Inkling: typed content blocks, every marker a special token.

    <|content_thinking|>...reasoning...<|end_message|>
    <|message_model|><|content_text|>...visible text...<|end_message|>
    <|message_model|><|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Tokyo"}}<|end_message|>

The prompt ends with `<|message_model|>`, so output begins with a block kind. Blocks
repeat in any order; `<|content_model_end_sampling|>` may end one instead of
`<|end_message|>`. Between `<|message_model|>` and the block kind the model may write
a header (a function name): framing, not content. Raw and error tool blocks
(`<|content_invoke_tool_text|>`, `<|content_tool_error|>`) are shown as text.

Reasoning blocks are the `inkling` reasoning format's (parsing/reasoning); this
parser owns the framing around text and the JSON tool blocks. The call is announced
when its name has been read, its `args` stream as JSON, and it is ready at the
block's end marker (or at the end of output once its JSON is complete).
"""

from __future__ import annotations

from typing import ClassVar

from ...events import ParseEvent
from ..markers import MarkerSet
from .base import JsonCallReader, ToolParser

MESSAGE_MODEL = "<|message_model|>"
CONTENT_TEXT = "<|content_text|>"
CONTENT_THINKING = "<|content_thinking|>"
TOOL_JSON = "<|content_invoke_tool_json|>"
TOOL_TEXT = "<|content_invoke_tool_text|>"
TOOL_ERROR = "<|content_tool_error|>"
END_MESSAGE = "<|end_message|>"
END_SAMPLING = "<|content_model_end_sampling|>"
_BLOCK_ENDS = (END_MESSAGE, END_SAMPLING)
_BLOCK_ENDS_SET = MarkerSet(_BLOCK_ENDS)
# What may follow a header: a block kind, or another role marker.
_HEADER_ENDS = MarkerSet(
    (CONTENT_TEXT, CONTENT_THINKING, TOOL_JSON, TOOL_TEXT, TOOL_ERROR, MESSAGE_MODEL, *_BLOCK_ENDS)
)
_HEADER_LIMIT = 256

_HEADER, _CALL, _AFTER_CALL, _SKIP_TO_END = range(4)


class _InklingCallReader(JsonCallReader):
    argument_keys: ClassVar[frozenset[str]] = frozenset(("args", "arguments"))


class InklingToolParser(ToolParser):
    name = "inkling"
    aliases: ClassVar[tuple[str, ...]] = ()
    start_markers = (MESSAGE_MODEL, CONTENT_TEXT, TOOL_JSON, TOOL_TEXT, TOOL_ERROR, *_BLOCK_ENDS)
    # A tool block opened while a thinking block is still unclosed ends the thinking.
    reasoning_exit_markers = (TOOL_JSON,)
    # The rest of TMLv0's control tokens (other roles, media spans): no assistant
    # block uses them, so met in the answer they are syntax out of place, never text.
    stray_markers = (
        "<|endoftext|>",
        "<|message_user|>",
        "<|message_system|>",
        "<|message_tool|>",
        "<|content_image|>",
        "<|content_audio_input|>",
        "<|audio_end|>",
        "<|content_xml|>",
    )

    def _enter_region(self, marker: str) -> None:
        self._state = _HEADER
        self._opener = marker

    @property
    def in_call_region(self) -> bool:
        # A header is framing that any block kind (also a thinking block, which
        # the reasoning parser owns) may end.
        return self._in_region and not (self._state == _HEADER and self._opener == MESSAGE_MODEL)

    def release_held(self) -> list[ParseEvent]:
        if self._in_region and self._state == _HEADER and self._opener == MESSAGE_MODEL:
            self._marker(self._buf)  # the role marker and its header end here
            self._buf = ""
            self._exit_region()
            events, self._events = self._events, []
            return events
        return super().release_held()

    def _parse_region(self, buf: str, final: bool) -> int:
        state = self._state
        if state == _HEADER:
            return self._header(buf, final)
        if state == _CALL:
            return self._call_json(buf, final)
        if state == _AFTER_CALL:
            return self._after_call(buf, final)
        # _SKIP_TO_END: the rest of a block whose JSON broke belongs to the failed call.
        return self._fail_through(buf, 0, final, _BLOCK_ENDS_SET, _BLOCK_ENDS) or 0

    def _header(self, buf: str, final: bool) -> int:
        opener = self._opener
        if opener != MESSAGE_MODEL:
            if opener == TOOL_JSON:
                self._reader = _InklingCallReader(self, TOOL_JSON)
                self._state = _CALL
            else:  # a text, raw-tool or error block begins, or a block ends: framing
                self._marker(opener)
                self._exit_region()
            return len(opener)
        match = _HEADER_ENDS.find(buf, len(MESSAGE_MODEL))
        if match is None:
            rest = len(buf) - len(MESSAGE_MODEL)
            if not final and rest < _HEADER_LIMIT and "\n" not in buf:
                return 0
            # Not a header after all: the role marker is framing, the rest is text.
            self._marker(MESSAGE_MODEL)
            self._exit_region()
            return len(MESSAGE_MODEL)
        header = match.start()
        if "\n" in buf[:header] or header - len(MESSAGE_MODEL) > _HEADER_LIMIT:
            self._marker(MESSAGE_MODEL)
            self._exit_region()
            return len(MESSAGE_MODEL)
        kind = match.group()
        if kind == TOOL_JSON:
            self._marker(buf[:header])
            self._opener = TOOL_JSON
            return header
        if kind == CONTENT_THINKING or kind == MESSAGE_MODEL:
            # Another parser's marker, or the next role marker: the header ends here.
            self._marker(buf[:header])
            self._exit_region()
            return header
        self._marker(buf[: match.end()])
        self._exit_region()
        return match.end()

    def _not_a_call(self, held: list[str]) -> None:
        # The block kind is a special token: syntax even when its body is no call.
        text = "".join(held)
        if text.startswith(TOOL_JSON):
            self._marker(TOOL_JSON)
            text = text[len(TOOL_JSON) :]
        self._text(text)

    def _no_call(self, reader: JsonCallReader) -> None:
        self._not_a_call(reader.pre_raw)
        self._exit_region()

    def _call_json(self, buf: str, final: bool) -> int:
        reader = self._reader
        if not reader.started:
            empty = self._empty_block(reader.pre_raw, buf, final)
            if empty is not None:
                return empty
        end, stopped = self._feed_object(reader, buf, _SKIP_TO_END)
        if stopped:
            return end
        if end >= 0:
            self._state = _AFTER_CALL
            return end
        if final:
            if reader.started:
                self._fail_call("truncated")
            else:
                self._not_a_call(reader.pre_raw)
            self._exit_region()
        return len(buf)

    def _empty_block(self, held_raw: list[str], buf: str, final: bool) -> int | None:
        """A JSON tool block that ends before its body begins is framing: its end
        marker is a special token, never text (the JSON reader would take its `<`)."""
        held = "".join(held_raw)
        if not held.startswith(TOOL_JSON) or held[len(TOOL_JSON) :].strip():
            return None
        stripped = buf.lstrip()
        lead = len(buf) - len(stripped)
        for end in _BLOCK_ENDS:
            if stripped.startswith(end):
                self._marker(held + buf[: lead + len(end)])
                held_raw.clear()
                self._exit_region()
                return lead + len(end)
        if not final and (not stripped or any(end.startswith(stripped) for end in _BLOCK_ENDS)):
            return 0
        return None

    def _after_call(self, buf: str, final: bool) -> int:
        stripped = buf.lstrip()
        lead = len(buf) - len(stripped)
        for end in _BLOCK_ENDS:
            if stripped.startswith(end):
                self._close_call(buf[: lead + len(end)])
                self._exit_region()
                return lead + len(end)
        if not final and (not stripped or any(end.startswith(stripped) for end in _BLOCK_ENDS)):
            return 0
        # The block went on without its end marker: the complete call stands.
        self._close_call(buf[:lead])
        self._exit_region()
        return lead
