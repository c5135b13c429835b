"""One end-of-output policy for every format (parsing/tools/base.py): a call cut
inside its arguments is never dispatched; a call whose arguments were complete
when the output ended, with only closing markers missing, is recovered — unless
the token limit cut the output (finish reason `length`): then nothing the end of
output completed is dispatched, in any format."""

from __future__ import annotations

import re

import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, render_output
from tokenyard.events import ToolCallReady, check_events
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds

from .support import parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

TOOL = ToolSpec(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)
ARGUMENTS = {"days": 3, "city": "Tokyo"}
_LAST_MARKER = re.compile(r"\s*(?:<[^<>]{1,40}>|\[[A-Z_]+\]|```)\s*$")


def _raw(tool: str) -> str:
    return render_output([Call("get_weather", ARGUMENTS)], tool, TOOL_EXAMPLES[tool][0]).rstrip()


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_a_call_cut_inside_its_arguments_is_never_dispatched(tool):
    raw = _raw(tool)
    cut = raw[: raw.index("Tokyo") + 3]
    events = parse(splitter_factory(TOOL_EXAMPLES[tool][0], tool, [TOOL]), cut)
    assert [s for s in summary(events) if s[0] != "text"] == [("incomplete", "get_weather", "truncated")]


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_a_complete_call_missing_its_last_closing_marker_is_recovered(tool):
    raw = _raw(tool)
    match = _LAST_MARKER.search(raw)
    if match is None:
        pytest.skip("the format has no closing marker after the arguments")
    events = parse(splitter_factory(TOOL_EXAMPLES[tool][0], tool, [TOOL]), raw[: match.start()])
    assert [s for s in summary(events) if s[0] != "text"] == [("call", "get_weather", ARGUMENTS)]


def test_a_call_cut_right_after_its_name_is_recovered_only_for_a_tool_that_takes_no_parameters():
    cut = "<tool_call>\n<function=get_weather>\n"
    events = parse(splitter_factory(None, "qwen3_coder", [TOOL]), cut)
    assert [s for s in summary(events) if s[0] != "text"] == [("incomplete", "get_weather", "truncated")]
    now = ToolSpec(name="now", parameters={"type": "object", "properties": {}})
    events = parse(splitter_factory(None, "qwen3_coder", [now]), "<tool_call>\n<function=now>\n")
    assert [s for s in summary(events) if s[0] != "text"] == [("call", "now", {})]


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_a_call_the_token_limit_cut_is_never_dispatched_at_any_cut_point(tool):
    # Every prefix of the call, as the output a `length` finish leaves: a call is
    # dispatched only by its own closing syntax, never by the end of output.
    reasoning = TOOL_EXAMPLES[tool][0]
    raw = _raw(tool)
    dispatched_at = None
    for end in range(len(raw) + 1):
        splitter = OutputSplitter(reasoning, tool, tools=[TOOL], call_ids=CallIds(nonce="test"))
        fed = splitter.feed(raw[:end])
        finished = splitter.finish(cut=True)
        check_events([*fed, *finished], raw[:end])
        assert not [e for e in finished if type(e) is ToolCallReady], f"cut at {end}: {raw[:end]!r} was dispatched"
        if dispatched_at is None and any(type(e) is ToolCallReady for e in fed):
            dispatched_at = end
    # The whole call, closed by its own syntax, is still dispatched under `length`.
    assert dispatched_at is not None
