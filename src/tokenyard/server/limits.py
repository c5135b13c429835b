"""What is refused before any route runs, and the HTTP server's own limits.

`RequestGuard` (ASGI middleware, outermost): with no API key, only loopback `Host`
names are served (DNS rebinding: a web page whose name resolves to 127.0.0.1 sends
its own name as Host); cross-origin browser requests are refused unless
`--allowed-origins` names the origin, which then gets proper CORS (preflight
included); POST bodies must be declared JSON (a page can send a cross-origin
`text/plain` POST without a preflight); and the number of header lines is capped.

`BoundedHttpToolsProtocol` and `server_options`: uvicorn on httptools with a cap on
the request head's size (a 128 MiB header is refused after the cap, not read), a
deadline for a request head to arrive (slowloris: idle partial heads are closed), a
deadline for a stalled response write (a client that stops reading), a closed
connection after a request framed by both Content-Length and Transfer-Encoding, a
keep-alive timeout and a connection limit; `raise_open_file_limit` lifts the soft fd limit to
the hard one so that many idle connections can not exhaust the descriptors that
real requests need.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import ipaddress
import json
import logging
import resource
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..apis.anthropic.errors import ERRORS as ANTHROPIC_ERRORS
from ..apis.errors import ErrorTable
from ..apis.openai_chat.errors import ERRORS as OPENAI_ERRORS
from ..faults import ApiError, Fault
from ..settings import ServeSettings
from .intake import header_map

log = logging.getLogger("tokenyard.server.limits")

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})
ALLOWED_METHODS = "GET, POST, OPTIONS"
# Response headers a browser page may read across origins.
EXPOSED_HEADERS = "retry-after, request-id, x-request-id"


@dataclass(frozen=True)
class GuardConfig:
    # With an API key the server is meant to be reachable: Host is not checked.
    api_key_set: bool = False
    allowed_hosts: frozenset[str] = frozenset()  # extra Host names; "*" allows any
    allowed_origins: frozenset[str] = frozenset()  # browser origins; "*" allows any
    max_header_count: int = 256


def error_table(path: str) -> ErrorTable:
    """The error table of the API that owns `path`: Anthropic's for /v1/messages,
    OpenAI's for everything else."""
    return ANTHROPIC_ERRORS if path.startswith("/v1/messages") else OPENAI_ERRORS


async def send_error(send: Send, path: str, error: ApiError, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    table = error_table(path)
    body = json.dumps(table.body(error)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": table.status(error),
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((k.encode(), v.encode()) for k, v in table.headers(error).items()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def deny_websocket(scope: Scope, send: Send, path: str, error: ApiError) -> None:
    """Refuse a WebSocket handshake: an HTTP answer in the API's envelope where the
    server offers the ASGI denial-response extension (uvicorn does), else a close
    before accepting, which the server answers with a 403."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008, "reason": error.message[:120]})
        return
    table = error_table(path)
    body = json.dumps(table.body(error)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "websocket.http.response.start", "status": table.status(error), "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


# glibc's M_MMAP_THRESHOLD (mallopt) and the value it is held at.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 1024 * 1024


def bound_heap_retention() -> None:
    """Keep the process from staying near one large request's peak RSS. glibc serves
    blocks over its mmap threshold with their own mmap, given back when freed, but
    after freeing one it raises the threshold to the block's size (up to 32 MiB), so
    a 20 MB body's next buffers come from the heap and stay there once freed. Fixing
    the threshold (at 1 MiB: an ordinary request's buffers stay on the heap, reused)
    stops that. (`malloc_trim` after each large request did the same job, holding
    glibc's arena lock, and so every thread's malloc, for up to 0.1 s.)"""
    if _libc is not None:
        _libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def _load_libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version") else None
    except OSError:
        return None  # not glibc (musl, macOS): its own policy stands


_libc = _load_libc()


@lru_cache(maxsize=256)  # every request's Host is checked; clients send a handful
def is_loopback_host(host: str) -> bool:
    """`host` is a Host header value (name or address, optional port)."""
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:8000
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """The Host header without its port."""
    name = host.strip().lower()
    if name.startswith("["):
        return name[: name.find("]") + 1] if "]" in name else name
    return name.rsplit(":", 1)[0] if name.count(":") == 1 else name


def is_json_content_type(value: str) -> bool:
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class RequestGuard:
    """Host, Origin/CORS, content-type and header-count checks, before any route
    (and so before authentication). A WebSocket handshake passes the same Host,
    Origin and header-count checks (a browser page may open a WebSocket to any
    origin: only the server can refuse it)."""

    def __init__(self, app: ASGIApp, config: GuardConfig):
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        websocket = scope["type"] == "websocket"

        async def refuse(error: ApiError, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
            if websocket:
                await deny_websocket(scope, send, path, error)
            else:
                await send_error(send, path, error, headers)

        raw = scope["headers"]
        if len(raw) > self.config.max_header_count:
            message = f"more than {self.config.max_header_count} headers"
            await refuse(ApiError(Fault.HEADERS_TOO_LARGE, message))
            return
        headers = header_map(scope)
        host = headers.get("host", "")
        if not self.config.api_key_set and host and not self._host_allowed(host):
            message = (
                f"Host {host_name(host)!r} is not served without an API key; "
                "start tokenyard with --allowed-hosts NAME or --api-key"
            )
            await refuse(ApiError(Fault.PERMISSION, message))
            return
        origin = headers.get("origin")
        cross_site = headers.get("sec-fetch-site") in ("cross-site", "same-site")
        cors: list[tuple[bytes, bytes]] = []
        if (origin is not None and not self._same_origin(origin, host)) or (origin is None and cross_site):
            if origin is None or not self._origin_allowed(origin):
                message = (
                    f"cross-origin request from {origin or 'another site'} refused; allow it with --allowed-origins"
                )
                await refuse(ApiError(Fault.PERMISSION, message))
                return
            if websocket:  # an allowed origin; CORS headers mean nothing to a WebSocket
                await self.app(scope, receive, send)
                return
            cors = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
                (b"vary", b"Origin"),
            ]
            if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
                await self._preflight(send, headers, cors)
                return
        if websocket:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and not is_json_content_type(headers.get("content-type", "")):
            given = headers.get("content-type") or "none"
            message = f"content-type must be application/json (got {given})"
            error = ApiError(Fault.UNSUPPORTED_MEDIA_TYPE, message)
            await send_error(send, path, error, cors)
            return
        if not cors:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *cors]}
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def _host_allowed(self, host: str) -> bool:
        allowed = self.config.allowed_hosts
        return is_loopback_host(host) or "*" in allowed or host_name(host) in allowed

    def _origin_allowed(self, origin: str) -> bool:
        allowed = self.config.allowed_origins
        return "*" in allowed or origin.rstrip("/").lower() in allowed

    @staticmethod
    def _same_origin(origin: str, host: str) -> bool:
        origin = origin.rstrip("/").lower()
        return bool(host) and origin in (f"http://{host.lower()}", f"https://{host.lower()}")

    @staticmethod
    async def _preflight(send: Send, headers: dict[str, str], cors: list[tuple[bytes, bytes]]) -> None:
        requested = headers.get("access-control-request-headers", "")
        await send(
            {
                "type": "http.response.start",
                "status": 204,
                "headers": [
                    *cors,
                    (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
                    (b"access-control-allow-headers", requested.encode("latin-1")),
                    (b"access-control-max-age", b"600"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def normalize_origins(origins: Iterable[str]) -> frozenset[str]:
    return frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip())


def normalize_hosts(hosts: Iterable[str]) -> frozenset[str]:
    return frozenset(host_name(h) if h.strip() != "*" else "*" for h in hosts if h.strip())


# ---------------------------------------------------------------- the HTTP server


# The largest WebSocket message (a Responses `response.create` is a request body).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools (llhttp) protocol with the limits h11 would give, and two
    deadlines. Why httptools: per streamed request it costs about half a millisecond
    less CPU than h11, and at 32 streams it serves ~30% more requests per second
    (benchmarks/gateway_overhead.py, measured side by side).

    - The request head is capped at `max_header_bytes`: the bytes received since the
      previous request ended count until its head is complete; past the cap the
      connection answers 431 and closes, so a 128 MiB header is never read.
    - A head must arrive within `header_timeout` of the connection opening (or of
      the previous response): idle partial heads (slowloris) are closed.
    - A response write stalled for `send_timeout` (the client stopped reading, its
      socket buffer full) cuts the connection: the response's sends return, the app
      sees `http.disconnect`, and the generation's slot is free again.
    - A request framed by both Content-Length and Transfer-Encoding is read by its
      chunked framing (llhttp refuses it unless told otherwise) and its connection
      is closed after the response (RFC 9112 §6.1: it may be a smuggling attempt)."""

    # The serve settings of these names: `server_options` makes the subclass that sets them.
    max_header_bytes: int
    header_timeout: float
    send_timeout: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parser.set_dangerous_leniencies(lenient_chunked_length=True)
        self._in_head = True
        self._head_bytes = 0
        self._head_deadline: asyncio.TimerHandle | None = None
        self._send_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn's signature
        super().connection_made(transport)
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.max_header_bytes and not self.transport.is_closing():
            self._refuse_head()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._cancel_head_deadline()
        names = {name for name, _ in self.headers}
        super().on_headers_complete()
        if b"content-length" in names and b"transfer-encoding" in names:
            log.info("a request framed by both Content-Length and Transfer-Encoding; closing after its response")
            self.cycle.keep_alive = False

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._head_bytes = True, 0  # the next request's head starts here

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_deadline()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_deadline is None:
            self._send_deadline = self.loop.call_later(self.send_timeout, self._send_timed_out)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_send_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        self._cancel_send_deadline()
        super().connection_lost(exc)

    def _refuse_head(self) -> None:
        """431 in OpenAI's envelope (no path is known yet), then the connection closes."""
        message = f"request head over {self.max_header_bytes} bytes"
        error = ApiError(Fault.HEADERS_TOO_LARGE, message)
        body = json.dumps(OPENAI_ERRORS.body(error)).encode()
        head = [
            f"HTTP/1.1 {OPENAI_ERRORS.status(error)} Request Header Fields Too Large",
            "content-type: application/json",
            f"content-length: {len(body)}",
            "connection: close",
        ]
        self.transport.write("\r\n".join([*head, "", ""]).encode() + body)
        self.transport.close()

    def _send_timed_out(self) -> None:
        self._send_deadline = None
        log.info("a client read nothing of its response for %.0f s; closed its connection", self.send_timeout)
        self.transport.abort()  # close() would wait to flush what the client never reads

    def _cancel_send_deadline(self) -> None:
        if self._send_deadline is not None:
            self._send_deadline.cancel()
            self._send_deadline = None

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self._in_head and not self.transport.is_closing():
            log.info("closed a connection that sent no complete request head in %.0f s", self.header_timeout)
            self.transport.close()


def server_options(settings: ServeSettings) -> dict[str, Any]:
    """uvicorn.Config keyword arguments that enforce the HTTP limits among the serve
    `settings` (settings.py declares each one: its default, flag and meaning)."""
    bounds = {
        "max_header_bytes": settings.max_header_bytes,
        "header_timeout": settings.header_timeout,
        "send_timeout": settings.send_timeout,
    }
    return {
        "http": type("LimitedHttpToolsProtocol", (BoundedHttpToolsProtocol,), bounds),
        "timeout_keep_alive": settings.keep_alive_timeout,
        "limit_concurrency": settings.limit_concurrency,
        "ws_max_size": MAX_MESSAGE_BYTES,
        "ws_ping_interval": settings.ws_ping_interval or None,
        "ws_ping_timeout": settings.ws_ping_interval or None,
    }


def raise_open_file_limit() -> tuple[int, int]:
    """Lift the soft RLIMIT_NOFILE to the hard limit; returns (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft, soft
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]
