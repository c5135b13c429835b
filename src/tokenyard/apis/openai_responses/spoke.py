"""The OpenAI Responses spoke (`/v1/responses`): the spoke protocol of apis/spoke.py."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..errors import validate
from ..spoke import ParsedRequest, RequestContext
from .errors import ERRORS
from .requests import (
    ENCRYPTED_REASONING,
    CallRoute,
    call_routes,
    codex_thread_key,
    response_echo,
    summary_mode,
    to_conversation,
)
from .schema import ResponsesRequest
from .stream import ResponseStream, new_id


@dataclass(frozen=True)
class ResponsesOptions:
    """What the encoder needs: the wire request, and what parsing learned of its tools
    (each model-facing name's item type, bare name and namespace)."""

    wire: ResponsesRequest
    routes: dict[str, CallRoute]


class OpenAIResponses:
    name = "openai_responses"
    errors = ERRORS
    call_id_prefix = "call_"

    def parse(self, body: Any, context: RequestContext) -> ParsedRequest[ResponsesOptions]:
        wire = validate(ResponsesRequest, body)
        headers = context.headers
        conversation = to_conversation(
            wire,
            replay=context.replay,
            session_key=headers.get("session_id") or headers.get("session-id"),
            thread_key=codex_thread_key(headers),
        )
        options = ResponsesOptions(wire, call_routes(wire, conversation))
        return ParsedRequest(conversation, wire.model, bool(wire.stream), options)

    def encoder(self, request: ParsedRequest[ResponsesOptions], context: RequestContext) -> ResponseStream:
        wire = request.options.wire
        return ResponseStream(
            new_id("resp"),
            response_echo(wire),
            created_at=int(time.time()),
            replay=context.replay,
            routes=request.options.routes,
            summary=summary_mode(wire),
            include_encrypted_reasoning=ENCRYPTED_REASONING in (wire.include or []),
            dispatch=context.dispatch and request.stream,
            clock=lambda: int(time.time()),
        )


SPOKE = OpenAIResponses()
