"""What went wrong, said once for every API.

Any exception a request can end in is first named as one `Fault` (`fault_of`); each
API's `errors.py` then has ONE table from faults to that API's status, `type`,
`code` and `param`, and its envelope. So the same fault always gives each API its
own correct answer, and the APIs never disagree on what happened.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..events import StreamError
from ..faults import (
    ApiError,
    EngineTimeout,
    Failure,
    Fault,
    OutputFormatViolation,
    PromptTooLong,
    ToolChoiceViolation,
)

log = logging.getLogger("tokenyard.apis")


def invalid_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(Fault.INVALID_REQUEST, message, param)


def not_found(message: str) -> ApiError:
    return ApiError(Fault.NOT_FOUND, message)


def validation_message(error: ValidationError) -> str:
    """A pydantic ValidationError as one readable line per problem."""
    lines = []
    for item in error.errors()[:8]:
        where = ".".join(str(p) for p in item.get("loc", ()))
        lines.append(f"{where}: {item.get('msg', 'invalid')}" if where else item.get("msg", "invalid"))
    return "; ".join(lines)


# Field names are snake_case; pydantic names union branches by type (`str`,
# `list[str]`, `NamedToolChoice`, `literal[…]`), which are not part of `param`.
_FIELD = re.compile(r"[a-z_][a-z0-9_]*")
_TYPE_TAGS = {"str", "int", "float", "bool"}


def validation_param(error: ValidationError) -> str | None:
    """The first offending field, dotted (`messages.0.content`), for `param`."""
    first = error.errors()[0].get("loc", ()) if error.errors() else ()
    path = [str(p) for p in first if isinstance(p, int) or (_FIELD.fullmatch(str(p)) and p not in _TYPE_TAGS)]
    return ".".join(path) or None


Wire = TypeVar("Wire", bound=BaseModel)


def validate(model: type[Wire], body: Any) -> Wire:
    """`body` as the API's request model; a violation names its field in `param`."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise fault_of(error) from error


def fault_of(error: BaseException) -> ApiError:
    """Any exception a request ended in, as an `ApiError`: ours declare their fault;
    pydantic's and json's are the client's; anything else is a bug of ours."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, ValidationError):
        return invalid_request(validation_message(error), validation_param(error))
    if isinstance(error, json.JSONDecodeError):
        return ApiError(Fault.INVALID_JSON, f"request body is not valid JSON: {error}")
    if isinstance(error, Failure):
        if error.fault is Fault.ENGINE_FAILED:
            log.warning("engine failed: %s", error)
        return ApiError(error.fault, error.public_message, error.param)
    log.error("unhandled error", exc_info=error)
    return ApiError(Fault.INTERNAL, "internal server error")


def engine_failed(message: str) -> ApiError:
    return ApiError(Fault.ENGINE_FAILED, message)


def stream_failure(error: StreamError) -> ApiError:
    """A generation that failed after it started, as its fault: a timeout, a prompt
    the engine found too long for its window (llama.cpp's slots), and a tool_choice
    and an output format the model broke have rows of their own; any other engine
    failure keeps the message the pipeline chose (never the engine's internals)."""
    if isinstance(error.cause, (EngineTimeout, PromptTooLong, ToolChoiceViolation, OutputFormatViolation)):
        return fault_of(error.cause)
    return engine_failed(error.message)


@dataclass(frozen=True)
class WireFault:
    """One row of an API's error table."""

    status: int
    type: str
    code: str | None = None
    param: str | None = None  # the default; a field the error itself names wins


# Seconds a client is told to wait before retrying an overloaded server.
RETRY_AFTER_SECONDS = 1


class ErrorTable:
    """One API's answer to every fault: `row()` for its fields, `body()` for its
    envelope. Every fault must have a row (checked when the table is built)."""

    def __init__(
        self,
        rows: Mapping[Fault, WireFault],
        envelope: Callable[[ApiError, WireFault], dict[str, Any]],
    ) -> None:
        missing = set(Fault) - set(rows)
        if missing:
            raise ValueError(f"error table misses {sorted(missing)}")
        self._rows = dict(rows)
        self._envelope = envelope

    def row(self, error: ApiError) -> WireFault:
        row = self._rows[error.fault]
        return WireFault(row.status, row.type, row.code, error.param or row.param)

    def body(self, error: ApiError) -> dict[str, Any]:
        return self._envelope(error, self.row(error))

    def status(self, error: ApiError) -> int:
        return self.row(error).status

    def headers(self, error: ApiError) -> dict[str, str]:
        """Response headers the refusal carries: when to retry an overloaded or
        rate-limited request (both SDKs honour `retry-after`)."""
        if error.fault in (Fault.OVERLOADED, Fault.RATE_LIMITED):
            return {"retry-after": str(RETRY_AFTER_SECONDS)}
        return {}


def openai_envelope(error: ApiError, row: WireFault) -> dict[str, Any]:
    """OpenAI's envelope, the same for Chat Completions, Responses and tokenize."""
    return {"error": {"message": error.message, "type": row.type, "param": row.param, "code": row.code}}


def openai_rows(conversation_param: str) -> dict[Fault, WireFault]:
    """The OpenAI shapes' table; `conversation_param` names the field that holds the
    conversation (`messages` for Chat Completions, `input` for Responses)."""
    return {
        Fault.INVALID_JSON: WireFault(400, "invalid_request_error"),
        Fault.INVALID_REQUEST: WireFault(400, "invalid_request_error"),
        Fault.AUTHENTICATION: WireFault(401, "invalid_request_error", "invalid_api_key"),
        Fault.PERMISSION: WireFault(403, "invalid_request_error", "permission_denied"),
        Fault.NOT_FOUND: WireFault(404, "invalid_request_error", "model_not_found"),
        Fault.METHOD_NOT_ALLOWED: WireFault(405, "invalid_request_error", "method_not_allowed"),
        Fault.UNSUPPORTED_MEDIA_TYPE: WireFault(415, "invalid_request_error", "unsupported_media_type"),
        Fault.HEADERS_TOO_LARGE: WireFault(431, "invalid_request_error", "headers_too_large"),
        Fault.REQUEST_TOO_LARGE: WireFault(413, "invalid_request_error", "request_too_large"),
        Fault.TEMPLATE_REJECTED: WireFault(400, "invalid_request_error", "invalid_prompt", conversation_param),
        Fault.CONTEXT_LENGTH_EXCEEDED: WireFault(
            400, "invalid_request_error", "context_length_exceeded", conversation_param
        ),
        Fault.RATE_LIMITED: WireFault(429, "rate_limit_error", "rate_limit_exceeded"),
        # OpenAI answers an overloaded server with 429, which its SDK retries.
        Fault.OVERLOADED: WireFault(429, "server_error", "overloaded"),
        Fault.ENGINE_FAILED: WireFault(502, "server_error"),
        # Both are failures of the server's side that a retry may cure; `server_error`
        # is the code Responses clients know for them (Codex retries it).
        Fault.ENGINE_TIMEOUT: WireFault(504, "server_error"),
        # The request was served; the model's answer broke its forced tool_choice. Not
        # a fault of ours (5xx): Groq's OpenAI-compatible answer, 400 `tool_use_failed`.
        Fault.TOOL_CHOICE_VIOLATION: WireFault(400, "invalid_request_error", "tool_use_failed"),
        # Likewise for an answer that broke the requested JSON format (Groq: 400
        # `json_validate_failed`).
        Fault.OUTPUT_FORMAT_VIOLATION: WireFault(400, "invalid_request_error", "json_validate_failed"),
        Fault.INTERNAL: WireFault(500, "server_error"),
    }
