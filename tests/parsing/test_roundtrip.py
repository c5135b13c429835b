"""Render a planned turn in each family's wire format (engines/wire.py, written from
REFERENCE independently of the parsers), parse it back at random split points,
and get the same ordered turn: reasoning, calls with typed arguments, text."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, Reasoning, Text, render_output
from tokenyard.events import check_events
from tokenyard.parsing.registry import tool_parser_names

from .support import merge, run_chunks, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

TOOL = ToolSpec(
    name="edit_file",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "count": {"type": "integer"},
            "force": {"type": "boolean"},
            "options": {"type": "object"},
            "lines": {"type": "array"},
        },
    },
)

# Prose with the characters that matter (quotes, braces, brackets, non-ASCII) but
# none of any family's markers, and no block-edge whitespace (that is trimmed).
words = st.sampled_from(
    ["fix", "the", "bug", "in", "main.py", "東京", "🌸", "a{b}", "x[0]", "'q'", '"dq"', "a\\b", "50%", "—"]
)
prose = st.lists(words, min_size=1, max_size=8).map(" ".join)
string_values = st.lists(
    st.sampled_from(["src/app.py", "line one", "ünï", "tab\there", "brace{", "x = [1]"]), min_size=1, max_size=3
).map(" ".join)
arguments = st.fixed_dictionaries(
    {},
    optional={
        "path": string_values,
        "count": st.integers(-5, 10**6),
        "force": st.booleans(),
        "options": st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
        "lines": st.lists(st.sampled_from(["x", "y"]), max_size=3),
    },
)
calls = arguments.map(lambda a: Call("edit_file", a))


def turns(tool: str, reasoning: str | None):
    segment = st.one_of(
        calls,
        prose.map(Text),
        *([prose.map(Reasoning)] if reasoning else []),
    )

    def well_formed(segments):
        out, last = [], None
        for s in segments:
            if type(s) in (Text, Reasoning) and type(s) is type(last):
                continue  # adjacent runs of one kind would merge
            out.append(s)
            last = s
        if tool == "llama3_json":  # calls run to the end of the output
            out = [s for s in out if not isinstance(s, Call)] + [s for s in out if isinstance(s, Call)]
            while len(out) > 1 and isinstance(out[-1], Call) and type(out[-2]) is Text and out[-2] is out[-1]:
                break
        return out

    return st.lists(segment, min_size=1, max_size=6).map(well_formed)


def expected_summary(segments):
    out = []
    for s in segments:
        if isinstance(s, Call):
            out.append(("call", s.name, s.arguments))
        elif isinstance(s, Reasoning):
            out.append(("reasoning", s.text))
        elif out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + s.text)
        else:
            out.append(("text", s.text))
    return out


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_render_then_parse_round_trips(tool):
    assert tool in tool_parser_names(), f"no {tool} parser registered"
    reasoning = TOOL_EXAMPLES[tool][0]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(segments=turns(tool, reasoning), cut=st.integers(1, 11))
    def check(segments, cut):
        raw = render_output(segments, tool, reasoning)
        make = splitter_factory(reasoning, tool, [TOOL])
        events = run_chunks(make, [raw[i : i + cut] for i in range(0, len(raw), cut)])
        check_events(events, raw)
        got = [s for s in summary(merge(events)) if not (s[0] == "text" and not s[1].strip())]
        assert got == expected_summary(segments), raw

    check()
