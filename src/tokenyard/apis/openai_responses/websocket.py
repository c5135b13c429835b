"""Responses over a WebSocket (sans-IO): what Codex speaks to a provider whose
catalog entry says `prefer_websockets` (codex-rs `responses_websocket.rs`; vLLM
0.33 serves it too).

The client opens a WebSocket on the Responses path and sends JSON text messages:
`response.create` (the body of `POST /v1/responses` plus `type`, and two fields of
its own: `generate: false` asks for a warm-up that validates and answers at once
without generating; `previous_response_id` names the last response completed on
this connection, and `input` then holds only the items after that response's
output), `response.processed` (an acknowledgement; nothing to answer) and
`response.steer` (OpenAI's mid-turn steering: more user input for the response in
flight). The server answers each create with the same events the SSE stream
carries, one JSON text message each, up to the terminal `response.completed`,
`response.incomplete` or `response.failed`. A request refused before its stream
starts is one error message: `{"type": "error", "status": <HTTP status>, "error":
{...}}`, which Codex reads as that HTTP status.

Steering, as OpenAI's API defines it: `response.steer` {previous_response_id: the
response in flight, input: a string or user messages} is answered
`response.steer.accepted` (numbered within that response's events) and queued. The
server stops the response at its next output-item boundary (`response.incomplete`,
reason `steered`; one that finishes first stays `completed`). If it ended waiting
for client tool output, each queued steer is announced once with
`response.steer.pending` (the `required_input` stubs) and joins the input of the
client's next create that continues that response, right after the tool outputs
(OpenAI puts it before them; chat templates need a call's result right after the
call). Otherwise an automatic successor response (the original request's settings,
its input the whole conversation so far plus the steer input) streams at once. A
steer that cannot be applied is `response.steer.failed` with OpenAI's codes. Codex
(0.169) never sends `response.steer`: it steers on its side, with its next create.

`ResponsesSocket` is one connection's state: the last completed response's whole
input and output (so a later create's `previous_response_id` is expanded back into
the whole conversation: the server stays stateless across connections), whether a
response is in flight (one at a time, as Codex sends them), and the steers queued.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ...faults import ApiError, Fault
from ..errors import fault_of, invalid_request
from .errors import ERRORS

CREATE = "response.create"
PROCESSED = "response.processed"
STEER = "response.steer"
# The `incomplete_details.reason` of a response stopped for a steer.
STEERED = "steered"
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
    # Events to send before serving it: steers queued on a response this create does
    # not continue, which can no longer be applied (`response.steer.failed`).
    notices: list[dict[str, Any]] = field(default_factory=list)


# Accepted steers a response may hold before more are refused (`too_many_pending_steers`).
MAX_STEERS = 16
# The fields a steer message may carry (OpenAI accepts these and nothing else).
STEER_FIELDS = frozenset({"type", "previous_response_id", "input"})
# Content parts a steer's user message may hold.
STEER_PARTS = frozenset({"input_text", "input_image", "input_file"})
# A client tool call → the stub of the output the client owes for it.
OWED = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}


@dataclass
class Steer:
    id: str
    parent: str  # the response it steers
    input: Any  # as sent, returned in a failure
    items: list[Any]  # as conversation items
    announced: bool = False  # its `response.steer.pending` was sent


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
        self._body: dict[str, Any] = {}  # the request in flight (a successor inherits its settings)
        self._active: str | None = None  # the id of the response in flight, once created
        self._last_terminal: dict[str, Any] = {}  # the last response's terminal event
        self._steers: list[Steer] = []  # accepted, not yet applied
        self._committing: list[Steer] = []  # applied to the create in flight, until its response is created
        self._sequence = -1  # the last sequence number sent for the response in flight
        self._shift = 0  # events this socket inserted into that response's numbering

    def receive(self, message: Any, size: int) -> Create | list[dict[str, Any]] | None:
        """One client message, its JSON decoded (wire_json), of `size` characters →
        the create to serve, the events that answer a steer, or None for an
        acknowledgement. Raises `ApiError` for anything else."""
        if not isinstance(message, dict):
            raise invalid_request("a message must be a JSON object")
        kind = message.get("type")
        if kind == PROCESSED:
            return None
        if kind == STEER:
            return self._steer(message)
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
            # Steers waiting on this response's tool output come right after the tool
            # outputs that open the input, in the order sent (OpenAI puts them before;
            # chat templates need a call's result right after the call).
            self._committing = [steer for steer in self._steers if steer.parent == previous]
            self._steers = [steer for steer in self._steers if steer.parent != previous]
            queued = [item for steer in self._committing for item in steer.items]
            owed = next((n for n, item in enumerate(items) if not _is_output(item)), len(items))
            items = [*self._last_items, *items[:owed], *queued, *items[owed:]]
        notices = self._drop_steers("response_not_active", "the response it steered was not continued")
        return self._start(body, size, generate, previous, new, items, notices)

    def _start(
        self,
        body: dict[str, Any],
        size: int,
        generate: bool,
        previous: str | None,
        new: int,
        items: list[Any],
        notices: list[dict[str, Any]],
    ) -> Create:
        body["input"] = items
        self._input, self._body = items, body
        self.busy = True
        return Create(body, size, generate, previous, new, notices)

    def outgoing(self, event: dict[str, Any]) -> dict[str, Any]:
        """Every event sent for the response in flight, as it goes on the wire: its
        sequence number shifted past the events this socket inserted (a steer's
        acceptance). A terminal one frees the connection, and a completed response
        becomes the one a next create may continue."""
        kind = event.get("type")
        response = event.get("response") or {}
        if kind == "response.created":  # the commit point of the steers it carries
            self._active, self._shift, self._committing = response.get("id"), 0, []
        if isinstance(event.get("sequence_number"), int):
            event = {**event, "sequence_number": event["sequence_number"] + self._shift}
            self._sequence = event["sequence_number"]
        if kind not in TERMINAL:
            return event
        self.busy = False
        self._active = None
        self._last_terminal = event
        if _continuable(event) and isinstance(response.get("id"), str):
            self._last_id = response["id"]
            self._last_items = [*self._input, *(response.get("output") or [])]
        else:
            self._last_id, self._last_items = None, []
        self._input = []
        return event

    def steered(self) -> bool:
        """Whether the response in flight has steers queued: the server stops it at the
        next output-item boundary (`response.incomplete`, reason STEERED)."""
        return self._active is not None and any(steer.parent == self._active for steer in self._steers)

    def after_terminal(self) -> Create | list[dict[str, Any]]:
        """What the steers queued on the response that just ended call for: an automatic
        successor to serve, or the events to send (`response.steer.pending` where the
        response waits for client tool output; `response.steer.failed` where it did not
        complete). Nothing queued: []."""
        response = self._last_terminal.get("response") or {}
        parent = response.get("id")
        steers = [steer for steer in self._steers if steer.parent == parent]
        if not steers:
            return []
        if not _continuable(self._last_terminal):
            return self._drop_steers("successor_creation_failed", "the steered response did not complete")
        output = response.get("output") or []
        owed = [_stub(item) for item in output if isinstance(item, dict) and item.get("type") in OWED]
        if owed:
            pending = []
            for steer in steers:
                if not steer.announced:
                    steer.announced = True
                    pending.append(self._event("response.steer.pending", steer, reason="waiting_for_required_input"))
                    pending[-1]["required_input"] = owed
            return pending
        self._steers, self._committing = [], steers
        items = [*self._last_items, *(item for steer in steers for item in steer.items)]
        return self._start(dict(self._body), 0, True, parent, len(items) - len(self._last_items), items, [])

    def failed(self, error: BaseException) -> list[dict[str, Any]]:
        """The error message for the create in flight, refused before its stream
        started, then the steers it carried, returned: the connection is free again,
        and no response may continue from it."""
        self.busy = False
        self._active, self._last_terminal = None, {}
        self._last_id, self._last_items, self._input = None, [], []
        refused, self._committing = self._committing, []
        returned = [self._failure(steer, "successor_creation_failed", "the response was refused") for steer in refused]
        return [error_message(error), *returned]

    def _steer(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        parent = message.get("previous_response_id")
        given = message.get("input")
        target = parent if isinstance(parent, str) else ""
        steer = Steer("", target, given, [])
        extra = sorted(set(message) - STEER_FIELDS)
        if extra:
            return [self._failure(steer, "invalid_input", f"unsupported steer field {extra[0]!r}")]
        if not isinstance(parent, str):
            return [self._failure(steer, "invalid_input", "previous_response_id must be a response id")]
        items = _steer_items(given)
        if items is None:
            invalid = "input must be a string or a non-empty list of user messages with text, image or file parts"
            return [self._failure(steer, "invalid_input", invalid)]
        steer.items = items
        waiting = any(s.parent == parent for s in self._steers) and self._active is None
        if parent != self._active and not waiting:
            if parent == self._last_id:
                return [self._failure(steer, "response_already_completed", "the response has already completed")]
            return [self._failure(steer, "response_not_found", f"no response {parent!r} is active on this connection")]
        if sum(s.parent == parent for s in self._steers) >= MAX_STEERS:
            return [self._failure(steer, "too_many_pending_steers", f"at most {MAX_STEERS} steers may be pending")]
        steer.id = "steer_" + uuid.uuid4().hex
        self._steers.append(steer)
        return [self._event("response.steer.accepted", steer)]

    def _drop_steers(self, code: str, message: str) -> list[dict[str, Any]]:
        dropped, self._steers = self._steers, []
        return [self._failure(steer, code, message) for steer in dropped]

    def _failure(self, steer: Steer, code: str, message: str) -> dict[str, Any]:
        event = self._event("response.steer.failed", steer, returned=True)
        event["error"] = {"type": "invalid_request_error", "code": code, "message": message}
        return event

    def _event(self, kind: str, steer: Steer, returned: bool = False, **fields: Any) -> dict[str, Any]:
        """A steering event, numbered after the last event sent: within a response in
        flight, the response's later events are shifted past it. A failure returns the
        input (`returned`); an id is named once one was given."""
        self._sequence += 1
        if self._active is not None:
            self._shift += 1
        about: dict[str, Any] = {"id": steer.id} if steer.id else {}
        about["previous_response_id"] = steer.parent
        if returned:
            about["input"] = steer.input
        return {"type": kind, "sequence_number": self._sequence, "steer": about, **fields}


def _steer_items(given: Any) -> list[Any] | None:
    """A steer's input as conversation items: a string, or a non-empty list of user
    messages (`type` optional, else `message`; content a string or input parts);
    None where it is anything else."""
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}] if given else None
    if not isinstance(given, list) or not given:
        return None
    items = []
    for item in given:
        if not isinstance(item, dict) or item.get("role") != "user" or item.get("type", "message") != "message":
            return None
        if set(item) - {"type", "role", "content"}:
            return None
        content = item.get("content")
        parts_ok = isinstance(content, list) and all(
            isinstance(part, dict) and part.get("type") in STEER_PARTS for part in content
        )
        if not (isinstance(content, str) or (parts_ok and content)):
            return None
        items.append({**item, "type": "message"})
    return items


def _continuable(terminal: dict[str, Any]) -> bool:
    """A response a next create (or a steered successor) may continue: a completed one,
    or one stopped for a steer."""
    if terminal.get("type") == "response.completed":
        return True
    details = (terminal.get("response") or {}).get("incomplete_details") or {}
    return terminal.get("type") == "response.incomplete" and details.get("reason") == STEERED


def _is_output(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in OWED.values()


def _stub(item: dict[str, Any]) -> dict[str, Any]:
    """The `required_input` stub for a client tool call: the output the client owes."""
    stub = {"type": OWED[item["type"]], "call_id": item.get("call_id")}
    if item["type"] == "function_call":
        stub["name"] = item.get("name")
    return stub


def lifetime_error(minutes: float) -> dict[str, Any]:
    """The message a connection gets when its lifetime is over, just before it is
    closed (OpenAI's, which Codex reads as "reconnect and resend in full")."""
    message = (
        f"Responses websocket connection limit reached ({minutes:g} minutes). "
        "Create a new websocket connection to continue."
    )
    error = {"type": "invalid_request_error", "code": "websocket_connection_limit_reached", "message": message}
    return {"type": "error", "status": 400, "error": {**error, "param": None}}


def error_message(error: BaseException) -> dict[str, Any]:
    """`{"type": "error", "status", "error"}`: the OpenAI envelope with the HTTP status
    the same refusal would have had (Codex reads the status)."""
    fault = fault_of(error)
    body = ERRORS.body(fault)
    status = ERRORS.status(fault)
    if isinstance(fault, SocketError):
        body["error"]["code"], status = fault.code, fault.status
    return {"type": "error", "status": status, **body}
