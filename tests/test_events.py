"""The event grammar (events.py): what it accepts and each rule it enforces."""

from __future__ import annotations

import pytest

from tokenyard.events import (
    EventGrammarError,
    Finish,
    Marker,
    PromptProcessed,
    StreamError,
    TextDelta,
    ToolCallDelta,
    ToolCallIncomplete,
    ToolCallReady,
    ToolCallStart,
    check_events,
)

RAW = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
CALL = [
    ToolCallStart(0, "c0", "f"),
    ToolCallDelta(0, '{"a": '),
    ToolCallDelta(0, "1}"),
    ToolCallReady(0, "c0", "f", '{"a": 1}', RAW),
]


def test_a_well_formed_stream_passes_with_conservation():
    check_events([PromptProcessed(3, 0), TextDelta("hi "), Marker("\n"), *CALL, Finish("tool_calls")], "hi \n" + RAW)
    cut = [
        ToolCallStart(0, "c0", "f"),
        ToolCallDelta(0, '{"a'),
        ToolCallIncomplete(0, "c0", "f", '{"a', "<x>", "truncated"),
    ]
    check_events(cut, "<x>")
    check_events([TextDelta("a"), *CALL[:2], StreamError("engine failed")])  # an error may end an open call


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([ToolCallDelta(0, "{")], "outside"),
        ([CALL[0], TextDelta("x")], "inside open call"),
        ([CALL[0], ToolCallStart(1, "c1", "g")], "inside open call"),
        ([*CALL, ToolCallStart(1, "c0", "g")], "used twice"),
        ([CALL[0], ToolCallDelta(0, "{}"), ToolCallReady(0, "c0", "f", "{}x", "")], "do not join"),
        ([CALL[0], ToolCallDelta(0, "{"), ToolCallReady(0, "c0", "f", "{", "")], "not JSON"),
        ([CALL[0], ToolCallReady(0, "c9", "f", "", "")], "another id"),
        ([ToolCallReady(0, "c0", "f", "{}", "")], "never started"),
        ([TextDelta("x"), PromptProcessed(1, 0)], "PromptProcessed"),
        ([Finish("stop"), TextDelta("x")], "after Finish"),
        ([CALL[0], Finish("stop")], "still open"),
        ([CALL[0]], "never finished"),
    ],
)
def test_each_rule_is_enforced(events, message):
    with pytest.raises(EventGrammarError, match=message):
        check_events(events)


def test_conservation_is_checked_when_the_text_is_given():
    with pytest.raises(EventGrammarError, match="conservation"):
        check_events([TextDelta("ab")], "abc")
