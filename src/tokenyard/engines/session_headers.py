"""The session identity an engine request carries, for the fleet's router (sans-IO).

Behind a distributed engine (llm-d, vllm-router, Dynamo) the router in front of the
workers decides where a request runs; tokenyard tells it which requests belong
together, so a session's turns land on the worker that holds its prefix:

- the conversation's affinity key (its session, per agent; else the end user) under
  each configured header, `x-session-id` by default (llm-d's session-affinity
  scorer and vllm-router's consistent-hash and sticky policies read it);
- the harness's own session headers as it sent them (llm-d's agent-identity plugin
  reads `x-claude-code-session-id`, `x-session-affinity`, `session-id`).

Values are identifiers the client chose, never prompt text. One that is not short
visible ASCII goes out as a digest of itself: still the same for every request of
the session, and always a valid header value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..conversation import Conversation
from ..settings import DEFAULT_SESSION_HEADERS

# Longer values (or any outside visible ASCII) are sent as a digest.
MAX_VALUE_LENGTH = 256


@dataclass(frozen=True)
class SessionForwarding:
    """`headers`: the header names the affinity key is sent under (none: not sent).
    `harness_headers`: forward the harness's own session headers."""

    headers: tuple[str, ...] = DEFAULT_SESSION_HEADERS
    harness_headers: bool = True


DEFAULT_FORWARDING = SessionForwarding()


def session_headers(conversation: Conversation | None, forwarding: SessionForwarding) -> dict[str, str]:
    if conversation is None:
        return {}
    out: dict[str, str] = {}
    if forwarding.harness_headers:
        out.update((name, header_value(value)) for name, value in conversation.harness_headers.items())
    key = conversation.affinity_key
    if key:
        out.update((name, header_value(key)) for name in forwarding.headers)
    return out


def header_value(value: str) -> str:
    if len(value) <= MAX_VALUE_LENGTH and value.isascii() and value.isprintable() and value.strip() == value:
        return value
    return "sha256-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
