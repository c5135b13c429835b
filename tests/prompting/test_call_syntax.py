"""Each format's call opener is what its models write: for every tool-call format the
prefill (any call, and a named one) is a prefix of the call as the wire-format oracle
(engines/wire.py) renders it, and the parser fed prefill + the rest yields that call."""

from __future__ import annotations

import json

import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, render_output
from tokenyard.events import ToolCallReady
from tokenyard.families.call_syntax import CALL_SYNTAX, call_syntax
from tokenyard.parsing.splitter import OutputSplitter

ARGUMENTS = {"city": "Paris", "days": 3}
TOOL = ToolSpec(
    name="get_weather",
    parameters={"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)


@pytest.mark.parametrize("fmt", sorted(CALL_SYNTAX))
def test_the_openers_begin_the_call_the_model_writes(fmt):
    syntax = call_syntax(fmt)
    assert syntax is not None
    raw = render_output([Call("get_weather", ARGUMENTS)], fmt, None, calls_before=2)
    named = syntax.opener("get_weather", 2)
    assert raw.startswith(syntax.any_opener) and raw.startswith(named)
    assert raw.startswith(syntax.trigger)
    splitter = OutputSplitter(None if fmt != "harmony" else "gpt_oss", fmt, tools=[TOOL])
    # The prefill is fed first, then the model's continuation, as the pipeline does.
    events = splitter.feed(named) + splitter.feed(raw[len(named) :]) + splitter.finish()
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert [(e.name, json.loads(e.arguments)) for e in ready] == [("get_weather", ARGUMENTS)]
    if syntax.arguments_end is not None:
        # A guide's tag: the opener, the arguments JSON, then arguments_end.
        rest = raw[len(named) :]
        assert rest.startswith(json.dumps(ARGUMENTS, ensure_ascii=False))
        assert rest[len(json.dumps(ARGUMENTS, ensure_ascii=False)) :].startswith(syntax.arguments_end)


def test_unknown_formats_have_no_syntax():
    assert call_syntax(None) is None and call_syntax("no_such_format") is None
