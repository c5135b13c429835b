"""Responses over a WebSocket (sans-IO): what Codex speaks to a provider whose
catalog entry says `prefer_websockets` (codex-rs `responses_websocket.rs`; vLLM
0.33 serves it too).

The client opens a WebSocket on the Responses path and sends JSON text messages:
`response.create` (the body of `POST /v1/responses` plus `type`, and two fields of
its own: `generate: false` asks for a warm-up that validates and answers at once
without generating; `previous_response_id` names the last response completed on
this connection, and `input` then holds only the items after that response's
output) and `response.processed` (an acknowledgement; nothing to answer). The
server answers each create with the same events the SSE stream carries, one JSON
text message each, up to the terminal `response.completed`, `response.incomplete`
or `response.failed`. A request refused before its stream starts is one error
message: `{"type": "error", "status": <HTTP status>, "error": {...}}`, which Codex
reads as that HTTP status.

`ResponsesSocket` is one connection's state: the last completed response's whole
input and output (so a later create's `previous_response_id` is expanded back into
the whole conversation: the server stays stateless across connections), and
whether a response is in flight (one at a time, as Codex sends them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...faults import ApiError, Fault
from ..errors import fault_of, invalid_request
from .errors import ERRORS

CREATE = "response.create"
PROCESSED = "response.processed"
# Events that end a response: after one, the connection takes the next create.
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


@dataclass(frozen=True)
class Create:
    """A `response.create`: the Responses body to serve (the whole input), and
    whether to generate at all."""

    body: dict[str, Any]
    size: int  # the message's length, for the offload decision a body's size drives
    generate: bool
    continues: str | None = None  # the previous response it continues, its input only the new items
    new_items: int = 0


class SocketError(ApiError):
    """An invalid request with a `code` of its own (the socket's protocol, not a request
    field), and the HTTP status OpenAI gives it (409 for a busy connection)."""

    def __init__(self, message: str, code: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(Fault.INVALID_REQUEST, message, param)
        self.code = code
        self.status = status


class ResponsesSocket:
    def __init__(self) -> None:
        self.busy = False
        self._last_id: str | None = None
        self._last_items: list[Any] = []  # the last completed response's input, then its output
        self._input: list[Any] = []  # the whole input of the response in flight

    def receive(self, message: Any, size: int) -> Create | None:
        """One client message, its JSON decoded (wire_json), of `size` characters →
        the create to serve, or None for an acknowledgement. Raises `ApiError` for
        anything else."""
        if not isinstance(message, dict):
            raise invalid_request("a message must be a JSON object")
        kind = message.get("type")
        if kind == PROCESSED:
            return None
        if kind != CREATE:
            raise SocketError(f"unknown message type {kind!r}; expected {CREATE!r}", "unknown_event_type", "type")
        if self.busy:
            busy = "a response is already in progress on this connection; wait for its terminal event"
            raise SocketError(busy, "conversation_already_has_active_response", status=409)
        body = {k: v for k, v in message.items() if k not in ("type", "generate", "previous_response_id")}
        body["stream"] = True  # its events are this connection's messages
        generate = message.get("generate") is not False
        given = body.get("input", [])
        items = [{"type": "message", "role": "user", "content": given}] if isinstance(given, str) else given
        if not isinstance(items, list):
            raise invalid_request("input must be a string or a list of items", "input")
        previous = message.get("previous_response_id")
        if previous is not None:
            if previous != self._last_id:
                # Only the last completed response of this connection is kept (as OpenAI and vLLM do).
                self._last_id, self._last_items = None, []
                unknown = f"previous response {previous!r} is not the last completed response on this connection"
                raise SocketError(unknown, "previous_response_not_found", "previous_response_id")
        new = len(items)
        if previous is not None:
            items = [*self._last_items, *items]
        body["input"] = items
        self._input = items
        self.busy = True
        return Create(body, size, generate, previous, new)

    def sent(self, event: dict[str, Any]) -> None:
        """Every event sent for the response in flight; a terminal one frees the
        connection, and a completed response becomes the one a next create may continue."""
        kind = event.get("type")
        if kind not in TERMINAL:
            return
        self.busy = False
        response = event.get("response") or {}
        if kind == "response.completed" and isinstance(response.get("id"), str):
            self._last_id = response["id"]
            self._last_items = [*self._input, *(response.get("output") or [])]
        else:
            self._last_id, self._last_items = None, []
        self._input = []

    def failed(self, error: BaseException) -> dict[str, Any]:
        """The error message for the create in flight, refused before its stream
        started: the connection is free again, and no response may continue from it."""
        self.busy = False
        self._last_id, self._last_items, self._input = None, [], []
        return error_message(error)


def error_message(error: BaseException) -> dict[str, Any]:
    """`{"type": "error", "status", "error"}`: the OpenAI envelope with the HTTP status
    the same refusal would have had (Codex reads the status)."""
    fault = fault_of(error)
    body = ERRORS.body(fault)
    status = ERRORS.status(fault)
    if isinstance(fault, SocketError):
        body["error"]["code"], status = fault.code, fault.status
    return {"type": "error", "status": status, **body}
