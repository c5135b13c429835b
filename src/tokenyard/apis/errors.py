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
