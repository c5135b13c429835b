"""Shared checks for every parser test: split-point equivalence, and the event grammar
and conservation of `tokenyard.events`."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from tokenyard.conversation import ToolSpec
from tokenyard.events import (
    ParseEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallIncomplete,
    ToolCallReady,
    characters,
    check_events,
    merge_adjacent,
)
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds

SplitterFactory = Callable[[], OutputSplitter]


def splitter_factory(
    reasoning: str | None, tool: str | None, tools: Iterable[ToolSpec] | None = None, **kwargs
) -> SplitterFactory:
    tool_list = None if tools is None else list(tools)

    def make() -> OutputSplitter:
        return OutputSplitter(reasoning, tool, tools=tool_list, call_ids=CallIds(nonce="test"), **kwargs)

    return make


def run_chunks(make: SplitterFactory, chunks: Iterable[str]) -> list[ParseEvent]:
    splitter = make()
    events: list[ParseEvent] = []
    for chunk in chunks:
        events.extend(splitter.feed(chunk))
    events.extend(splitter.finish())
    return events


def merge(events: list[ParseEvent]) -> list[ParseEvent]:
    return merge_adjacent(events)


def reconstruct(events: list[ParseEvent]) -> str:
    """Every input character, back in order: conservation."""
    return "".join(characters(event) for event in events)


def chunkings(text: str, seed: int = 0, random_rounds: int = 12) -> Iterable[list[str]]:
    yield [text]
    yield list(text)
    for i in range(1, len(text)):
        yield [text[:i], text[i:]]
    rng = random.Random(seed)
    for _ in range(random_rounds):
        chunks, i = [], 0
        while i < len(text):
            step = rng.randint(1, 9)
            chunks.append(text[i : i + step])
            i += step
        yield chunks


def parse(make: SplitterFactory, text: str) -> list[ParseEvent]:
    """Parse `text` every way it can be chunked; all must agree. Returns the merged
    events of the whole-input run."""
    expected = merge(run_chunks(make, [text]))
    check_events(run_chunks(make, [text]), text)
    for chunks in chunkings(text):
        events = run_chunks(make, chunks)
        check_events(events, text)
        got = merge(events)
        assert got == expected, f"chunking {chunks!r} changed the events"
    return expected


def summary(events: list[ParseEvent]) -> list[tuple]:
    """A compact, readable view of merged events for assertions."""
    out: list[tuple] = []
    for event in events:
        kind = type(event)
        if kind is ReasoningDelta:
            out.append(("reasoning", event.text))
        elif kind is TextDelta:
            out.append(("text", event.text))
        elif kind is ToolCallReady:
            out.append(("call", event.name, event.input()))
        elif kind is ToolCallIncomplete:
            out.append(("incomplete", event.name, event.reason))
    return out


WEATHER = ToolSpec(
    name="get_weather",
    description="Weather forecast",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)
