"""What a request passes before a route reads it: authentication, the body's size,
JSON and nesting limits, and the tool count."""

from __future__ import annotations

import hmac
from typing import Any

from starlette.requests import HTTPConnection, Request
from starlette.types import Scope

from ..apis.errors import invalid_request
from ..faults import ApiError, Fault, JsonTooDeep
from ..wire_json import loads
from .offload import Offload, free_in_pieces
from .state import ServerState

# Where a request's headers are kept as a dict once made (an ASGI extension key).
HEADERS_KEY = "tokenyard.headers"


def header_map(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name, made once per request (the request
    guard makes them first) and read from there by every step after it. A repeated
    name has its first value, as Starlette's `Headers` reads it. Starlette's
    `Headers.get` of an absent name walks the list and raises KeyError inside; a
    request asks for ~11 absent names."""
    headers: dict[str, str] | None = scope.get(HEADERS_KEY)
    if headers is None:
        raw = scope["headers"]
        headers = scope[HEADERS_KEY] = {k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(raw)}
    return headers


def check_auth(request: HTTPConnection, state: ServerState) -> None:
    key = state.config.api_key
    if not key:
        return
    headers = header_map(request.scope)
    given = headers.get("x-api-key")
    bearer = headers.get("authorization", "")
    if not given and bearer.lower().startswith("bearer "):
        given = bearer[7:].strip()
    if not given or not hmac.compare_digest(given.encode(), key.encode()):
        raise ApiError(Fault.AUTHENTICATION, "invalid x-api-key or bearer token")


# More tools than one request may carry: Anthropic's tool search takes a catalog of at
# most 10,000, and each tool costs validation and rendering time and memory.
MAX_TOOLS = 10_000


# Tools freed this many at a time (~1 ms each): 60,000 decoded tools freed at once,
# wherever their body's last reference died, held the GIL for ~80 ms.
FREE_TOOLS = 1024


def check_tool_count(body: Any) -> None:
    """Refuse a body with more than `MAX_TOOLS` tools before it is validated. A
    refused body's tools are freed here, a slice at a time: run this where the
    body is large, off the event loop (`Offload.run_if_large`)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return
    # A Responses namespace holds its functions in `tools`: each counts.
    namespaces = [t["tools"] for t in tools if isinstance(t, dict) and isinstance(t.get("tools"), list)]
    count = len(tools) - len(namespaces) + sum(len(functions) for functions in namespaces)
    if count > MAX_TOOLS:
        for functions in namespaces:
            free_in_pieces(functions, FREE_TOOLS)
        free_in_pieces(tools, FREE_TOOLS)
        raise invalid_request(f"tools: {count:,} tools; at most {MAX_TOOLS:,} are served in one request", "tools")


async def read_json(request: Request, limit: int, offload: Offload | None = None) -> tuple[Any, int]:
    """The request's JSON body, at most `limit` bytes, and its size; a large body is
    parsed off the event loop when `offload` is given."""
    declared = header_map(request.scope).get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(Fault.REQUEST_TOO_LARGE, f"request body exceeds {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(Fault.REQUEST_TOO_LARGE, f"request body exceeds {limit} bytes")
    return await decode_json(body, offload), len(body)


async def decode_json(data: str | bytes | bytearray, offload: Offload | None = None) -> Any:
    """A request body or message as JSON by wire_json's rules, off the event loop
    when large and `offload` is given; what is not JSON is a 400."""
    try:
        return await offload.run_if_large(len(data), loads, data) if offload is not None else loads(data)
    except JsonTooDeep as error:
        raise invalid_request(f"request body is nested more than {error.limit} levels deep") from None
    except ValueError as error:
        raise ApiError(Fault.INVALID_JSON, f"request body is not valid JSON: {error}") from error
