"""The OpenAI Chat Completions spoke (`/v1/chat/completions`): the spoke protocol of
apis/spoke.py."""

from __future__ import annotations

import secrets
import time
from typing import Any

from ..spoke import ParsedRequest, RequestContext
from .errors import ERRORS
from .requests import parse_request, to_conversation
from .schema import ChatCompletionRequest
from .stream import ChatCompletionStream

# Clients that keep one conversation per session say so in this header.
SESSION_HEADER = "x-session-id"


class OpenAIChat:
    name = "openai_chat"
    errors = ERRORS
    call_id_prefix = "call_"

    def parse(self, body: Any, context: RequestContext) -> ParsedRequest[ChatCompletionRequest]:
        wire = parse_request(body)
        conversation = to_conversation(wire, session_key=context.headers.get(SESSION_HEADER))
        return ParsedRequest(conversation, wire.model, bool(wire.stream), wire)

    def encoder(self, request: ParsedRequest[ChatCompletionRequest], context: RequestContext) -> ChatCompletionStream:
        wire = request.options
        return ChatCompletionStream(
            f"chatcmpl-{secrets.token_hex(12)}",
            wire.model,
            int(time.time()),
            include_usage=bool(request.stream and wire.stream_options and wire.stream_options.include_usage),
            dispatch=context.dispatch and request.stream,
        )


SPOKE = OpenAIChat()
