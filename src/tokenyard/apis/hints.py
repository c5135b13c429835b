"""What a harness tells the serving layer besides the conversation, the same on every
API (sans-IO: fed the parsed body and the headers):

- agent hints: Dynamo's `nvext.agent_hints` in the request body, or `x-agent-*`
  headers for clients that can only add headers (a header wins over the body);
- the harness's own session headers, kept as sent so engine requests carry them to
  fleet routers that read them (llm-d's agent-identity plugin)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ..conversation import AgentHints
from .errors import invalid_request, validation_message

# header -> hint
HINT_HEADERS = {
    "x-agent-priority": "priority",
    "x-agent-strict-priority": "strict_priority",
    "x-agent-osl": "osl",
    "x-agent-speculative-prefill": "speculative_prefill",
}

# Session headers harnesses send that fleet routers read (llm-d's agent-identity
# plugin, in its order): Claude Code, OpenCode, Codex (and Codex's older spelling).
HARNESS_SESSION_HEADERS = ("x-claude-code-session-id", "x-session-affinity", "session-id", "session_id")


def read_harness_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: headers[name] for name in HARNESS_SESSION_HEADERS if headers.get(name)}


def read_agent_hints(body: Any, headers: Mapping[str, str]) -> AgentHints:
    hints: dict[str, Any] = {}
    nvext = body.get("nvext") if isinstance(body, dict) else None
    if nvext is not None:
        given = nvext.get("agent_hints") if isinstance(nvext, dict) else None
        if given is not None and not isinstance(given, dict):
            raise invalid_request("nvext.agent_hints must be an object", "nvext.agent_hints")
        hints.update(given or {})
    for header, name in HINT_HEADERS.items():
        value = headers.get(header)
        if value is not None:
            hints[name] = value
    try:
        # Unknown hints are ignored, as Dynamo does: harnesses send newer ones.
        return AgentHints.model_validate({k: v for k, v in hints.items() if k in AgentHints.model_fields})
    except ValidationError as error:
        raise invalid_request(f"agent hints: {validation_message(error)}", "nvext.agent_hints") from error
