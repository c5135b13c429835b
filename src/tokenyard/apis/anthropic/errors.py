"""Anthropic Messages: every fault's status and error `type`, in Anthropic's
envelope `{"type": "error", "error": {"type", "message"}}` (no code, no param)."""

from __future__ import annotations

from typing import Any

from ...faults import ApiError, Fault
from ..errors import ErrorTable, WireFault


def _envelope(error: ApiError, row: WireFault) -> dict[str, Any]:
    return {"type": "error", "error": {"type": row.type, "message": error.message}}


ERRORS = ErrorTable(
    {
        Fault.INVALID_JSON: WireFault(400, "invalid_request_error"),
        Fault.INVALID_REQUEST: WireFault(400, "invalid_request_error"),
        Fault.AUTHENTICATION: WireFault(401, "authentication_error"),
        Fault.PERMISSION: WireFault(403, "permission_error"),
        Fault.NOT_FOUND: WireFault(404, "not_found_error"),
        Fault.METHOD_NOT_ALLOWED: WireFault(405, "invalid_request_error"),
        Fault.UNSUPPORTED_MEDIA_TYPE: WireFault(415, "invalid_request_error"),
        Fault.HEADERS_TOO_LARGE: WireFault(431, "invalid_request_error"),
        Fault.REQUEST_TOO_LARGE: WireFault(413, "request_too_large"),
        Fault.TEMPLATE_REJECTED: WireFault(400, "invalid_request_error"),
        # Claude Code compacts its history on a 400 whose message says "prompt is too long".
        Fault.CONTEXT_LENGTH_EXCEEDED: WireFault(400, "invalid_request_error"),
        Fault.RATE_LIMITED: WireFault(429, "rate_limit_error"),
        Fault.OVERLOADED: WireFault(529, "overloaded_error"),
        Fault.ENGINE_FAILED: WireFault(502, "api_error"),
        # Anthropic's own answer to a request that timed out (the SDK's 504 class).
        Fault.ENGINE_TIMEOUT: WireFault(504, "timeout_error"),
        # The model's answer broke a forced tool_choice: as the OpenAI table (400).
        Fault.TOOL_CHOICE_VIOLATION: WireFault(400, "invalid_request_error"),
        # The answer broke the requested output format: as the OpenAI table (400).
        Fault.OUTPUT_FORMAT_VIOLATION: WireFault(400, "invalid_request_error"),
        Fault.INTERNAL: WireFault(500, "api_error"),
    },
    _envelope,
)
