"""Markers inside arguments stay arguments (issue 10 item 4): a string argument
holding any marker of its own format, other than the one terminator of the value
it sits in, round-trips byte-exact through render → parse at random split points."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, Text, render_output
from tokenyard.events import check_events

from .support import merge, run_chunks, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

TOOL = ToolSpec(name="write_file", parameters={"type": "object", "properties": {"content": {"type": "string"}}})
# The terminator of a string value, which a value can never contain in formats
# that write values raw (JSON formats escape, so they have none).
OWN_TERMINATOR = {
    "qwen3_coder": "</parameter>",
    "seed_oss": "</parameter>",
    "step3p5": "</parameter>",
    "minimax_m2": "</parameter>",
    "glm45": "</arg_value>",
    "glm47": "</arg_value>",
    "deepseek_v3_2": "</\uff5cDSML\uff5cparameter>",
    "deepseek_v4": "</\uff5cDSML\uff5cparameter>",
    "gemma4": '<|"|>',
    "kimi_k3": "<|close|>argument<|sep|>",
    "minimax_m3": "</content>",
    "deepseek_v41": "</\uff5cDSML\uff5c parameter>",
    "dots": "</parameter>",
    "functiongemma": "<escape>",
    "gigachat35": "</\uff5cGCML\uff5cparameter>",
    "hy_v3": "</arg_value:opensource>",
    "hy_v4": "</arg_value:opensource>",
    "k2_horizon": "</ifm|arg_value>",
    "ling3": "</arg_value>",
    "mimo": "</parameter>",
    "minicpm5": "</param>",
    "muse_glimmer": "</atem:parameter>",
    "poolside_v1": "</arg_value>",
    "spark25": "</arg_value>",
    "step3": "</steptml:parameter>",
    "solar_open2": "<|tool_arg:end|>",
}
_MARKER = re.compile(r"<[^<>\n]{1,40}>|\[[A-Z_]+\]|functools|```json")


def _markers(tool: str) -> list[str]:
    found = sorted(set(_MARKER.findall(TOOL_EXAMPLES[tool][1])))
    own = OWN_TERMINATOR.get(tool)
    return [m for m in found if not (own and (m in own or own in m))]


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_markers_inside_a_string_value_survive(tool):
    markers = _markers(tool)
    if not markers:
        pytest.skip("no markers besides the value's own terminator")
    reasoning = TOOL_EXAMPLES[tool][0]
    words = st.sampled_from(["fix", " ", "\n", "東京", "{", '"', "x"])
    piece = st.one_of(words, st.sampled_from(markers))
    values = st.lists(piece, min_size=1, max_size=6).map("".join).filter(lambda v: v.strip() == v and v)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=values, cut=st.integers(1, 13))
    def check(value, cut):
        segments = [Call("write_file", {"content": value}), Text("done")]
        raw = render_output(segments, tool, reasoning)
        events = run_chunks(
            splitter_factory(reasoning, tool, [TOOL]), [raw[i : i + cut] for i in range(0, len(raw), cut)]
        )
        check_events(events, raw)
        calls = [s for s in summary(merge(events)) if s[0] in ("call", "incomplete")]
        assert calls == [("call", "write_file", {"content": value})], raw

    check()
