"""The Anthropic Messages spoke (`/v1/messages`): the spoke protocol of apis/spoke.py."""

from __future__ import annotations

import secrets
from typing import Any

from ..errors import validate
from ..spoke import ParsedRequest, RequestContext
from .errors import ERRORS
from .requests import marks_cache_breakpoint, to_conversation
from .safeguards import requested_context
from .schema import CountTokensRequest, MessagesRequest
from .stream import MessageStream

# Claude Code names its session in this header.
SESSION_HEADER = "x-claude-code-session-id"
# Its subagents name themselves and the agent that started them.
AGENT_HEADER = "x-claude-code-agent-id"
PARENT_AGENT_HEADER = "x-claude-code-parent-agent-id"


class AnthropicMessages:
    name = "anthropic"
    errors = ERRORS
    call_id_prefix = "toolu_"

    def parse(self, body: Any, context: RequestContext) -> ParsedRequest[MessagesRequest]:
        wire = validate(MessagesRequest, body)
        conversation = to_conversation(
            wire,
            replay=context.replay,
            session_key=context.headers.get(SESSION_HEADER),
            agent_id=context.headers.get(AGENT_HEADER),
            parent_agent_id=context.headers.get(PARENT_AGENT_HEADER),
        )
        return ParsedRequest(
            conversation, wire.model, bool(wire.stream), wire, safeguards=requested_context(wire.safeguards)
        )

    def encoder(self, request: ParsedRequest[MessagesRequest], context: RequestContext) -> MessageStream:
        wire = request.options
        return MessageStream(
            f"msg_{secrets.token_hex(12)}",
            wire.model,
            replay=context.replay,
            dispatch=context.dispatch and request.stream,
            show_thinking=not (wire.thinking and wire.thinking.display == "omitted"),
            cache_breakpoint=marks_cache_breakpoint(wire),
        )


def parse_count_tokens(body: Any, context: RequestContext) -> ParsedRequest[CountTokensRequest]:
    """`/v1/messages/count_tokens`: the conversation whose prompt is counted."""
    wire = validate(CountTokensRequest, body)
    return ParsedRequest(to_conversation(wire, replay=context.replay), wire.model, False, wire)


SPOKE = AnthropicMessages()
