"""`InvokeToolParser`: the shared engine for the `<block><invoke name=..><parameter
name=..>` shape of DeepSeek's DSML (deepseek_v3_2, deepseek_v4), minimax_m2, dots, step3 and
GigaChat 3.5, each with its own tags (`InvokeSyntax`; their rows are in formats.py).

A block holds one or more invokes. A parameter's `string="true"` marks a string
(streamed as it arrives); `string="false"` a JSON value, typed by the tool's
schema; no hint defers to the schema. Also accepted: a JSON object as the whole
invoke body, and (where the syntax allows) a bare invoke with no outer block or a
JSON call object as the whole block body. A value ends only at its own closing tag,
and only where the call's next tag (or the end of the output) follows it: a
closing tag inside the value is its text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ...events import ParseEvent, TextDelta
from ..json_stream import JsonStreamError, JsonValueScanner
from ..markers import MarkerSet
from .base import FormatConfig, JsonCallReader, ToolParser, is_function_name
from .token_section import skip_whitespace
from .xml_args import ArgumentsBuilder, take_value_text

# The attribute text of a tag: the name (quoted or bare) first, then the rest.
_NAME_ATTRIBUTE = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))(.*)\Z""", re.DOTALL)
# What may follow the name: more `key=value` attributes, nothing else.
_MORE_ATTRIBUTES = re.compile(r"""(?:\s+[\w:-]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))*\s*\Z""")
_STRING_ATTRIBUTE = re.compile(r"""\bstring\s*=\s*["']?(true|false)\b""", re.IGNORECASE)
# How long an opening tag's attributes may grow before it is not a tag after all.
_MAX_ATTRIBUTES = 256


class InvokeSyntax:
    """The tags of one `<block><invoke><parameter>` format, and what is derived
    from them once per format."""

    def __init__(
        self,
        block: str,
        invoke: str,
        parameter: str,
        *,
        strip_newline: bool,
        bare_invoke_starts_call: bool,
        block_json: bool = False,
        block_tags: tuple[str, str] | None = None,
        call_wrapper: tuple[str, str] = ("", ""),
        call_separator: str = "",
    ):
        # `block`/`invoke`/`parameter`: the text between `<` (or `</`) and `>`
        # for the block, and up to the `name=` attribute for the others.
        # `block_tags`: the block's own (open, close) where they are not
        # `<block>`/`</block>` (Step 3's special tokens); `call_wrapper`: text
        # around each invoke inside the block (Step 3's per-call tokens; a short
        # preamble may sit between the opener and the invoke); `call_separator`:
        # syntax a model may put between two wrapped calls.
        self.block_open, self.block_close = block_tags or (f"<{block}>", f"</{block}>")
        self.call_open, self.call_close = call_wrapper
        self.call_separator = call_separator
        self.invoke_open = f"<{invoke} name="
        self.invoke_close = f"</{invoke}>"
        self.parameter_open = f"<{parameter} name="
        self.parameter_close = f"</{parameter}>"
        self.strip_newline = strip_newline
        # A `{"name": ..., "arguments": {...}}` object may stand in for the invokes (dots).
        self.block_json = block_json
        self.start_markers = (self.block_open, self.invoke_open) if bare_invoke_starts_call else (self.block_open,)
        self.invoke_head = re.compile(re.escape(self.invoke_open) + rf"([^>\n]{{1,{_MAX_ATTRIBUTES}}})>")
        self.parameter_head = re.compile(re.escape(self.parameter_open) + rf"([^>\n]{{1,{_MAX_ATTRIBUTES}}})>")
        ends_call = [self.invoke_close, self.block_close, self.invoke_open, *filter(None, [self.call_close])]
        self.body_markers = MarkerSet([self.parameter_open, *ends_call])
        self.after_json_markers = MarkerSet(ends_call)
        # A value ends only at its own closing tag: any other tag inside it (an XML
        # file's content, a quoted DSML example) is the value's text.
        self.value_markers = MarkerSet([self.parameter_close])
        # Value text with none of these characters neither begins the closing tag nor
        # needs escaping in JSON: it streams as it is.
        self.plain_value = re.compile("[" + re.escape(self.parameter_close[0]) + r'"\\\x00-\x1f]').search


def _tag_name(attributes: str) -> tuple[str, str]:
    """(name, the attributes after it) of a tag's attribute text; the name is ""
    when the text is not a name and attributes (`name=get weather`)."""
    match = _NAME_ATTRIBUTE.match(attributes)
    if match is None or _MORE_ATTRIBUTES.match(match.group(4)) is None:
        return "", ""
    name = next(g for g in match.groups()[:3] if g is not None)
    return name.strip(), match.group(4)


def _could_be_head(buf: str, pos: int, literal: str) -> bool:
    """Whether `buf[pos:]` may still grow into `literal` plus attributes and `>`."""
    rest = buf[pos : pos + len(literal) + _MAX_ATTRIBUTES + 1]
    if len(rest) <= len(literal):
        return literal.startswith(rest)
    tail = rest[len(literal) :]
    return rest.startswith(literal) and len(tail) <= _MAX_ATTRIBUTES and ">" not in tail and "\n" not in tail


def _partial(buf: str, pos: int, literal: str) -> bool:
    """Whether `buf[pos:]` is a proper prefix of `literal`."""
    rest = buf[pos : pos + len(literal)]
    return len(rest) < len(literal) and literal.startswith(rest)


# States (HEAD and VALUE are public: variants that read a value or a header their
# own way step into them).
HEAD, _BODY, VALUE, _JSON, _AFTER_JSON, _BROKEN, _AFTER_CALL, _BLOCK_JSON = range(8)


@dataclass(frozen=True, kw_only=True)
class InvokeConfig(FormatConfig):
    """An `<block><invoke name=..><parameter name=..>` format: its tags (`syntax`)
    and the markers that begin it (usually `syntax.start_markers`)."""

    syntax: InvokeSyntax
    start_markers: tuple[str, ...]


class InvokeToolParser(ToolParser):
    """The engine for `<block><invoke name=..><parameter name=..>..</..>` formats
    (see the module docstring), configured by an `InvokeConfig`."""

    config: ClassVar[InvokeConfig]
    syntax: ClassVar[InvokeSyntax]
    _state = HEAD
    # The value fast path in `feed` stands for the engine's own `_value` step; a
    # subclass that reads values its own way (MiniCPM 5's CDATA) goes without it.
    _value_fast_path: ClassVar[bool] = True
    # The first character of the parameter's closing tag: value text without it
    # can not end the value.
    _tag_start: ClassVar[str]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._value_fast_path = cls._steps[VALUE] is InvokeToolParser._steps[VALUE]
        if hasattr(cls, "syntax"):
            cls._tag_start = cls.syntax.parameter_close[0]

    def feed(self, text: str) -> list[ParseEvent]:
        if not self._in_region:
            starts = self._starts
            if not self._buf and self._quotes is None and (starts.lead not in text or starts.trigger(text) is None):
                return [TextDelta(text)] if text else []  # prose: the base class's idle path, inlined
        elif self._state == VALUE and not self._buf and text and self._value_fast_path:
            call, arguments = self._call, self._arguments
            if call is not None and arguments is not None:
                syntax = self.syntax
                events = take_value_text(self, call, arguments, text, syntax.plain_value, syntax.value_markers)
                if events is not None:
                    return events
        return ToolParser.feed(self, text)

    def take_string_text(self, text: str) -> list[ParseEvent] | None:
        # Value text in which the closing tag can not begin: the value fast path of
        # `feed`, offered first by the reasoning parser (`take_string_text_first`).
        if self._state == VALUE and not self._buf and text and self._value_fast_path and self._tag_start not in text:
            call, arguments = self._call, self._arguments
            if call is not None and arguments is not None:
                syntax = self.syntax
                return take_value_text(self, call, arguments, text, syntax.plain_value, syntax.value_markers)
        return None

    def take_string_text_first(self, markers: tuple[str, ...]) -> bool:
        # A value may hold a marker as its text, but text it takes has no
        # `_tag_start`: where every marker begins with it, none can begin there.
        return self._value_fast_path and all(marker.startswith(self._tag_start) for marker in markers)

    def _stray_end(self, buf: str, at: int, marker: str, final: bool) -> int | None:
        # A tag that begins with the format's special token but is no tag of it (a
        # damaged block opener, `<｜DSML｜toolcalls>`): syntax up to its `>` or the
        # end of its line, never content.
        close = buf.find(">", at, at + _MAX_ATTRIBUTES)
        newline = buf.find("\n", at, at + _MAX_ATTRIBUTES)
        if close >= 0 and (newline < 0 or close < newline):
            return close + 1
        if newline >= 0:
            return newline
        if final or len(buf) - at >= _MAX_ATTRIBUTES:
            return min(len(buf), at + _MAX_ATTRIBUTES)
        return None

    def _enter_region(self, marker: str) -> None:
        self._state = HEAD
        self._in_block = marker == self.syntax.block_open
        self._first = True  # no invoke of this region announced yet
        self._arguments: ArgumentsBuilder | None = None
        self._body_started = False
        self._scanner: JsonValueScanner | None = None
        self._reader: JsonCallReader | None = None

    def _parse_region(self, buf: str, final: bool) -> int:
        pos = 0
        steps = self._steps
        while self._in_region and (pos < len(buf) or final):
            state = self._state
            nxt = steps[state](self, buf, pos, final)
            if nxt < 0 or (nxt == pos and state == self._state):
                break
            pos = nxt
        return pos

    # ---- states: each takes (buf, pos, final), returns the new position or -1
    # ---- for "need more input". At `final` with nothing left each must exit.

    def _head(self, buf: str, pos: int, final: bool) -> int:
        syntax = self.syntax
        if pos == len(buf):  # only at the end of the output
            self._exit_region()
            return pos
        at = pos
        if self._first and self._in_block:
            # The block tag and the whitespace after it stay in the buffer until
            # an invoke decides whether this is a call at all.
            at = skip_whitespace(buf, pos + len(syntax.block_open))
        if self._first and self._in_block and syntax.block_json and buf.startswith("{", at):
            # The block holds a JSON call object instead of invokes.
            self._reader = JsonCallReader(self, buf[pos:at])
            self._state = _BLOCK_JSON
            return at
        if syntax.call_open and self._in_block:
            if buf.startswith(syntax.call_open, at):
                # What stands between the call token and the invoke (Step 3:
                # `function<｜tool_sep｜>NAME\n`, or nothing) is syntax.
                after = at + len(syntax.call_open)
                found = buf.find(syntax.invoke_open, after, after + _MAX_ATTRIBUTES + len(syntax.invoke_open))
                if found >= 0:
                    at = found
                elif not final and len(buf) - after < _MAX_ATTRIBUTES:
                    return -1
                else:
                    at = after
            elif not final and _partial(buf, at, syntax.call_open):
                return -1
        head = syntax.invoke_head.match(buf, at)
        if head is not None:
            attributes = head.group(1)
            self_closing = attributes.endswith("/")  # `<invoke name="submit"/>`: no parameters
            name, _ = _tag_name(attributes[:-1] if self_closing else attributes)
            if is_function_name(name):
                name = self._declared_name(name)
                self._marker(buf[pos:at])
                self._open_call(name, head.group())
                self._first = False
                if self_closing:
                    self._close_call()
                    self._state = _AFTER_CALL
                    return head.end()
                self._arguments = self._new_arguments(name)
                self._body_started = False
                self._parameter_names: set[str] = set()
                self._state = _BODY
                return head.end()
        elif not final and _could_be_head(buf, at, syntax.invoke_open):
            return -1
        # Not a call: what was read is text (at least one character, so the scan
        # moves past the start marker).
        end = at if at > pos else pos + 1
        if self._in_block and self.syntax.block_close in self._strays:
            # A format whose closing tag is syntax even with no block open (dots):
            # its opening tag is too, around text that is no call.
            self._marker(buf[pos:end])
        else:
            self._text(buf[pos:end])
        self._exit_region()
        return end

    @property
    def in_call_region(self) -> bool:
        # Between bare invokes (no block open) nothing is held for a call: a
        # reasoning marker there is the model moving on.
        return self._in_region and (self._in_block or self._state != _AFTER_CALL)

    def release_held(self) -> list[ParseEvent]:
        if self._in_region and not self._in_block and self._state == _AFTER_CALL:
            self._exit_region()
        return super().release_held()

    def _declared_name(self, name: str) -> str:
        """The tool a call's name means (a family that spells declared names its own
        way maps them back here); by default the name as written."""
        return name

    def _new_arguments(self, name: str) -> ArgumentsBuilder:
        return ArgumentsBuilder(self, self._tool(name), strip_newline=self.syntax.strip_newline)

    def _body(self, buf: str, pos: int, final: bool) -> int:
        syntax = self.syntax
        space = skip_whitespace(buf, pos)
        if space > pos:
            self._raw(buf[pos:space])
            return space
        if pos < len(buf) and not self._body_started:
            # The body's first non-space character decides: a JSON object, or tags.
            self._body_started = True
            if buf[pos] == "{":
                self._scanner = JsonValueScanner()
                self._state = _JSON
                return pos
        match = syntax.body_markers.find(buf, pos)
        if match is None:
            end = len(buf) if final else len(buf) - syntax.body_markers.held_suffix(buf, pos)
            if not final and buf[pos:end].strip():
                return self._stray_text(pos)
            self._raw(buf[pos:end])  # at the end of output: the truncated call's raw
            if final:  # between parameters: every value so far closed
                assert self._arguments is not None
                self._arguments.close()
                self._close_at_end_of_output()
                self._exit_region()
            return end if end > pos else -1
        at = match.start()
        if buf[pos:at].strip():
            return self._stray_text(pos)
        marker = match.group()
        if marker == syntax.parameter_open:
            head = syntax.parameter_head.match(buf, at)
            if head is None:
                if not final and _could_be_head(buf, at, syntax.parameter_open):
                    return at if at > pos else -1
                self._raw(marker)  # a malformed tag: raw, not a parameter
                return match.end()
            name, rest = _tag_name(head.group(1))
            if not name or name in self._parameter_names:
                # A parameter tag with no name, or a parameter given twice: which
                # value the model meant is unknown, so the call is not dispatched.
                self._state = _BROKEN
                return at
            self._parameter_names.add(name)
            hint = _STRING_ATTRIBUTE.search(rest)
            self._raw(head.group())
            assert self._arguments is not None
            self._arguments.begin(name, None if hint is None else hint.group(1).lower() == "true")
            self._state = VALUE
            return head.end()
        assert self._arguments is not None
        self._arguments.close()
        return self._end_call(buf, at, match.end(), marker)

    def _stray_text(self, pos: int) -> int:
        """Text between parameters that is no parameter (`<param>x</param>` with no
        name): the call's syntax broke, so it is not dispatched."""
        self._state = _BROKEN
        return pos

    def _end_call(self, buf: str, at: int, end: int, marker: str, reason: str | None = None) -> int:
        """A marker that ends the open call was found at `at`: the call is ready
        (`reason` None) or failed."""
        syntax = self.syntax
        raw = marker if marker == syntax.invoke_close else ""
        if reason is None:
            self._close_call(raw)
        else:
            self._fail_call(reason, raw)
        if raw:
            self._state = _AFTER_CALL
            return end
        if marker == syntax.call_close:  # the invoke's own closing tag was left out
            self._state = _AFTER_CALL
            return at
        if marker == syntax.block_close:
            self._marker(marker)
            self._exit_region()
            return end
        self._state = HEAD  # the next invoke began without this one's closing tag
        return at

    def _value(self, buf: str, pos: int, final: bool) -> int:
        markers = self.syntax.value_markers
        arguments = self._arguments
        assert arguments is not None
        match = markers.find(buf, pos)
        if match is None:
            end = len(buf) if final else len(buf) - markers.held_suffix(buf, pos)
            self._raw(buf[pos:end])
            arguments.text(buf[pos:end])
            if final:
                self._fail_call("truncated")
                self._exit_region()
            return end if end > pos else -1
        at = match.start()
        closes = self._closes_value(buf, match.end(), final)
        if not closes:
            # Undecided (None: wait for what follows), or a closing tag the value
            # itself holds (False: a file about the format), which is its text.
            end = at if closes is None else match.end()
            self._raw(buf[pos:end])
            arguments.text(buf[pos:end])
            return end if end > pos else -1
        self._raw(buf[pos:at])
        arguments.text(buf[pos:at])
        arguments.end()
        self._state = _BODY
        self._raw(match.group())
        return match.end()

    def _closes_value(self, buf: str, i: int, final: bool) -> bool | None:
        """Whether the parameter closing tag that ends at `i` ends the value: it does
        when the next tag of the call (another parameter, the invoke's or the block's
        end) or the end of the output follows it; None while that is unknown."""
        syntax = self.syntax
        j = skip_whitespace(buf, i)
        if j == len(buf):
            return True if final else None
        for tag in (syntax.parameter_open, syntax.invoke_close, syntax.block_close):
            if buf.startswith(tag, j):
                return True
            if not final and _partial(buf, j, tag):
                return None
        return False

    def _json(self, buf: str, pos: int, final: bool) -> int:
        scanner = self._scanner
        assert scanner is not None
        try:
            out, end = scanner.feed(buf[pos:])
        except JsonStreamError as error:
            self._stream_args(error.valid)
            # The offending character is left for `_BROKEN`: it may begin the
            # closing tag.
            self._raw(buf[pos : pos + error.offset])
            self._state = _BROKEN
            return pos + error.offset
        self._stream_args(out)
        stop = len(buf) if end < 0 else pos + end
        self._raw(buf[pos:stop])
        if end >= 0:
            self._state = _AFTER_JSON
        elif final:
            self._fail_call("truncated")
            self._exit_region()
        return stop if stop > pos or end >= 0 else -1

    def _block_json(self, buf: str, pos: int, final: bool) -> int:
        reader = self._reader
        assert reader is not None
        end = self._read_object(reader, buf[pos:], final, closed=_AFTER_CALL, broken=_BROKEN, recover=True)
        self._first = self._first and self._state != _AFTER_CALL
        return pos + end

    def _after_json(self, buf: str, pos: int, final: bool) -> int:
        return self._skip_to_end(buf, pos, final, None)

    def _broken(self, buf: str, pos: int, final: bool) -> int:
        return self._skip_to_end(buf, pos, final, "invalid_arguments")

    def _skip_to_end(self, buf: str, pos: int, final: bool, reason: str | None) -> int:
        """The call's arguments are complete (`reason` None) or broke: everything up
        to the tag that ends the call is its raw."""
        markers = self.syntax.after_json_markers
        match = markers.find(buf, pos)
        if match is None:
            end = len(buf) if final else len(buf) - markers.held_suffix(buf, pos)
            self._raw(buf[pos:end])
            if final:
                if reason is None:  # the arguments' JSON closed: only the end tag is missing
                    self._close_call()
                else:
                    self._fail_call(reason)
                self._exit_region()
            return end if end > pos else -1
        self._raw(buf[pos : match.start()])
        return self._end_call(buf, match.start(), match.end(), match.group(), reason)

    def _after_call(self, buf: str, pos: int, final: bool) -> int:
        syntax = self.syntax
        space = skip_whitespace(buf, pos)
        if space > pos:
            self._marker(buf[pos:space])
            return space
        if buf.startswith(syntax.block_close, pos):
            self._marker(syntax.block_close)
            self._exit_region()
            return pos + len(syntax.block_close)
        for tag in (syntax.call_close, syntax.call_separator):
            if tag and buf.startswith(tag, pos):
                self._marker(tag)
                return pos + len(tag)
        if buf.startswith(syntax.invoke_open, pos) or (syntax.call_open and buf.startswith(syntax.call_open, pos)):
            self._state = HEAD
            return pos
        wrapper = (syntax.call_close, syntax.call_open, syntax.call_separator) if syntax.call_open else ()
        if not final and any(_partial(buf, pos, tag) for tag in (syntax.block_close, syntax.invoke_open, *wrapper)):
            return -1
        self._exit_region()  # the model went on without closing the block
        return pos

    _steps: ClassVar[dict[int, Callable[..., int]]] = {
        HEAD: _head,
        _BODY: _body,
        VALUE: _value,
        _JSON: _json,
        _AFTER_JSON: _after_json,
        _BROKEN: _broken,
        _AFTER_CALL: _after_call,
        _BLOCK_JSON: _block_json,
    }
