"""Errors every API spoke maps to its own envelope and status."""

from __future__ import annotations


class ApiError(Exception):
    """A request we refuse. `kind` is the Anthropic error type; the OpenAI spokes map
    it to their own names."""

    def __init__(self, status: int, kind: str, message: str, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.param = param


def invalid_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, "invalid_request_error", message, param)


def not_found(message: str) -> ApiError:
    return ApiError(404, "not_found_error", message)


def validation_message(error) -> str:
    """A pydantic ValidationError as one readable line per problem."""
    lines = []
    for item in error.errors()[:8]:
        where = ".".join(str(p) for p in item.get("loc", ()))
        lines.append(f"{where}: {item.get('msg', 'invalid')}" if where else item.get("msg", "invalid"))
    return "; ".join(lines)


# Anthropic error types → OpenAI's (type, code).
_OPENAI_KINDS = {
    "invalid_request_error": ("invalid_request_error", None),
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "permission_error": ("invalid_request_error", "permission_denied"),
    "not_found_error": ("invalid_request_error", "model_not_found"),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "rate_limit_error": ("rate_limit_error", "rate_limit_exceeded"),
    "api_error": ("server_error", None),
    "overloaded_error": ("server_error", "overloaded"),
}


def openai_error_body(error: ApiError) -> dict:
    """The OpenAI envelope: `{"error": {message, type, param, code}}`."""
    kind, code = _OPENAI_KINDS.get(error.kind, ("server_error", None))
    return {"error": {"message": error.message, "type": kind, "param": error.param, "code": code}}
