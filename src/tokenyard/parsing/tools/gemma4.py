"""Gemma 4: one call per `<|tool_call>` … `<tool_call|>`, calls back to back:

    <|tool_call>call:get_weather{city:<|"|>Tokyo<|"|>,days:3}<tool_call|>

The arguments are Gemma's own object syntax, as its chat template writes them:
keys bare (`<|"|>`-quoted keys are accepted too), strings between `<|"|>`
delimiters with no escaping inside, nested `{…}` and `[…]`, bare numbers and
`true`/`false`/`null`. They are converted to JSON as they stream: strings as they
arrive, other values as they complete. A top-level value whose type disagrees
with the tool's schema is coerced (a bare `01234` for a string parameter stays
the string the model wrote; a delimited `3` for an integer becomes 3).

Inside a string everything up to the closing `<|"|>` is content, tool-call
markers included. Known failure shape handled: a string whose opening delimiter
the model left out (`query:weather in Tokyo<|"|>`).

A call whose `<|tool_call>` token the model or its decoder dropped reads as plain
`call:get_weather{city:<|"|>Tokyo<|"|>}` (vLLM's Gemma 4 tests). It is read as a call
only where it opens the answer: the first text of the output, or the first after
the thought channel closed (only whitespace before it), and only for a declared
tool when the request declares tools. Anywhere else (after prose, after another
call) it is text: a model showing its call syntax in an answer is not calling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import ClassVar

from ...conversation import ToolSpec
from ...events import ParseEvent
from ..coercion import coerce_value, dumps, parameter_types
from ..patterns import always_match
from .base import FUNCTION_NAME, CallIds, FormatConfig, ToolParser, is_function_name

_OPEN = "<|tool_call>"
_CLOSE = "<tool_call|>"
_QUOTE = '<|"|>'
_WHITESPACE = always_match(r"\s*")
_SCALAR = always_match(r"[^\s,}\]<{\[:]*")
_BARE_KEY = always_match(r"[^:{}\[\],<\n]*")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_LOOSE_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false", "None": "null"}
_NULLS = frozenset(("null", "none", "nil"))
_MAX_KEY = 256
# A bare value's characters up to the first `:`, bracket or `<`.
_BARE_RUN = always_match(r"[^:{}\[\]<]*")
_MAX_BARE_STRING = 4096
# A call head without its token (see the module docstring), and what may still grow
# into one: held only while it can.
_BARE_HEAD = re.compile(rf"call:({FUNCTION_NAME})\{{")
_BARE_HEAD_PREFIX = re.compile(rf"c(?:a(?:l(?:l(?::({FUNCTION_NAME})?)?)?)?)?\Z")

# Region states. `_OPENING`: no text yet; a bare call head may open the answer.
_CALL_HEAD, _ARGUMENTS, _AFTER_ARGUMENTS, _BROKEN, _OPENING = range(5)
# Argument states.
# (A closing bracket is accepted where a key or value is expected: `{}`, `[]`, and
# a trailing comma the model left.)
_KEY, _KEY_BARE, _KEY_QUOTED, _COLON, _VALUE, _STRING, _SCALAR_VALUE, _AFTER_VALUE, _DONE = range(9)


def _head_patterns(opener: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`OPENER call:NAME{`, and what may still grow into it. A stray colon right
    after the opener (`<|tool_call>:call:NAME{`, a shape Gemma 4 writes) is read
    too: the call token already said a call begins."""
    at = re.escape(opener)
    return (
        re.compile(at + r"\s*:?\s*call:([^{}\s<>]{1,256})\s*\{"),
        re.compile(at + r"\s*(?::\s*)?(?:c(?:a(?:l(?:l(?::[^{}\s<>]{0,256}\s*)?)?)?)?)?\Z"),
    )


class _SyntaxError(Exception):
    pass


def _partial_suffix(buf: str, start: int, literal: str) -> int:
    """Length of the longest suffix of `buf[start:]` that is a proper prefix of
    `literal`."""
    first = buf.find(literal[0], max(start, len(buf) - len(literal) + 1))
    if first < 0:
        return 0
    for size in range(len(buf) - first, 0, -1):
        if literal.startswith(buf[len(buf) - size :]):
            return size
    return 0


def _is_partial(buf: str, pos: int, literal: str) -> bool:
    rest = buf[pos : pos + len(literal)]
    return len(rest) < len(literal) and literal.startswith(rest)


def _scalar_json(text: str, as_string: bool) -> str:
    if as_string:
        return dumps(text)
    if text in _LITERALS:
        return _LITERALS[text]
    if text.lower() in _NULLS:  # `NULL`, `nil`: vLLM's and Dynamo's parsers read these as null too
        return "null"
    if _JSON_NUMBER.match(text):
        return text
    if _LOOSE_NUMBER.match(text):  # `+3`, `.5`, `1.`
        value = float(text)
        return dumps(int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value)
    return dumps(text)  # a bare word: the model dropped the string delimiters


@dataclass(frozen=True)
class Gemma4Config(FormatConfig):
    """Gemma's call syntax under a family's tokens; the defaults are Gemma 4's own.
    The start marker is `call_open`."""

    call_open: str = _OPEN
    call_close: str = _CLOSE
    # What delimits a string.
    quote: str = _QUOTE
    # The token that opens a tool response, where the engine stops after a call: a
    # control token, never text.
    stray_markers: tuple[str, ...] = ("<|tool_response>",)
    # Whether a call head without its token opens the answer (module docstring).
    bare_call_at_opening: bool = True


class Gemma4ToolParser(ToolParser):
    """A family with the same call syntax under other markers (functiongemma) is a
    row of formats.py with its own `Gemma4Config`."""

    name = "gemma4"
    aliases = ("gemma",)
    config: ClassVar[Gemma4Config] = Gemma4Config()
    call_open: ClassVar[str]
    call_close: ClassVar[str]
    quote: ClassVar[str]
    bare_call_at_opening: ClassVar[bool]
    start_markers = (_OPEN,)
    _head, _head_prefix = _head_patterns(_OPEN)

    def __init__(self, tools: Iterable[ToolSpec] | None = None, call_ids: CallIds | None = None) -> None:
        super().__init__(tools, call_ids)
        self._bare = False  # the open call had no call token
        if self.bare_call_at_opening:
            # The output's first text may be a bare call head: start inside the region.
            self._in_region = True
            self._state = _OPENING

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "call_open" in vars(cls):
            cls.start_markers = (cls.call_open,)
            cls._head, cls._head_prefix = _head_patterns(cls.call_open)

    def _enter_region(self, marker: str) -> None:
        self._state = _CALL_HEAD

    @property
    def in_call_region(self) -> bool:
        return self._in_region and self._state != _OPENING

    def release_held(self) -> list[ParseEvent]:
        if not (self._in_region and self._state == _OPENING):
            return super().release_held()
        if not self._buf:
            return []  # only whitespace so far: the text after the reasoning still opens the answer
        # A reasoning marker cut the held head short: it was the answer's first text.
        return self._held_is_text()

    def _parse_region(self, buf: str, final: bool) -> int:
        pos = 0
        while self._in_region and (pos < len(buf) or final):
            state = self._state
            if state == _OPENING:
                nxt = self._opening(buf, pos, final)
            elif state == _CALL_HEAD:
                nxt = self._call_head(buf, final)
            elif state == _ARGUMENTS:
                nxt = self._arguments(buf, pos, final)
            elif state == _AFTER_ARGUMENTS:
                nxt = self._after_arguments(buf, pos, final)
            else:
                nxt = self._broken(buf, pos, final)
            if nxt < 0 or (nxt == pos and state == self._state):
                break
            pos = nxt
        return pos

    def _opening(self, buf: str, pos: int, final: bool) -> int:
        """The answer's first text: a bare call head (to a declared tool, when tools
        are declared) opens a call; anything else ends the opening."""
        i = _WHITESPACE(buf, pos).end()
        self._text(buf[pos:i])  # whitespace decides nothing: no need to hold it
        if i == len(buf):
            if final:
                self._exit_region()
            return i
        head = _BARE_HEAD.match(buf, i)
        if head is not None and self._may_call(head.group(1), whole=True):
            self._bare = True
            self._begin_arguments(head.group(1), head.group())
            return head.end()
        if head is None and not final:
            partial = _BARE_HEAD_PREFIX.match(buf, i)
            if partial is not None and self._may_call(partial.group(1) or "", whole=False):
                return -1 if i == pos else i
        # Not a bare call: the answer has begun, and the scan for the call token goes on.
        self._exit_region()
        return i

    def _may_call(self, name: str, whole: bool) -> bool:
        """Whether a bare head naming `name` (or, not `whole`, a name that begins so)
        may be a call: any name when no tools are declared, else a declared one."""
        if self.tools is None:
            return True
        return name in self.tools if whole else any(tool.startswith(name) for tool in self.tools)

    def _call_head(self, buf: str, final: bool) -> int:
        head = self._head.match(buf)
        if head is not None and is_function_name(head.group(1)):
            self._bare = False
            self._begin_arguments(head.group(1), head.group())
            return head.end()
        if head is None and not final and self._head_prefix.match(buf):
            return -1
        # Not a call: the marker is text, and the scan goes on after it.
        self._text(self.call_open)
        self._exit_region()
        return len(self.call_open)

    def _begin_arguments(self, name: str, head: str) -> None:
        self._open_call(name, head)
        self._spec = self._tool(name)
        self._stream_args("{")
        self._stack = ["}"]  # closers of the open containers
        self._counts = [0]  # members written per open container
        self._arg_state = _KEY
        self._key = ""
        self._pieces: list[str] = []  # a key, scalar or held string being read
        self._held_types: tuple[str, ...] | None = None  # a string held for coercion
        self._state = _ARGUMENTS

    # ---- the arguments ------------------------------------------------------------

    def _arguments(self, buf: str, pos: int, final: bool) -> int:
        try:
            end = self._convert(buf, pos, final)
        except _SyntaxError as error:
            at: int = error.args[0]
            self._raw(buf[pos:at])
            if self._bare:
                # No token said a call begins, so no closing one bounds it: the
                # call fails here and what follows is text.
                self._fail_call("invalid_arguments")
                self._exit_region()
            else:
                self._state = _BROKEN
            return at
        self._raw(buf[pos:end])
        if self._arg_state == _DONE:
            self._state = _AFTER_ARGUMENTS
        elif final:  # what is left is the start of a delimiter
            self._fail_call("truncated", buf[end:])
            self._exit_region()
            return len(buf)
        return end if end > pos or self._state != _ARGUMENTS else -1

    def _convert(self, buf: str, i: int, final: bool) -> int:
        """Convert from `buf[i]` on, streaming JSON; returns where it stopped (the
        end, a held partial delimiter, or just past the top-level `}`). Raises
        `_SyntaxError(index)` at the first character that can not continue."""
        n = len(buf)
        stream = self._stream_args
        quote = self.quote
        while i < n:
            st = self._arg_state
            if st == _STRING:
                j = buf.find(quote, i)
                stop = j if j >= 0 else n - (0 if final else _partial_suffix(buf, i, quote))
                if stop > i:
                    self._string_text(buf[i:stop])
                if j < 0:
                    return stop
                self._end_string()
                i = j + len(quote)
                continue
            if st == _KEY_BARE:
                j = _BARE_KEY(buf, i).end()
                self._pieces.append(buf[i:j])
                if sum(map(len, self._pieces)) > _MAX_KEY:
                    raise _SyntaxError(j)
                if j == n:
                    return n
                if buf[j] != ":":
                    raise _SyntaxError(j)
                key = "".join(self._pieces).strip()
                if len(key) > 1 and key[0] == key[-1] == '"':
                    key = key[1:-1]
                if not key:
                    raise _SyntaxError(j)
                self._begin_member(key)
                i = j + 1
                continue
            if st == _KEY_QUOTED:
                j = buf.find(quote, i)
                stop = j if j >= 0 else n - (0 if final else _partial_suffix(buf, i, quote))
                self._pieces.append(buf[i:stop])
                if sum(map(len, self._pieces)) > _MAX_KEY:
                    raise _SyntaxError(stop)
                if j < 0:
                    return stop
                self._key = "".join(self._pieces)
                self._arg_state = _COLON
                i = j + len(quote)
                continue
            if st == _SCALAR_VALUE:
                j = _SCALAR(buf, i).end()
                self._pieces.append(buf[i:j])
                if j == n and not final:
                    return n
                self._end_scalar(j)
                i = j
                continue
            i = _WHITESPACE(buf, i).end()
            if i == n:
                return n
            c = buf[i]
            if st == _KEY:
                if c == "}":
                    i = self._close(i)
                    if self._arg_state == _DONE:
                        return i
                elif buf.startswith(quote, i):
                    self._pieces = []
                    self._arg_state = _KEY_QUOTED
                    i += len(quote)
                elif _is_partial(buf, i, quote):
                    return i
                elif c in ",:{}[]<":
                    raise _SyntaxError(i)
                else:
                    self._pieces = []
                    self._arg_state = _KEY_BARE
            elif st == _COLON:
                if c != ":":
                    raise _SyntaxError(i)
                self._begin_member(self._key)
                i += 1
            elif st == _VALUE:
                if c == "]" and self._stack[-1] == "]":
                    i = self._close(i)
                    continue
                quoted = buf.startswith(quote, i)
                if not quoted and _is_partial(buf, i, quote):
                    return i
                if not quoted and (c == "," or c == "}") and self._stack[-1] == "}":
                    # `key:` with no value before `,` or `}`: an empty string, as the
                    # peers read it (vLLM's and Dynamo's test_empty_value).
                    self._stream_args('""')
                    self._arg_state = _AFTER_VALUE
                    continue
                if not quoted and c in ",:}]<":
                    raise _SyntaxError(i)
                bare_string_end = -1
                if not quoted and c != "{" and c != "[":
                    found = self._bare_string_end(buf, i, final)
                    if found is None:
                        return i  # not yet known which it is
                    bare_string_end = found
                if self._stack[-1] == "]":
                    stream(", " if self._counts[-1] else "")
                    self._counts[-1] += 1
                if quoted:
                    self._begin_string()
                    i += len(quote)
                elif c == "{" or c == "[":
                    stream(c)
                    self._stack.append("}" if c == "{" else "]")
                    self._counts.append(0)
                    self._arg_state = _KEY if c == "{" else _VALUE
                    i += 1
                elif bare_string_end >= 0:  # a string whose opening delimiter the model left out
                    self._begin_string()
                    self._string_text(buf[i:bare_string_end])
                    self._end_string()
                    i = bare_string_end + len(quote)
                else:
                    self._pieces = []
                    self._arg_state = _SCALAR_VALUE
            elif st == _AFTER_VALUE:
                if c == ",":
                    self._arg_state = _KEY if self._stack[-1] == "}" else _VALUE
                    i += 1
                elif c == self._stack[-1]:
                    i = self._close(i)
                    if self._arg_state == _DONE:
                        return i
                else:
                    raise _SyntaxError(i)
        return n

    def _bare_string_end(self, buf: str, i: int, final: bool) -> int | None:
        """Gemma 4 sometimes leaves out a string's opening delimiter and writes only
        the closing one (`query:weather in Tokyo<|"|>`). A bare value that runs to a
        delimiter with no `:`, bracket or other tag on the way, and not to a comma
        just before it, is such a string:
        where that delimiter starts (-1: a bare value; None: more input decides)."""
        j = _BARE_RUN(buf, i).end()
        if j == len(buf) or _is_partial(buf, j, self.quote):
            if final or j - i > _MAX_BARE_STRING:
                return -1
            return None
        if not buf.startswith(self.quote, j) or buf[i:j].rstrip().endswith(","):
            return -1  # (after a comma the delimiter opens the next value)
        return j

    def _begin_member(self, key: str) -> None:
        self._stream_args((", " if self._counts[-1] else "") + dumps(key) + ": ")
        self._counts[-1] += 1
        self._key = key
        self._arg_state = _VALUE

    def _top_level_types(self) -> tuple[str, ...]:
        """The schema types of the member being read, if it is a top-level one."""
        return parameter_types(self._spec, self._key) if len(self._stack) == 1 else ()

    def _begin_string(self) -> None:
        types = self._top_level_types()
        if types and "string" not in types:
            self._held_types = types
            self._pieces = []
        else:
            self._held_types = None
            self._stream_args('"')
        self._arg_state = _STRING

    def _string_text(self, text: str) -> None:
        if self._held_types is not None:
            self._pieces.append(text)
        else:
            self._stream_args(encode_basestring(text)[1:-1])

    def _end_string(self) -> None:
        if self._held_types is not None:
            self._stream_args(dumps(coerce_value("".join(self._pieces), self._held_types)))
            self._held_types = None
        else:
            self._stream_args('"')
        self._arg_state = _AFTER_VALUE

    def _end_scalar(self, at: int) -> None:
        text = "".join(self._pieces)
        if not text:
            raise _SyntaxError(at)
        types = self._top_level_types()
        self._stream_args(_scalar_json(text, types == ("string",)))
        self._arg_state = _AFTER_VALUE

    def _close(self, i: int) -> int:
        closer = self._stack.pop()
        self._counts.pop()
        self._stream_args(closer)
        self._arg_state = _AFTER_VALUE if self._stack else _DONE
        return i + 1

    # ---- after the arguments -------------------------------------------------------

    def _after_arguments(self, buf: str, pos: int, final: bool) -> int:
        space = _WHITESPACE(buf, pos).end()
        closer = self.call_close
        if buf.startswith(closer, space):
            self._close_call(buf[pos : space + len(closer)])
            self._exit_region()
            return space + len(closer)
        if space == len(buf) or _is_partial(buf, space, closer):
            if not final:
                return -1
            self._close_call(buf[pos:])  # the arguments closed; only `<tool_call|>` is missing
            self._exit_region()
            return len(buf)
        # The model went on without the closing marker: the call stands.
        self._close_call()
        self._exit_region()
        return pos

    def _broken(self, buf: str, pos: int, final: bool) -> int:
        """The rest of a call whose arguments broke belongs to it, up to its closing
        marker (or the next call's opening one)."""
        opener, closer = self.call_open, self.call_close
        close = buf.find(closer, pos)
        reopen = buf.find(opener, pos)
        if reopen >= 0 and (close < 0 or reopen < close):
            self._fail_call("invalid_arguments", buf[pos:reopen])
            self._exit_region()
            return reopen
        if close >= 0:
            self._fail_call("invalid_arguments", buf[pos : close + len(closer)])
            self._exit_region()
            return close + len(closer)
        end = (
            len(buf) if final else len(buf) - max(_partial_suffix(buf, pos, closer), _partial_suffix(buf, pos, opener))
        )
        self._raw(buf[pos:end])
        if final:
            self._fail_call("invalid_arguments")
            self._exit_region()
        return end if end > pos else -1
