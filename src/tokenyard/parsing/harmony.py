"""gpt-oss harmony: one output, several messages, each in a channel.

The prompt ends with `<|start|>assistant`, so the first message's header has no
`<|start|>assistant` of its own:

    <|channel|>analysis<|message|>Need the forecast.<|end|>
    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Tokyo","days":3}<|call|>
    <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>
    <|start|>assistant<|channel|>commentary<|message|>Checking both cities.<|end|>
    <|start|>assistant<|channel|>final<|message|>Sunny in both.<|return|>

A header runs from `<|start|>` (or a bare `<|channel|>`, or ` to=` at the very
beginning) to `<|message|>`. A body runs to `<|end|>`, `<|return|>` or `<|call|>`, to
the next header, or to the end of output. A message whose header names a recipient
(`to=functions.NAME` is the call NAME; built-ins such as `browser.search` or `python`
keep their whole name) is a tool call whose body is the arguments JSON; otherwise the
`analysis` channel is reasoning and every other channel (`final`, a `commentary`
preamble) is text. Headers and end tokens of non-call messages are `Marker`s; a call's
`raw` is its header, body and end token. Text outside any header (a model that
skipped harmony) is text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..conversation import ToolSpec
from ..events import ParseEvent, ReasoningDelta, TextDelta
from .json_stream import JsonStreamError, JsonValueScanner
from .markers import MarkerSet
from .patterns import always_match
from .tools.base import CallIds, ToolParser, is_function_name, split_before

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
RETURN = "<|return|>"
CALL = "<|call|>"

_MESSAGE_ENDS = frozenset((END, RETURN, CALL))
_HEADER_OPENERS = frozenset((START, CHANNEL))
_ALL_TOKENS = MarkerSet((START, CHANNEL, MESSAGE, CONSTRAIN, END, RETURN, CALL))
_BODY_STOPS = MarkerSet((END, RETURN, CALL, START, CHANNEL))
# What decides a header: its `<|message|>`, or something no header contains.
_HEADER_STOP = re.compile(r"<\|(?:start|channel|message|end|return|call)\|>|\n")
_HEADER_PIECE = re.compile(r"<\|(?:start|channel|constrain)\|>|(?:(?!<\|)\S)+")
# Real headers are well under this; a longer run is prose, not a header.
_HEADER_LIMIT = 512
_LONGEST_STOP = max(len(t) for t in (START, CHANNEL, MESSAGE, END, RETURN, CALL))
# The prompt's `<|start|>assistant` may be followed directly by the recipient.
_RECIPIENT_FIRST = re.compile(r" ?to=").match
_JSON_SPACE = always_match(r"[ \t\r\n]*")
# The role or a channel name, standing where a header lost its `<|start|>`.
_HEADER_WORDS = ("assistant", "analysis", "commentary", "final")
_HEADER_WORD = always_match(f"(?:{'|'.join(_HEADER_WORDS)})?")

# Parser states; the message bodies come last (`feed`'s hot path tests `>= _REASONING`).
_BEGIN, _OUTSIDE, _HEADER, _REASONING, _TEXT, _CALL = range(6)
# Where a call's arguments stand.
_ARGS_LEAD, _ARGS_OPEN, _ARGS_DONE, _ARGS_BROKEN = range(4)


class HarmonyParser(ToolParser):
    """Sans-IO: `feed(text)` / `finish()` return ordered reasoning, text, marker and
    tool-call events. Built on `ToolParser` for its emission helpers, call ids and
    conservation bookkeeping; the whole output is one region it parses itself.

    `thinking_enabled` changes nothing: harmony channels are explicit, so an
    `analysis` message is reasoning even when the request turned thinking off (the
    model wrote it), and nothing else ever is. `parse_tools=False` (reasoning parser
    without the tool parser) leaves tool messages, header to end token, as text.
    """

    start_markers = (START, CHANNEL)

    def __init__(
        self,
        tools: Iterable[ToolSpec] | None = None,
        call_ids: CallIds | None = None,
        *,
        thinking_enabled: bool = True,
        parse_tools: bool = True,
    ):
        super().__init__(tools, call_ids)
        self._parse_tools = parse_tools
        self._in_region = True
        self._state = _BEGIN
        self._handlers = {
            _BEGIN: self._begin,
            _OUTSIDE: self._outside,
            _HEADER: self._header,
            _REASONING: self._body,
            _TEXT: self._body,
            _CALL: self._call_body,
        }
        # Header scanning: where to resume, and whether `<|channel|>` was seen.
        self._scan_from = 0
        self._channel_seen = False
        # A tool message shown as text also shows its end token as text.
        self._ends_as_text = False
        # A message's end token was just read: only a header may follow.
        self._after_end = False
        self._args = _ARGS_LEAD
        self._scanner: JsonValueScanner | None = None

    def feed(self, text: str) -> list[ParseEvent]:
        # Hot paths: a token of a body with no `<` in it can not end the body.
        if not self._buf and "<" not in text and self._state >= _REASONING:
            if not text:
                return []
            if self._state == _REASONING:
                return [ReasoningDelta(text)]
            if self._state == _TEXT:
                return [TextDelta(text)]
            self._raw(text)
            self._read_arguments(text)
            events, self._events = self._events, []
            return events
        return super().feed(text)

    def _parse_region(self, buf: str, final: bool) -> int:
        # A handler that changes state without consuming hands the buffer on.
        while True:
            state = self._state
            consumed = self._handlers[state](buf, final)
            if consumed or self._state == state:
                return consumed

    # ---- between messages ----------------------------------------------------------

    def _begin(self, buf: str, final: bool) -> int:
        match = _RECIPIENT_FIRST(buf)
        if match is not None:
            self._open_header(match.end(), channel_seen=False)
        elif not final and (" to=".startswith(buf) or "to=".startswith(buf)):
            return 0
        else:
            self._state = _OUTSIDE
        return 0

    def _outside(self, buf: str, final: bool) -> int:
        if self._after_end:
            # Right after a message's end token only a header may stand: the role or
            # a channel's name there, then a header's `<|start|>` or `<|channel|>`,
            # is header syntax that lost its place (gpt-oss writes
            # `<|call|>commentary<|channel|>...`), not content.
            word = _HEADER_WORD(buf).end()
            rest = buf[word:]
            if not final and (
                any(name.startswith(buf) for name in _HEADER_WORDS)
                or (word and (START.startswith(rest) or CHANNEL.startswith(rest)))
            ):
                return 0  # what follows decides
            self._after_end = False
            if word and (rest.startswith(START) or rest.startswith(CHANNEL)):
                self._marker(buf[:word])
                return word
        end, match = split_before(buf, _ALL_TOKENS, final)
        self._text(buf[:end])
        if match is None:
            return end
        token = match.group()
        if token in _HEADER_OPENERS:
            self._open_header(len(token), channel_seen=token == CHANNEL)
            return end
        self._marker(token)  # a stray end, `<|message|>` or `<|constrain|>`
        return match.end()

    # ---- headers -------------------------------------------------------------------

    def _open_header(self, opener_length: int, channel_seen: bool) -> None:
        self._state = _HEADER
        self._scan_from = opener_length
        self._channel_seen = channel_seen

    def _header(self, buf: str, final: bool) -> int:
        pos = self._scan_from
        while True:
            match = _HEADER_STOP.search(buf, pos)
            if match is None:
                break
            token = match.group()
            if token == CHANNEL and not self._channel_seen:
                self._channel_seen = True
                pos = match.end()
                continue
            if token == MESSAGE:
                return self._start_message(buf[: match.end()], buf[: match.start()])
            if token in _HEADER_OPENERS and (buf.startswith("<|") or self._channel_seen):
                # A header abandoned for the next one (`<|channel|>commentary
                # to=assistant<|channel|>final<|message|>`): harmony syntax, not content.
                self._marker(buf[: match.start()])
                self._state = _OUTSIDE
                return match.start()
            return self._not_a_header(buf[: match.start()])
        if final:
            if not (buf.startswith("<|") or self._channel_seen):
                return self._not_a_header(buf)  # prose that began with ` to=`
            # Cut off inside a header at max_tokens: harmony syntax, not content.
            self._marker(buf)
            self._state = _OUTSIDE
            return len(buf)
        if len(buf) > _HEADER_LIMIT:
            return self._not_a_header(buf[: len(buf) - _ALL_TOKENS.held_suffix(buf)])
        self._scan_from = max(pos, len(buf) - _LONGEST_STOP + 1)
        return 0

    def _not_a_header(self, text: str) -> int:
        self._text(text)
        self._state = _OUTSIDE
        return len(text)

    def _start_message(self, header: str, inner: str) -> int:
        role, channel, recipient = _read_header(inner)
        self._ends_as_text = False
        if role not in (None, "assistant"):
            # The model writing another role's message (a tool result): content.
            self._marker(header)
            self._state = _TEXT
        elif recipient is not None:
            name = recipient[len("functions.") :] if recipient.startswith("functions.") else recipient
            if self._parse_tools and is_function_name(name):
                # Announced here rather than when `to=NAME` is read: only `<|message|>`
                # proves the header is harmony, a few tokens later.
                self._open_call(name, header)
                self._state = _CALL
                self._args = _ARGS_LEAD
                self._scanner = None
            else:
                self._text(header)
                self._ends_as_text = True
                self._state = _TEXT
        else:
            self._marker(header)
            self._state = _REASONING if channel == "analysis" else _TEXT
        return len(header)

    # ---- reasoning and text bodies ---------------------------------------------------

    def _body(self, buf: str, final: bool) -> int:
        end, match = split_before(buf, _BODY_STOPS, final)
        if end:
            if self._state == _REASONING:
                self._events.append(ReasoningDelta(buf[:end]))
            else:
                self._text(buf[:end])
        if match is None:
            return end
        token = match.group()
        if token in _HEADER_OPENERS:  # the next message began without an end token
            self._open_header(len(token), channel_seen=token == CHANNEL)
            return end
        if self._ends_as_text:
            self._text(token)
        else:
            self._marker(token)
        self._state = _OUTSIDE
        self._after_end = True
        return match.end()

    # ---- tool-call bodies ----------------------------------------------------------------

    def _call_body(self, buf: str, final: bool) -> int:
        end, match = split_before(buf, _BODY_STOPS, final)
        if end:
            self._raw(buf[:end])
            self._read_arguments(buf[:end])
        if match is None:
            if final:
                self._end_call(None)
                self._state = _OUTSIDE
            return end
        token = match.group()
        if self._args == _ARGS_OPEN and self._scanner is not None and self._scanner.in_string:
            # A token inside a JSON string is the string's text: only the closing
            # quote ends a string.
            self._raw(token)
            self._read_arguments(token)
            return match.end()
        self._end_call(token)
        if token in _HEADER_OPENERS:
            self._open_header(len(token), channel_seen=token == CHANNEL)
            return end
        self._state = _OUTSIDE
        self._after_end = True
        return match.end()

    def _read_arguments(self, text: str) -> None:
        i = 0
        if self._args == _ARGS_LEAD:
            i = _JSON_SPACE(text).end()
            if i == len(text):
                return
            self._args = _ARGS_OPEN
            self._scanner = JsonValueScanner()
        if self._args == _ARGS_OPEN:
            scanner = self._scanner
            assert scanner is not None
            try:
                out, stop = scanner.feed(text[i:] if i else text)
            except JsonStreamError as error:
                self._stream_args(error.valid)
                self._args = _ARGS_BROKEN
                return
            self._stream_args(out)
            if stop < 0:
                return
            i += stop
            self._args = _ARGS_DONE
        if self._args == _ARGS_DONE and _JSON_SPACE(text, i).end() != len(text):
            # Text after the JSON value: the body is not the arguments we would dispatch.
            self._args = _ARGS_BROKEN

    def _end_call(self, token: str | None) -> None:
        """The body ended: at an end token, at the next header, or at end of output
        (`token=None`). Ready is given here, at `<|call|>`, not when the JSON value
        closes: text after the value would still make it invalid, and `<|call|>` is
        the very next token (gpt-oss's stop token) so dispatch loses nothing."""
        if self._args == _ARGS_OPEN:
            scanner = self._scanner
            assert scanner is not None
            try:
                self._stream_args(scanner.finish())  # a top-level number completes here
                self._args = _ARGS_DONE
            except JsonStreamError:
                pass
        raw = token if token in _MESSAGE_ENDS else ""
        if self._args == _ARGS_DONE or (self._args == _ARGS_LEAD and token is not None):
            self._close_call(raw)  # an empty body is a call without arguments: `{}`
        elif token is None and self._args != _ARGS_BROKEN:
            self._fail_call("truncated")
        else:
            self._fail_call("invalid_arguments", raw)
        self._scanner = None


def _read_header(inner: str) -> tuple[str | None, str | None, str | None]:
    """(role, channel, recipient) of a header without its `<|message|>`. The
    recipient may stand before or after the channel; content types (`json`, `code`,
    `<|constrain|>json`) are not needed."""
    role = channel = recipient = None
    section = START
    for piece in _HEADER_PIECE.findall(inner):
        if piece == START:
            continue
        if piece == CHANNEL or piece == CONSTRAIN:
            section = piece
        elif piece.startswith("to="):
            if recipient is None:
                recipient = piece[3:]
        elif section == START and role is None:
            role = piece
        elif section == CHANNEL and channel is None:
            channel = piece
    return role, channel, recipient
