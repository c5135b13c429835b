"""The canonical output stream.

Parsers turn the engine's raw text into these events, in order; every API encoder
turns them into its own wire events. Order is data: an encoder opens and closes
blocks as the kind of event changes and never regroups.

Classes are plain slotted dataclasses under one base, `Event`: they are created once
per streamed token on the hot path. Dispatch is `type(event) is X` (mypy narrows it,
and it is as fast as any tag).

`EventGrammar` is the stream's grammar, checked one event at a time: the tests run it
on every parser's output, and `--check-events` runs it on every served stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn


@dataclass(slots=True)
class Event:
    """What every event is: one base class, so an event of any kind can be typed,
    stored and dispatched without a union."""


@dataclass(slots=True)
class ReasoningDelta(Event):
    text: str


@dataclass(slots=True)
class TextDelta(Event):
    text: str


@dataclass(slots=True)
class Marker(Event):
    """Recognised syntax that carries no content: reasoning and tool-call markers, and
    the whitespace that separates blocks. Encoders ignore it; it exists so every
    character the engine emitted is accounted for (conservation) and so `tokenyard
    parse` can show what was recognised."""

    text: str


@dataclass(slots=True)
class ToolCallStart(Event):
    """The function name is known. `declared` is False when the request never
    offered a tool of that name."""

    index: int
    id: str
    name: str
    declared: bool = True


@dataclass(slots=True)
class ToolCallDelta(Event):
    """A fragment of the arguments JSON. The fragments of one call, joined, equal the
    `arguments` of its `ToolCallReady` exactly, and every prefix of the join is a
    prefix of valid JSON."""

    index: int
    arguments: str


@dataclass(slots=True)
class ToolCallReady(Event):
    """A complete, well-formed call: the dispatch point. `raw` is the exact text the
    model emitted for this call, markers included."""

    index: int
    id: str
    name: str
    arguments: str
    raw: str
    declared: bool = True

    def input(self) -> dict[str, Any]:
        value = json.loads(self.arguments)
        return value if isinstance(value, dict) else {"value": value}


@dataclass(slots=True)
class ToolCallIncomplete(Event):
    """A call that was started but can not be dispatched: the output ended inside it
    (`reason="truncated"`, e.g. at max_tokens) or its arguments stopped being valid
    JSON (`reason="invalid_arguments"`). `arguments` is what was streamed as deltas;
    `raw` is every character the model emitted for the call."""

    index: int
    id: str
    name: str
    arguments: str
    raw: str
    reason: Literal["truncated", "invalid_arguments"]
    declared: bool = True


@dataclass(slots=True)
class PromptProcessed(Event):
    """The engine admitted the prompt: how long it is and how much of it the
    engine found in its prefix cache. Comes before any output."""

    prompt_tokens: int
    cached_tokens: int
    # Prompt tokens the engine newly stored in its prefix cache (0: none, or unknown).
    cache_written_tokens: int = 0


@dataclass(slots=True)
class Usage(Event):
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    # Prompt tokens the engine newly stored in its prefix cache (0: none, or unknown).
    cache_written_tokens: int = 0


FinishReason = Literal["stop", "length", "stop_sequence", "tool_calls", "cancelled", "error"]


@dataclass(slots=True)
class CallVerdict:
    """A server-side safety classifier's verdict on one of the turn's tool calls
    (safeguards.py). `flagged` None: no verdict, for the reason in `unavailable`
    ("timeout", "error", "input_too_long", "truncated"); the client must not treat
    that as an allow."""

    flagged: bool | None
    explanation: str | None = None
    unavailable: str | None = None


@dataclass(slots=True)
class Finish(Event):
    reason: FinishReason
    stop_sequence: str | None = None
    usage: Usage = field(default_factory=Usage)
    # The request asked the server to judge its tool calls: a verdict per call id
    # (empty when the turn made none). None: it did not ask.
    verdicts: dict[str, CallVerdict] | None = None


@dataclass(slots=True)
class StreamError(Event):
    """The generation failed after it started; nothing follows. `cause` is the typed
    exception (an `EngineError` such as `EngineTimeout`, a `ToolChoiceViolation`),
    whose fault the error tables read."""

    message: str
    cause: Exception | None = None


# What a parser emits (the union, so a parser's output is typed exactly).
ParseEvent = ReasoningDelta | TextDelta | Marker | ToolCallStart | ToolCallDelta | ToolCallReady | ToolCallIncomplete


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready view of an event, `type` first (used by `tokenyard parse`)."""
    out: dict[str, Any] = {"type": type(event).__name__}
    name: str
    for name in event.__slots__:
        value = getattr(event, name)
        if isinstance(value, Exception):
            value = type(value).__name__
        out[name] = event_to_dict(value) if isinstance(value, Usage) else value
    return out


def merge_adjacent(events: list[ParseEvent]) -> list[ParseEvent]:
    """Coalesce adjacent deltas of one kind (and argument fragments of one call).
    Chunking changes how output is split into deltas, never what the merged
    stream says."""
    out: list[ParseEvent] = []
    for event in events:
        last = out[-1] if out else None
        if type(event) is TextDelta and type(last) is TextDelta:
            out[-1] = TextDelta(last.text + event.text)
        elif type(event) is ReasoningDelta and type(last) is ReasoningDelta:
            out[-1] = ReasoningDelta(last.text + event.text)
        elif type(event) is Marker and type(last) is Marker:
            out[-1] = Marker(last.text + event.text)
        elif type(event) is ToolCallDelta and type(last) is ToolCallDelta and last.index == event.index:
            out[-1] = ToolCallDelta(event.index, last.arguments + event.arguments)
        else:
            out.append(event)
    return out


def characters(event: Event) -> str:
    """The engine's characters an event accounts for: a text, reasoning or marker
    event's text, a finished call's raw text; nothing for the rest (a call's
    characters are counted once, in its end event)."""
    if type(event) is TextDelta or type(event) is ReasoningDelta or type(event) is Marker:
        return event.text
    if type(event) is ToolCallReady or type(event) is ToolCallIncomplete:
        return event.raw
    return ""


class EventGrammarError(AssertionError):
    """A stream broke the event grammar: a bug in the parser or the pipeline, never
    the model's fault (any output has a well-formed stream)."""


class EventGrammar:
    """The grammar of one response's event stream, checked one event at a time
    (sans-IO: `feed` each event, then `finish`).

    - `PromptProcessed` comes at most once, before any output;
    - a call is `ToolCallStart`, its `ToolCallDelta`s, then exactly one
      `ToolCallReady` or `ToolCallIncomplete` of the same index, with nothing else
      in between; its deltas join to the final `arguments` exactly; a ready call's
      arguments are JSON; call ids are unique within the response;
    - `Finish` or `StreamError` ends the stream: nothing follows it, and `Finish`
      never leaves a call open (a `StreamError` may: the generation failed).

    A stream of parser events alone (no `Finish`) is checked by `finish`, which also
    refuses a call left open."""

    __slots__ = ("_open", "_arguments", "_ids", "_output", "_ended", "_count")

    def __init__(self) -> None:
        self._open: ToolCallStart | None = None
        self._arguments: list[str] = []
        self._ids: set[str] = set()
        self._output = False
        self._ended: Event | None = None
        self._count = 0

    def feed(self, event: Event) -> None:
        self._count += 1
        if self._ended is not None:
            self._fail(f"{type(event).__name__} after {type(self._ended).__name__}")
        start = self._open
        if type(event) is ToolCallStart:
            if start is not None:
                self._fail(f"call {event.index} started inside open call {start.index}")
            if event.id in self._ids:
                self._fail(f"call id {event.id!r} used twice in one response")
            self._ids.add(event.id)
            self._open, self._arguments, self._output = event, [], True
        elif type(event) is ToolCallDelta:
            if start is None or event.index != start.index:
                self._fail(f"arguments of call {event.index} outside it")
            self._arguments.append(event.arguments)
        elif type(event) is ToolCallReady or type(event) is ToolCallIncomplete:
            if start is None or event.index != start.index:
                self._fail(f"end of call {event.index} that was never started")
            if event.id != start.id or event.name != start.name:
                self._fail(f"call {event.index} ended with another id or name than it started with")
            if "".join(self._arguments) != event.arguments:
                self._fail(f"the deltas of call {event.index} do not join to its arguments")
            if type(event) is ToolCallReady:
                try:
                    json.loads(event.arguments)
                except ValueError:
                    self._fail(f"ready call {event.index} has arguments that are not JSON")
            self._open, self._arguments = None, []
        elif type(event) is PromptProcessed:
            if self._output or self._count > 1:
                self._fail("PromptProcessed after the stream began")
        elif type(event) is Finish or type(event) is StreamError:
            if start is not None and type(event) is Finish:
                self._fail(f"Finish with call {start.index} still open")
            self._ended = event
        else:
            if start is not None:
                self._fail(f"{type(event).__name__} inside open call {start.index}")
            self._output = True

    def finish(self) -> None:
        """The stream is over (a parser's `finish` was drained)."""
        if self._open is not None and self._ended is None:
            self._fail(f"call {self._open.index} was never finished")

    def _fail(self, what: str) -> NoReturn:
        raise EventGrammarError(f"event {self._count}: {what}")


def check_events(events: Iterable[Event], text: str | None = None) -> None:
    """Check a whole stream against the grammar and, given the raw `text` it was
    parsed from, conservation: every character accounted for once, in order."""
    grammar = EventGrammar()
    parts: list[str] = []
    for event in events:
        grammar.feed(event)
        parts.append(characters(event))
    grammar.finish()
    if text is not None and "".join(parts) != text:
        raise EventGrammarError("conservation: input characters lost, duplicated or reordered")
