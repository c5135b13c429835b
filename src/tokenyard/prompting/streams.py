"""Which prompt stream a request belongs to, for the prefix watch.

One agent session sends several streams of prompts, each of which should extend
its own previous prompt: the main conversation, each subagent (Claude Code's
`x-claude-code-agent-id`, with `x-claude-code-parent-agent-id` naming the agent
that started it), and background requests to another model id (Claude Code sends
title and summary requests to its small-fast model). A side query (a request
without tools from a client that names its session: a title, a summary, a
permission classifier's question) is its own stream, apart from the turns it would
otherwise seem to break. Two kinds of request are recognised by the text Claude
Code writes into them:

- a compaction request: the main history with an instruction to summarise it
  appended to the last user message; a fork of the stream, not a divergence;
- the first request after a compaction: the history replaced by the summary; the
  stream starts over.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum

from ..conversation import Conversation, Message, Text

MAIN_AGENT = "main"
# Claude Code 2.1.330's compaction instruction (appended to the last user message).
COMPACTION_MARKERS = ("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.",)
# OpenClaw 2026.9.6 names no session (no header, no metadata, no prompt_cache_key);
# its system prompt (Anthropic `system`, Responses' first developer message) starts so.
OPENCLAW_SYSTEM_MARKER = "<!-- openclaw:"
# The first user message of the conversation that replaces a compacted one.
CONTINUATION_MARKERS = ("This session is being continued from a previous conversation",)


class StreamKind(Enum):
    TURN = "turn"  # the next request of the stream
    COMPACTION = "compaction"
    RESUMED = "resumed after compaction"
    SIDE_QUERY = "side query"


@dataclass(frozen=True)
class PromptStream:
    key: str  # session, agent and model: what the prefix watch compares within
    kind: StreamKind
    agent: str
    parent: str | None  # the agent that started this one, when the client says


def inferred_session(conversation: Conversation) -> str | None:
    """A session for a client that names none but says who it is: OpenClaw. Every
    request of one OpenClaw session repeats its system prompt and its first user
    message (stamped with the minute it was typed: `[Sat 2026-11-28 10:05 UTC] …`),
    and no other session has both, so the two name it. None for anyone else."""
    system = "".join(t.text for t in conversation.system)
    if not system and conversation.messages and conversation.messages[0].role in ("system", "developer"):
        system = conversation.messages[0].text()
    if not system.lstrip().startswith(OPENCLAW_SYSTEM_MARKER):
        return None
    user = next((m.text() for m in conversation.messages if m.role == "user"), "")
    digest = hashlib.blake2b(f"{system}\0{user}".encode(), digest_size=8).hexdigest()
    return f"openclaw-{digest}"


def is_side_query(conversation: Conversation) -> bool:
    """A request the user is not waiting on and that is no turn of the conversation:
    an agent client (one that names its session) sending no tools. Its turns always
    carry tools, compaction requests included; what it sends without them is a title,
    a summary, a topic check or a permission classifier's question."""
    if conversation.request_kind == "compaction":  # a summary the next turn waits for
        return False
    return conversation.session_key is not None and not conversation.tools


def prompt_stream(conversation: Conversation) -> PromptStream | None:
    """The stream of a request, or None when the client named no session."""
    if conversation.session_key is None:
        return None
    agent = conversation.agent_id or MAIN_AGENT
    key = f"{conversation.session_key}/{agent}/{conversation.model}"
    kind = _kind(conversation)
    if kind is StreamKind.SIDE_QUERY:
        key += "#side"
    return PromptStream(key, kind, agent, conversation.parent_agent_id)


def _kind(conversation: Conversation) -> StreamKind:
    users = [m for m in conversation.messages if m.role == "user"]
    if conversation.request_kind == "compaction" or (users and _contains(users[-1], COMPACTION_MARKERS)):
        return StreamKind.COMPACTION
    if users and _starts_with(users[0], CONTINUATION_MARKERS):
        return StreamKind.RESUMED
    if is_side_query(conversation):
        return StreamKind.SIDE_QUERY
    return StreamKind.TURN


def _texts(message: Message) -> list[str]:
    return [p.text for p in message.parts if isinstance(p, Text)]


def _contains(message: Message, markers: tuple[str, ...]) -> bool:
    return any(marker in text for text in _texts(message) for marker in markers)


def _starts_with(message: Message, markers: tuple[str, ...]) -> bool:
    return any(text.lstrip().startswith(markers) for text in _texts(message))
