"""Agent hints from the body (`nvext.agent_hints`) or headers, the same for every API."""

from __future__ import annotations

import pytest

from tokenyard.apis.hints import read_agent_hints
from tokenyard.conversation import AgentHints
from tokenyard.faults import ApiError, Fault


def test_hints_from_the_body_and_headers_headers_winning():
    body = {"nvext": {"agent_hints": {"priority": 5, "osl": 1024, "speculative_prefill": True, "future_hint": 1}}}
    assert read_agent_hints(body, {}) == AgentHints(priority=5, osl=1024, speculative_prefill=True)
    headers = {"x-agent-priority": "7", "x-agent-strict-priority": "1", "x-agent-speculative-prefill": "false"}
    assert read_agent_hints(body, headers) == AgentHints(priority=7, strict_priority=1, osl=1024)
    assert read_agent_hints({"model": "m"}, {}) == AgentHints()


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"nvext": {"agent_hints": []}}, {}),
        ({"nvext": {"agent_hints": {"osl": -1}}}, {}),
        ({}, {"x-agent-priority": "soon"}),
    ],
)
def test_bad_hints_are_a_clear_400(body, headers):
    with pytest.raises(ApiError) as raised:
        read_agent_hints(body, headers)
    assert raised.value.fault is Fault.INVALID_REQUEST and "agent hints" in raised.value.message.replace("_", " ")
