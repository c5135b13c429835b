"""Tool names the APIs allow (`^[a-zA-Z0-9_-]{1,64}$`) but an identifier pattern
does not: a leading digit or `-`. Each format parses a call to one, split at every
character boundary."""

import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, Text, render_output

from .support import parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

NAMES = ["2fa_verify", "3d", "-x"]
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_a_name_that_begins_with_a_digit_or_dash_is_a_call(tool, name):
    reasoning = TOOL_EXAMPLES[tool][0]
    segments = [Text("checking"), Call(name, {"path": "a.txt"})]
    raw = render_output(segments, tool, reasoning)
    make = splitter_factory(reasoning, tool, [ToolSpec(name=name, parameters=SCHEMA)])
    got = [s for s in summary(parse(make, raw)) if not (s[0] == "text" and not s[1].strip())]
    assert got == [("text", "checking"), ("call", name, {"path": "a.txt"})], raw
