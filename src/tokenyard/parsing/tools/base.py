"""What every tool-call parser shares.

A `ToolParser` is fed the non-reasoning text of one response and returns ordered
events. The base class owns the text state (find a format's start markers, holding
back only a suffix that could still become one), event emission, call indices and
ids, and the bookkeeping that guarantees conservation: every character ends up in
a `TextDelta`, a `Marker`, or the `raw` of exactly one call.

A format subclass implements `_parse_region(buf, final) -> int`: it is called with
the buffer starting at a start marker (and then wherever it stopped consuming), and
returns how many characters it consumed. Returning 0 means "need more input"; with
`final=True` it must consume everything. It reports what it found through the
`_text`, `_marker`, `_open_call`, `_raw`, `_stream_args`, `_close_call`, `_fail_call` and
`_exit_region` helpers. A `StepParser` implements it as a table of steps, one per
state.

End of output, one policy for every format: a call is never dispatched when the
output ended inside its arguments (an open JSON value or string, a parameter value
without its closing tag); it is an `incomplete` call, reason `truncated`. A call
whose arguments were complete when the output ended, with only its own or its
section's closing marker missing (max_tokens or EOS right after the arguments),
is recovered: formats whose arguments are one JSON value recover it when that
value closed; formats that list parameters tag by tag (no closing brace of their
own) call `_close_at_end_of_output`, which recovers it only when every parameter
the declared tool requires is present, and, when the call passed no parameter at
all, only for a declared tool that takes none (a call cut right after its name
may have been about to pass them).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import ClassVar, NoReturn

from ...conversation import ToolSpec
from ...events import (
    Marker,
    ParseEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallIncomplete,
    ToolCallReady,
    ToolCallStart,
)
from ..json_stream import JsonStreamError, JsonValueScanner
from ..markers import MarkerSet
from .quoting import QuoteContext

# What a model may plausibly call a function: identifiers, MCP-style `a__b`, dotted
# and namespaced names, and whatever the APIs allow (`^[a-zA-Z0-9_-]{1,64}$`: a
# name may begin with a digit or `-`, as `2fa_verify` and `3d` do). Anything else
# (spaces, quotes, newlines) is not a call. Formats with a name regex of their own
# build it from this one.
FUNCTION_NAME = r"[\w\-][\w.\-:/]{0,255}"
_FUNCTION_NAME = re.compile(FUNCTION_NAME).fullmatch


# h11's `max_incomplete_event_size`, for model output: how many characters a parser
# may hold back undecided (a marker that may begin a call, a call header not yet read
# to its name) before the splitter releases them as text (splitter.py). 16 KiB, as
# h11's default: far above any call header, and a stalled client sees text again.
MAX_HELD_CHARS = 16 * 1024


def is_function_name(name: str) -> bool:
    return _FUNCTION_NAME(name) is not None


class CallIds:
    """Tool-call ids, unique within one response. A model's own ids (kimi's
    `functions.get_weather:0`) are kept unless they collide."""

    def __init__(self, prefix: str = "call_", nonce: str | None = None):
        self._prefix = prefix
        self._nonce = nonce if nonce is not None else secrets.token_hex(8)
        self._count = 0
        self._used: set[str] = set()

    def reserve(self, ids: Iterable[str]) -> None:
        """Ids already used earlier in the conversation: a model that repeats one
        (kimi restarting at `:0`) gets a fresh id, since clients need them unique."""
        self._used.update(ids)

    def new(self, model_id: str | None = None) -> str:
        if model_id and model_id not in self._used:
            self._used.add(model_id)
            return model_id
        while True:
            candidate = f"{self._prefix}{self._nonce}{self._count:02d}"
            self._count += 1
            if candidate not in self._used:
                self._used.add(candidate)
                return candidate


@dataclass(slots=True)
class OpenCall:
    index: int
    id: str
    name: str
    declared: bool
    raw: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FormatConfig:
    """What configures every grammar engine. An engine's own config (a frozen
    dataclass subclassing this one, documented field by field) names a format's
    markers and flags; a format the engine parses is a row of `formats.py`: a
    name, its aliases, the engine and a config. The fields become the parser
    class's attributes (`ToolParser.__init_subclass__`), so a plugin may set them
    directly as class attributes instead."""

    # Markers that, met inside reasoning, mean the model has started a call there
    # (a known failure shape): the reasoning ends and the call is parsed. Defaults
    # to `start_markers`.
    reasoning_exit_markers: tuple[str, ...] | None = None
    # Those markers end reasoning only at the start of a line (models of the format
    # quote their call syntax mid-sentence while they think).
    reasoning_exit_at_line_start: bool = False
    # Special tokens of the format (or a closing tag only the format writes) that, met
    # in text outside any call, start nothing: they are syntax that lost its context
    # and are reported as markers, never text.
    stray_markers: tuple[str, ...] = ()
    # Formats a model also writes when it explains them (DSML): a start marker in
    # code (a fence, an inline code span), or a stray one right after a quote mark,
    # is text, not a call (quoting.py).
    quote_aware: bool = False


class ToolParser:
    """Base class for tool-call parsers (see the module docstring)."""

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    # The format's config; its fields become class attributes (see FormatConfig).
    config: ClassVar[FormatConfig] = FormatConfig()
    # Markers that begin tool-call syntax in text (an engine's config names them,
    # or the engine derives them from its tags).
    start_markers: ClassVar[tuple[str, ...]] = ()
    reasoning_exit_markers: ClassVar[tuple[str, ...] | None] = None
    reasoning_exit_at_line_start: ClassVar[bool] = False
    stray_markers: ClassVar[tuple[str, ...]] = ()
    quote_aware: ClassVar[bool] = False
    # How much text the format may hold back undecided (splitter.py, MAX_HELD_CHARS).
    max_held: ClassVar[int] = MAX_HELD_CHARS
    # A call object opened with `{{` is the call object inside (Qwen2.5's template
    # shows the shape with doubled braces, and its models copy them), closed by `}}`
    # or by one brace before what follows the call.
    doubled_braces: ClassVar[bool] = False
    _state: int  # the engine's state machine

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "config" in vars(cls):  # a config of its own: its fields are the class's
            for f in fields(cls.config):
                setattr(cls, f.name, getattr(cls.config, f.name))

    def __init__(self, tools: Iterable[ToolSpec] | None = None, call_ids: CallIds | None = None):
        self.tools: dict[str, ToolSpec] | None = None if tools is None else {t.name: t for t in tools}
        self._ids = call_ids or CallIds()
        self._starts = MarkerSet((*self.start_markers, *self.stray_markers))
        self._strays = frozenset(self.stray_markers)
        self._quotes = QuoteContext() if self.quote_aware else None
        self._events: list[ParseEvent] = []
        self._buf = ""
        self._in_region = False
        self._next_index = 0
        self._call: OpenCall | None = None

    @classmethod
    def exit_markers(cls) -> tuple[str, ...]:
        return cls.start_markers if cls.reasoning_exit_markers is None else cls.reasoning_exit_markers

    # ---- the sans-IO interface -------------------------------------------------

    def feed(self, text: str) -> list[ParseEvent]:
        starts = self._starts
        if not self._in_region and not self._buf and (starts.lead not in text or starts.trigger(text) is None):
            if self._quotes is not None:
                self._quotes.note(text)
            return [TextDelta(text)] if text else []
        self._buf += text
        self._run(final=False)
        events, self._events = self._events, []
        return events

    def finish(self) -> list[ParseEvent]:
        self._run(final=True)
        if self._in_region:
            # Everything was consumed but the region is still open (a call or a
            # half-read header): let the format resolve it at end of input.
            self._parse_region("", True)
            if self._in_region:
                self._abandon_region()
        if self._call is not None:
            self._fail_call("truncated")
        if self._buf:  # a subclass left text unconsumed at the end: it is text
            self._text(self._buf)
            self._buf = ""
        events, self._events = self._events, []
        return events

    @property
    def in_call_region(self) -> bool:
        """Inside tool-call syntax: text here belongs to a call (or to deciding
        whether one starts)."""
        return self._in_region

    def take_string_text(self, text: str) -> list[ParseEvent] | None:
        """The hot path inside a long string argument: when all of `text` is plain
        text of the string being streamed (nothing in it can end the string, so no
        marker in it is syntax), consume it and return its events; otherwise None
        and nothing is consumed. Formats with such a path override this."""
        return None

    def take_string_text_first(self, markers: tuple[str, ...]) -> bool:
        """Whether a parser that looks for `markers` in the text (the reasoning
        parser) may offer it to `take_string_text` first: true where the string is
        JSON (no marker inside it is syntax); an engine whose string text may hold a
        marker as syntax says where it takes none."""
        return True

    def release_held(self) -> list[ParseEvent]:
        """Another parser found a marker right after the text fed so far: a held
        partial start marker can not complete any more, so it is text."""
        if self._in_region or not self._buf:
            return []
        return self._held_is_text()

    def _held_is_text(self) -> list[ParseEvent]:
        """What is held is text, and the region (if any) ends: the events so far."""
        self._text(self._buf)
        self._buf = ""
        self._exit_region()
        events, self._events = self._events, []
        return events

    def drop_held(self) -> None:
        """The splitter released what this parser held back (past `max_held`) as
        text: forget it, and read what follows as fresh text. Never called with a
        call open."""
        self._buf = ""
        if self._in_region:
            self._exit_region()

    # ---- the loop ----------------------------------------------------------------

    def _run(self, final: bool) -> None:
        while self._buf:
            if self._in_region:
                consumed = self._parse_region(self._buf, final)
                if consumed:
                    self._buf = self._buf[consumed:]
                elif not self._in_region:
                    pass
                elif not final:
                    return
                else:
                    # A subclass must consume everything at the end; if it can not,
                    # the rest is text rather than lost.
                    self._abandon_region()
                continue
            buf = self._buf
            match = self._starts.find(buf)
            if match is not None:
                at = match.start()
                if not final and self._starts.is_proper_prefix(buf[at:]):
                    # `<tool_call` of `<tool_calls>`: wait to see which marker it is.
                    if at:
                        self._text(buf[:at])
                    self._buf = buf[at:]
                    return
                if at:
                    self._text(buf[:at])
                marker = match.group()
                quotes = self._quotes
                if quotes is not None and (quotes.in_code or (marker in self._strays and quotes.after_quote_mark)):
                    self._text(marker)  # quoted syntax (an example) is text
                    self._buf = buf[match.end() :]
                    continue
                if marker in self._strays:
                    end = self._stray_end(buf, at, marker, final)
                    if end is None:  # wait to see how far the stray syntax runs
                        self._buf = buf[at:]
                        return
                    self._marker(buf[at:end])
                    self._buf = buf[end:]
                    continue
                self._buf = buf[at:]
                self._in_region = True
                self._enter_region(marker)
                continue
            held = 0 if final else self._starts.held_suffix(buf)
            if held:
                if held < len(buf):
                    self._text(buf[:-held])
                self._buf = buf[-held:]
            else:
                self._text(buf)
                self._buf = ""
            return

    def _abandon_region(self) -> None:
        if self._call is not None:
            self._raw(self._buf)
            self._fail_call("truncated")
        else:
            self._text(self._buf)
        self._buf = ""
        self._exit_region()

    # ---- hooks for subclasses ------------------------------------------------------

    def _enter_region(self, marker: str) -> None:
        """Called when a start marker is found; the buffer begins with it."""

    def _stray_end(self, buf: str, at: int, marker: str, final: bool) -> int | None:
        """Where the stray syntax that begins with `marker` at `at` ends (None: wait
        for more input); by default the marker alone."""
        return at + len(marker)

    def _parse_region(self, buf: str, final: bool) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- emission helpers ------------------------------------------------------------

    def _text(self, text: str) -> None:
        if text:
            if self._quotes is not None:
                self._quotes.note(text)
            self._events.append(TextDelta(text))

    def _marker(self, text: str) -> None:
        if text:
            self._events.append(Marker(text))

    def _exit_region(self) -> None:
        self._in_region = False

    def _open_call(self, name: str, raw: str = "", model_id: str | None = None) -> None:
        if self._call is not None:  # a format subclass bug must not lose the call
            self._fail_call("truncated")
        declared = self.tools is None or name in self.tools
        call = OpenCall(self._next_index, self._ids.new(model_id), name, declared)
        self._next_index += 1
        if raw:
            call.raw.append(raw)
        self._call = call
        self._events.append(ToolCallStart(call.index, call.id, name, declared))

    def _raw(self, text: str) -> None:
        if text and self._call is not None:
            self._call.raw.append(text)

    def _stream_args(self, fragment: str) -> None:
        call = self._call
        if fragment and call is not None:
            call.arguments.append(fragment)
            self._events.append(ToolCallDelta(call.index, fragment))

    def _close_call(self, raw: str = "") -> None:
        call = self._call
        if call is None:
            return
        self._raw(raw)
        if not call.arguments:
            self._stream_args("{}")
        self._call = None
        self._events.append(
            ToolCallReady(call.index, call.id, call.name, "".join(call.arguments), "".join(call.raw), call.declared)
        )

    def _fail_through(
        self, buf: str, i: int, final: bool, ends: MarkerSet, closes: tuple[str, ...], then: int | None = None
    ) -> int | None:
        """After a call's syntax broke, the rest of it from `i` belongs to the failed
        call (its raw), never to the text: up to and including the first of `ends`
        if it is one of the call's closing tags `closes`, else up to it (the next
        call's opening, read next). Then the state is `then`, or (None) the region
        ends, as it does at the end of output. Returns the new position, or None to
        wait for more input."""
        match = ends.find(buf, i)
        if match is None:
            end = len(buf) if final else len(buf) - ends.held_suffix(buf, i)
            self._raw(buf[i:end])
            if final:
                self._fail_call("invalid_arguments")
                self._exit_region()
            return end if end > i or final else None
        end = match.end() if match.group() in closes else match.start()
        self._fail_call("invalid_arguments", buf[i:end])
        if then is None:
            self._exit_region()
        else:
            self._state = then
        return end

    def _feed_object(self, reader: JsonCallReader, text: str, broken: int | None) -> tuple[int, bool]:
        """Feed a JSON call object's reader `text`: (where the object closed in `text`,
        -1 where it took all of it; False), or (how much it read; True) where the
        reading stopped. Text that was no call goes back as text (`_no_call`); a
        broken call's rest belongs to it (the state becomes `broken`; None: the call
        fails here and the region ends)."""
        try:
            return reader.feed(text), False
        except NotACall as error:
            self._no_call(reader)
            return error.consumed, True
        except BadCallSyntax as error:
            if broken is None:
                self._fail_call("invalid_arguments")
                self._exit_region()
            else:
                self._state = broken
            return error.consumed, True

    def _read_object(
        self, reader: JsonCallReader, text: str, final: bool, *, closed: int, broken: int | None, recover: bool = False
    ) -> int:
        """`_feed_object`, for a call that ends with its object: returns how much of
        `text` was read. Where the object closed, the call is ready and the state
        becomes `closed`; where the output ended inside it, the cut call is settled
        (`_json_call_cut`, `recover` is its `recover_complete`)."""
        end, stopped = self._feed_object(reader, text, broken)
        if stopped:
            return end
        if end >= 0:
            self._close_call()
            self._state = closed
            return end
        if final:
            self._json_call_cut(reader, recover_complete=recover)
        return len(text)

    def _no_call(self, reader: JsonCallReader) -> None:
        """What a call object's reader read is no call: it is text, and the region ends."""
        self._text("".join(reader.pre_raw))
        self._exit_region()

    def _json_call_cut(self, reader: JsonCallReader, held: str = "", *, recover_complete: bool = False) -> None:
        """The output ended inside a JSON call object: a call already announced fails as
        cut, and what was read before any call began (`held`, then the reader's) is text.
        With `recover_complete` (list formats, whose peers recover it), a call whose
        arguments closed and only the object's own brace is missing is recovered; hermes
        blocks and the others keep vLLM's reading of that as broken JSON."""
        if reader.object_complete or (recover_complete and reader.arguments_complete):
            self._close_call()
        elif reader.started:
            self._fail_call("truncated")
        else:
            self._text(held + "".join(reader.pre_raw))
        self._exit_region()

    def _fail_call(self, reason: str, raw: str = "") -> None:
        call = self._call
        if call is None:
            return
        self._raw(raw)
        self._call = None
        self._events.append(
            ToolCallIncomplete(
                call.index,
                call.id,
                call.name,
                "".join(call.arguments),
                "".join(call.raw),
                reason,  # type: ignore[arg-type]  # formats pass "truncated" or "invalid_arguments"
                call.declared,
            )
        )

    def _close_at_end_of_output(self, raw: str = "") -> None:
        """The output ended after the open call's last parameter closed, before the
        call's closing marker: dispatch it if its arguments hold every parameter the
        tool requires, else it is truncated (see the module docstring)."""
        call = self._call
        if call is None:
            return
        try:
            value = json.loads("".join(call.arguments) or "{}")
        except ValueError:
            self._fail_call("truncated", raw)
            return
        spec = self._tool(call.name)
        schema = (spec.parameters or {}) if spec is not None else {}
        required = schema.get("required", [])
        takes_none = spec is not None and not schema.get("properties")
        if isinstance(value, dict) and all(key in value for key in required) and (value or takes_none):
            self._close_call(raw)
        else:
            self._fail_call("truncated", raw)

    @property
    def _call_open(self) -> bool:
        return self._call is not None

    def _accepts_call_name(self, name: str) -> bool:
        """Whether a call to `name` may begin here. Formats whose start is only weakly
        marked (bare JSON, a bare `[`) refuse names the request did not declare, so
        prose that looks like a call stays prose."""
        return True

    def _tool(self, name: str) -> ToolSpec | None:
        return None if self.tools is None else self.tools.get(name)


class StepParser(ToolParser):
    """An engine whose state machine is a table: `_STEPS[state](self, buf, i, final)`
    reads `buf` from `i` and returns the new position, or None to wait for more
    input. With nothing left to read, every step waits (unless `final`)."""

    _STEPS: ClassVar[dict[int, Callable[..., int | None]]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # The table names methods: a subclass's override of a step is its step.
        cls._STEPS = {state: getattr(cls, step.__name__) for state, step in cls._STEPS.items()}

    def _parse_region(self, buf: str, final: bool) -> int:
        i = 0
        n = len(buf)
        while self._in_region and (i < n or final):
            step = self._STEPS[self._state](self, buf, i, final)
            if step is None:  # needs more input
                return i
            i = step
        return i


class NotACall(Exception):
    """The text after a start marker is not a tool call; `consumed` characters of the
    chunk that raised were read before that became clear."""

    def __init__(self, consumed: int):
        super().__init__(consumed)
        self.consumed = consumed


class BadCallSyntax(Exception):
    """A started call's syntax broke; `consumed` characters of the chunk were read."""

    def __init__(self, consumed: int, error: Exception | None = None):
        super().__init__(consumed, error)
        self.consumed = consumed


# Reader states.
_OPEN, _KEY_OR_CLOSE, _KEY, _KEY_STRING, _COLON, _VALUE_START, _VALUE, _AFTER, _DOUBLE_CLOSE = range(9)
_NAME_KEYS = frozenset(("name",))
_ARGUMENT_KEYS = frozenset(("arguments", "parameters"))


class JsonCallReader:
    """Streams one `{"name": ..., "arguments": {...}}` object (the JSON call shape
    of hermes, nemotron_deci, jamba, mistral, phi4, llama3_json...).

    The call is announced as soon as the name has been read; its arguments stream
    as validated JSON fragments. Arguments that arrive before the name are held
    until the name is known. Feed it text; `feed` returns the index just past the
    object's closing brace, or -1 when it consumed everything. It raises `NotACall`
    if the structure breaks before the call was announced (the owner turns the
    held text into text) and `BadCallSyntax` after (the owner fails the call).
    """

    # The keys that hold a call's name and its arguments (a format may name them
    # otherwise: Cohere's `tool_name`).
    name_keys: ClassVar[frozenset[str]] = _NAME_KEYS
    argument_keys: ClassVar[frozenset[str]] = _ARGUMENT_KEYS
    # Keys that hold the model's own id for the call, read where they come before
    # the name (Cohere's `tool_call_id`); `CallIds` keeps it unless it collides.
    id_keys: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, owner: ToolParser, raw_prefix: str = ""):
        self._owner = owner
        self._state = _OPEN
        self._scanner: JsonValueScanner | None = None
        self._value_out: list[str] = []
        self._key = ""
        self._pending_args: list[str] = []
        self._args_seen = False
        # Arguments the model wrote as a JSON string are held until the string
        # ends: only then can it be told whether it serializes an object.
        self._args_held = False
        # The arguments value's scanner while that value streams as it arrives: the
        # owner's hot path hands it plain string text directly (JsonValueScanner.take_plain).
        self.streaming_scanner: JsonValueScanner | None = None
        self._model_id: str | None = None
        self.started = False
        self.pre_raw: list[str] = [raw_prefix] if raw_prefix else []
        # The object opened with `{{` (`ToolParser.doubled_braces`): it must close with `}}`.
        self._doubled = False

    def feed(self, text: str) -> int:
        owner = self._owner
        i, n = 0, len(text)
        segment = 0  # start of the raw not yet attributed
        try:
            while i < n:
                st = self._state
                if st == _KEY_STRING or st == _VALUE:
                    scanner = self._scanner
                    assert scanner is not None
                    out, end = scanner.feed(text[i:] if i else text)
                    is_args = st == _VALUE and self._key in self.argument_keys and not self._args_seen
                    if is_args and self.started and not self._args_held:
                        owner._stream_args(out)
                    elif is_args or st == _KEY_STRING or self._key in self.name_keys or self._key in self.id_keys:
                        self._value_out.append(out)
                    if end < 0:
                        i = n
                        break
                    i += end
                    if st == _KEY_STRING:
                        self._key = json_string("".join(self._value_out)) or ""
                        self._value_out = []
                        self._state = _COLON
                        continue
                    # A value ended.
                    self._state = _AFTER
                    self.streaming_scanner = None
                    if is_args:
                        self._args_seen = True
                        if self._args_held:
                            self._value_out = [_unserialized("".join(self._value_out))]
                            if self.started:
                                owner._stream_args(self._value_out[0])
                                self._value_out = []
                        if not self.started:
                            self._pending_args = self._value_out
                            self._value_out = []
                    elif self._key in self.name_keys and not self.started:
                        name = json_string("".join(self._value_out))
                        self._value_out = []
                        if name is None or not is_function_name(name) or not owner._accepts_call_name(name):
                            raise NotACall(i)
                        self.pre_raw.append(text[segment:i])
                        segment = i
                        owner._open_call(name, "".join(self.pre_raw), self._model_id)
                        self.pre_raw = []
                        self.started = True
                        for fragment in self._pending_args:
                            owner._stream_args(fragment)
                        self._pending_args = []
                    elif self._key in self.id_keys and not self.started:
                        self._model_id = json_string("".join(self._value_out)) or None
                        self._value_out = []
                    else:
                        self._value_out = []
                    continue
                c = text[i]
                if c in " \t\r\n":
                    i += 1
                    continue
                if st == _OPEN:
                    if c != "{":
                        raise NotACall(i)
                    self._state = _KEY_OR_CLOSE
                elif st == _KEY_OR_CLOSE or st == _KEY:
                    if c == '"':
                        self._scanner = JsonValueScanner()
                        self._state = _KEY_STRING
                        continue  # the scanner reads the opening quote
                    if c == "}" and st == _KEY_OR_CLOSE:
                        return self._object_closed(text, segment, i + 1)
                    if c == "{" and st == _KEY_OR_CLOSE and not self._doubled and owner.doubled_braces:
                        self._doubled = True
                        i += 1
                        continue
                    raise NotACall(i) if not self.started else BadCallSyntax(i)
                elif st == _COLON:
                    if c != ":":
                        raise NotACall(i) if not self.started else BadCallSyntax(i)
                    self._state = _VALUE_START
                elif st == _VALUE_START:
                    is_args = self._key in self.argument_keys and not self._args_seen
                    self._args_held = is_args and c == '"'
                    self._scanner = JsonValueScanner()
                    self.streaming_scanner = self._scanner if is_args and self.started and c != '"' else None
                    self._state = _VALUE
                    continue
                elif st == _AFTER:
                    if c == ",":
                        self._state = _KEY
                    elif c == "}" and self._doubled:
                        self._state = _DOUBLE_CLOSE
                    elif c == "}":
                        return self._object_closed(text, segment, i + 1)
                    else:
                        raise NotACall(i) if not self.started else BadCallSyntax(i)
                elif st == _DOUBLE_CLOSE:
                    # The second brace, or (as the model also writes it) what follows the
                    # call; more JSON there means the outer braces hold more than the call.
                    if c in ',:"{[':
                        raise NotACall(i) if not self.started else BadCallSyntax(i)
                    return self._object_closed(text, segment, i + 1 if c == "}" else i)
                i += 1
        except JsonStreamError as error:
            if (
                self.started
                and self._state == _VALUE
                and self._key in self.argument_keys
                and not self._args_seen
                and not self._args_held
            ):
                owner._stream_args(error.valid)
            raise self._broken(error, text, segment, i) from error
        except (NotACall, BadCallSyntax) as error:
            self._pass_on(error, text, segment)
        return self._read_all(text, segment)

    @property
    def arguments_complete(self) -> bool:
        """The call's arguments closed; at most the object's own brace is missing
        (a call the end-of-output policy recovers)."""
        return self.started and self._args_seen and self._state == _AFTER

    @property
    def object_complete(self) -> bool:
        """A call in doubled braces whose call object closed: only its second brace
        may be missing."""
        return self.started and self._state == _DOUBLE_CLOSE

    # How a reader's `feed` ends (a format's own reader shares them): `text[segment:]`
    # is the raw not yet attributed.

    def _read_all(self, text: str, segment: int) -> int:
        """The chunk ended inside the object: the rest of it is the object's."""
        self._attribute(text[segment:])
        return -1

    def _broken(self, error: JsonStreamError, text: str, segment: int, at: int) -> NotACall | BadCallSyntax:
        """The JSON broke at `text[at]`: the raw up to there is the object's. Before
        the name was read it was no call; after, a broken one."""
        consumed = min(len(text), at + error.offset + 1)
        self._attribute(text[segment:consumed])
        return BadCallSyntax(consumed, error) if self.started else NotACall(consumed)

    def _pass_on(self, error: NotACall | BadCallSyntax, text: str, segment: int) -> NoReturn:
        """The object's structure broke: the raw up to where it did is the object's."""
        error.consumed = min(len(text), error.consumed + 1)
        self._attribute(text[segment : error.consumed])
        raise error

    def _attribute(self, raw: str) -> None:
        if self.started:
            self._owner._raw(raw)
        else:
            self.pre_raw.append(raw)

    def _object_closed(self, text: str, segment: int, end: int) -> int:
        if not self.started:
            raise NotACall(end - 1)
        self._owner._raw(text[segment:end])
        return end


def _unserialized(literal: str) -> str:
    """Arguments written as a JSON string that itself holds a JSON object (Granite 4
    does this) are that object; any other string stays the string it is."""
    inner = json_string(literal)
    if inner is None:
        return literal
    try:
        value = json.loads(inner)
    except ValueError:
        return literal
    return inner if isinstance(value, dict) else literal


def json_string(literal: str) -> str | None:
    """The string a JSON string literal holds, or None where it holds none."""
    try:
        value = json.loads(literal)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def starts_with(buf: str, literal: str) -> bool | None:
    """True if `buf` starts with `literal`, None if `buf` is still a proper prefix of
    it (more input decides), False otherwise."""
    if buf.startswith(literal):
        return True
    if literal.startswith(buf):
        return None
    return False


def split_before(buf: str, markers: MarkerSet, final: bool) -> tuple[int, re.Match[str] | None]:
    """Scan `buf` for the earliest marker. Returns (end of the content that can be
    released, match or None). Without a match, the content end stops short of a
    suffix that could still become a marker (unless `final`)."""
    match = markers.find(buf)
    if match is not None:
        return match.start(), match
    if final:
        return len(buf), None
    return len(buf) - markers.held_suffix(buf), None
