"""The canonical output stream.

Parsers turn the engine's raw text into these events, in order; every API encoder
turns them into its own wire events. Order is data: an encoder opens and closes
blocks as the kind of event changes and never regroups.

Classes are plain slotted dataclasses: they are created once per streamed token on
the hot path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(slots=True)
class ReasoningDelta:
    text: str


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class Marker:
    """Recognised syntax that carries no content: reasoning and tool-call markers, and
    the whitespace that separates blocks. Encoders ignore it; it exists so every
    character the engine emitted is accounted for (conservation) and so `tokenyard
    parse` can show what was recognised."""

    text: str


@dataclass(slots=True)
class ToolCallStart:
    """The function name is known. `declared` is False when the request never
    offered a tool of that name."""

    index: int
    id: str
    name: str
    declared: bool = True


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of the arguments JSON. The fragments of one call, joined, equal the
    `arguments` of its `ToolCallReady` exactly, and every prefix of the join is a
    prefix of valid JSON."""

    index: int
    arguments: str


@dataclass(slots=True)
class ToolCallReady:
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
class ToolCallIncomplete:
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
class PromptProcessed:
    """The engine admitted the prompt: how long it is and how much of it the
    engine found in its prefix cache. Comes before any output."""

    prompt_tokens: int
    cached_tokens: int
    # Prompt tokens the engine newly stored in its prefix cache (0: none, or unknown).
    cache_written_tokens: int = 0


@dataclass(slots=True)
class Usage:
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
class Finish:
    reason: FinishReason
    stop_sequence: str | None = None
    usage: Usage = field(default_factory=Usage)
    # The request asked the server to judge its tool calls: a verdict per call id
    # (empty when the turn made none). None: it did not ask.
    verdicts: dict[str, CallVerdict] | None = None


@dataclass(slots=True)
class StreamError:
    """The generation failed after it started; nothing follows. `cause` is the typed
    exception (an `EngineError` such as `EngineTimeout`, a `ToolChoiceViolation`),
    whose fault the error tables read."""

    message: str
    cause: Exception | None = None


ParseEvent = ReasoningDelta | TextDelta | Marker | ToolCallStart | ToolCallDelta | ToolCallReady | ToolCallIncomplete
Event = ParseEvent | PromptProcessed | Usage | Finish | StreamError


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready view of an event, `type` first (used by `tokenyard parse`)."""
    out: dict[str, Any] = {"type": type(event).__name__}
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
        kind = type(event)
        if (kind is TextDelta or kind is ReasoningDelta or kind is Marker) and type(last) is kind:
            out[-1] = kind(last.text + event.text)  # type: ignore[union-attr]  # exact-type dispatch (faster than isinstance on the hot path) is not narrowed by mypy
        elif kind is ToolCallDelta and type(last) is ToolCallDelta and last.index == event.index:  # type: ignore[union-attr]  # exact-type dispatch (faster than isinstance on the hot path) is not narrowed by mypy
            out[-1] = ToolCallDelta(event.index, last.arguments + event.arguments)  # type: ignore[union-attr]  # exact-type dispatch (faster than isinstance on the hot path) is not narrowed by mypy
        else:
            out.append(event)
    return out
