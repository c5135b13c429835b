"""The OpenAI Responses spoke (`/v1/responses`): the spoke protocol of apis/spoke.py."""

from __future__ import annotations

import time
from typing import Any

from ..errors import validate
from ..spoke import ParsedRequest, RequestContext
from .errors import ERRORS
from .requests import (
    ENCRYPTED_REASONING,
    call_routes,
    codex_thread_key,
    custom_tool_names,
    response_echo,
    summary_mode,
    to_conversation,
)
from .schema import ResponsesRequest
from .stream import ResponseStream, new_id


class OpenAIResponses:
    name = "openai_responses"
    errors = ERRORS
    call_id_prefix = "call_"

    def parse(self, body: Any, context: RequestContext) -> ParsedRequest:
        wire = validate(ResponsesRequest, body)
        headers = context.headers
        conversation = to_conversation(
            wire,
            replay=context.replay,
            session_key=headers.get("session_id") or headers.get("session-id"),
            thread_key=codex_thread_key(headers),
            agent="codex" if headers.get("originator", "").startswith("codex") else None,
        )
        return ParsedRequest(conversation, wire.model, bool(wire.stream), wire)

    def encoder(self, request: ParsedRequest, context: RequestContext) -> ResponseStream:
        wire: ResponsesRequest = request.options
        return ResponseStream(
            new_id("resp"),
            response_echo(wire),
            created_at=int(time.time()),
            replay=context.replay,
            custom_tools=custom_tool_names(wire),
            routes=call_routes(wire, request.conversation),
            summary=summary_mode(wire),
            include_encrypted_reasoning=ENCRYPTED_REASONING in (wire.include or []),
            dispatch=context.dispatch and request.stream,
            clock=lambda: int(time.time()),
        )


SPOKE = OpenAIResponses()
