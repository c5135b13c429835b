"""The scenarios every tool-call format shares, run over every registered format by
its registry name (with its REFERENCE §1 wire sample and its family's reasoning
parser from `wire_examples.py`, and calls written by `engines.wire.render_output`).
`parse` feeds each input at every split point and checks the event grammar and
conservation (`tokenyard.events.check_events`) on each run.

Shared elsewhere, also over every format: the wire sample at every split point
(test_properties.py), a call cut inside its arguments and the end-of-output policy
(test_end_of_output.py), random turns rendered then parsed (test_roundtrip.py). The
per-format modules keep only what is particular to their format."""

from __future__ import annotations

import json

import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, Text, render_output
from tokenyard.events import ToolCallIncomplete, ToolCallReady, ToolCallStart, characters, check_events
from tokenyard.parsing.registry import HARMONY_TOOL_NAMES, check_tool_parser_name, tool_parser_class, tool_parser_names
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import MAX_HELD_CHARS, CallIds

from .support import WEATHER, merge, parse, run_chunks, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

FORMATS = sorted(TOOL_EXAMPLES)

EDIT = ToolSpec(
    name="edit_file",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "count": {"type": "integer"},
            "force": {"type": "boolean"},
            "nested": {"type": "object"},
            "lines": {"type": "array"},
        },
    },
)

# The argument shapes the per-format modules each tried on their own format.
SHAPES = {
    "no_arguments": {},
    "non_ascii": {"path": "東京 🌸 Kraków 🥟 Αθήνα", "count": 3},
    "escapes_and_syntax_in_a_string": {
        "path": "quote \" back\\slash \n newline\ttab {x} [0] <b> ```python\nprint('x')\n```",
        "force": True,
    },
    "nested_values": {"nested": {"a": [1, 2.5, None, True, {"b": []}], "deep": [[{"x": [None, False, -0.001]}]]}},
    "array_and_negative": {"lines": ["x", "y"], "count": -5},
}

# Formats that write nested values as XML elements: an empty element is all they
# can write for null or an empty list, and it reads back as "".
ELEMENT_VALUES = {"minimax_m3"}


def _as_elements(value):
    if value is None or value == []:
        return ""
    if isinstance(value, dict):
        return {k: _as_elements(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_elements(v) for v in value]
    return value


# Formats whose call opens with a bare `[`: a call to a tool the request did not
# declare is prose there, never a call.
UNDECLARED_IS_PROSE = {"pythonic", "xlam"}


def _content(events) -> list[tuple]:
    return [s for s in summary(merge(events)) if s[0] != "text" or s[1].strip()]


def _make(tool: str, tools: list[ToolSpec]):
    return splitter_factory(TOOL_EXAMPLES[tool][0], tool, tools)


def test_every_registered_format_has_a_wire_sample():
    # In-tree formats only: tests register plugin formats of their own.
    in_tree = {
        check_tool_parser_name(name)
        for name in tool_parser_names()
        if name in HARMONY_TOOL_NAMES or tool_parser_class(name).__module__.startswith("tokenyard.")
    }
    assert in_tree <= set(FORMATS), "a format without a wire sample"
    assert set(FORMATS) <= set(tool_parser_names())


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("tool", FORMATS)
def test_argument_shapes_come_back_as_written(tool, shape):
    arguments = SHAPES[shape]
    raw = render_output([Call("edit_file", arguments)], tool, TOOL_EXAMPLES[tool][0])
    events = parse(_make(tool, [EDIT]), raw)
    expected = {k: _as_elements(v) if k == "nested" else v for k, v in arguments.items()}
    assert _content(events) == [("call", "edit_file", expected if tool in ELEMENT_VALUES else arguments)]
    written = json.dumps(arguments, ensure_ascii=False)
    if written in raw:  # arguments written as one JSON value pass through verbatim
        assert next(e for e in events if type(e) is ToolCallReady).arguments == written


@pytest.mark.parametrize("tool", FORMATS)
def test_several_calls_with_prose_around_stay_in_order(tool):
    first, second = {"path": "a.py", "count": 1}, {"path": "b.py"}
    segments = [Text("Checking both."), Call("edit_file", first), Call("edit_file", second), Text("Done.")]
    events = parse(_make(tool, [EDIT]), render_output(segments, tool, TOOL_EXAMPLES[tool][0]))
    assert _content(events) == [
        ("text", "Checking both."),
        ("call", "edit_file", first),
        ("call", "edit_file", second),
        ("text", "Done."),
    ]
    starts = [e for e in events if type(e) is ToolCallStart]
    assert [e.index for e in starts] == [0, 1] and len({e.id for e in starts}) == 2


@pytest.mark.parametrize("tool", FORMATS)
def test_a_call_to_an_undeclared_tool_is_flagged(tool):
    raw = render_output([Call("rm_rf", {"path": "/"})], tool, TOOL_EXAMPLES[tool][0])
    events = parse(_make(tool, [EDIT]), raw)
    flags = [e.declared for e in events if type(e) in (ToolCallStart, ToolCallReady)]
    if tool in UNDECLARED_IS_PROSE:
        assert flags == [] and "".join(characters(e) for e in events) == raw
    else:
        assert flags == [False, False]
        assert _content(events) == [("call", "rm_rf", {"path": "/"})]


def _opener(sample: str) -> str:
    """The sample cut inside the call's name: syntax that is still undecided."""
    return sample[: sample.index("get_weather") + 5]


@pytest.mark.parametrize("tool", FORMATS)
def test_what_a_parser_holds_back_is_bounded_and_released_as_text(tool):
    """An opener that never closes, then long prose, then the real call: at no point
    does the parser hold back more than the bound while no call is open; past it,
    the held text comes out as text (flagged in `released_holds`), nothing is lost,
    and the call after it still parses as it does after plain prose."""
    reasoning, sample = TOOL_EXAMPLES[tool]
    prose = "the quick brown fox jumps over the lazy dog. " * (MAX_HELD_CHARS // 40)
    text = _opener(sample) + prose + sample
    splitter = OutputSplitter(reasoning, tool, tools=[WEATHER], call_ids=CallIds(nonce="test"))
    events, fed, accounted, open_call, most_held = [], 0, 0, False, 0
    for at in range(0, len(text), 13):
        chunk = text[at : at + 13]
        fed += len(chunk)
        for event in splitter.feed(chunk):
            events.append(event)
            accounted += len(characters(event))
            if type(event) is ToolCallStart:
                open_call = True
            elif type(event) is ToolCallReady or type(event) is ToolCallIncomplete:
                open_call = False
        if not open_call:
            most_held = max(most_held, fed - accounted)
    events += splitter.finish()
    check_events(events, text)
    assert most_held <= MAX_HELD_CHARS
    if most_held > MAX_HELD_CHARS - 13:  # the opener kept it undecided up to the bound
        assert splitter.released_holds == 1
    after_prose = run_chunks(_make(tool, [WEATHER]), [prose + sample])
    calls = [s for s in _content(events) if s[0] == "call"]
    assert calls == [s for s in _content(after_prose) if s[0] == "call"]


def test_the_bound_is_reached_by_the_formats_that_read_a_json_name():
    # The test above is not vacuous: a JSON call object whose name string never
    # closes is held until the bound (hermes), an opener a format rules out early is
    # not held at all (qwen3_coder reads at most a name's length).
    for tool, released in (("hermes", 1), ("qwen3_coder", 0)):
        reasoning, sample = TOOL_EXAMPLES[tool]
        splitter = OutputSplitter(reasoning, tool, tools=[WEATHER], call_ids=CallIds(nonce="test"))
        text = _opener(sample) + "x" * (MAX_HELD_CHARS + 100)
        events = [e for at in range(0, len(text), 50) for e in splitter.feed(text[at : at + 50])]
        assert splitter.released_holds == released
        check_events([*events, *splitter.finish()], text)
