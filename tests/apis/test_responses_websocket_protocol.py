"""The Responses WebSocket protocol (sans-IO): steering (`response.steer`), the
numbering of the events a steer inserts into a response, and the lifetime error."""

from __future__ import annotations

import pytest

from tokenyard.apis.errors import invalid_request
from tokenyard.apis.openai_responses.websocket import MAX_STEERS, Create, ResponsesSocket, lifetime_error

USER = {"type": "message", "role": "user", "content": "hi"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"}
SAID = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}


def create(socket: ResponsesSocket, **fields) -> Create:
    message = {"type": "response.create", "model": "m", "instructions": "be brief", "input": [USER], **fields}
    made = socket.receive(message, 10)
    assert isinstance(made, Create)
    return made


def run(socket: ResponsesSocket, rid: str, output: list, *, steer=None, terminal="response.completed") -> list[dict]:
    """The events of one response as they go on the wire, a steer sent after its
    `response.created` (its answer included, in wire order)."""
    wire = [socket.outgoing({"type": "response.created", "sequence_number": 0, "response": {"id": rid}})]
    if steer is not None:
        answer = socket.receive({"type": "response.steer", "previous_response_id": rid, **steer}, 10)
        assert isinstance(answer, list)
        wire += answer
    wire.append(socket.outgoing({"type": "response.in_progress", "sequence_number": 1, "response": {"id": rid}}))
    final = {"type": terminal, "sequence_number": 2, "response": {"id": rid, "output": output}}
    wire.append(socket.outgoing(final))
    return wire


def steer_text(text: str) -> dict:
    return {"input": text}


def test_a_steer_is_numbered_within_the_response_and_starts_a_successor():
    socket = ResponsesSocket()
    create(socket)
    wire = run(socket, "resp_1", [SAID], steer=steer_text("be shorter"))
    assert [e["type"] for e in wire] == [
        "response.created",
        "response.steer.accepted",
        "response.in_progress",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in wire] == [0, 1, 2, 3]
    accepted = wire[1]
    assert accepted["steer"]["previous_response_id"] == "resp_1" and accepted["steer"]["id"].startswith("steer_")
    assert set(accepted["steer"]) == {"id", "previous_response_id"}
    successor = socket.after_terminal()
    assert isinstance(successor, Create) and successor.generate and successor.continues == "resp_1"
    # The original request's settings; the whole conversation, then the steer.
    assert successor.body["instructions"] == "be brief" and successor.body["model"] == "m"
    assert successor.body["input"] == [USER, SAID, {"type": "message", "role": "user", "content": "be shorter"}]
    assert socket.busy
    # The successor's own events are numbered from 0 again, unshifted.
    assert [e["sequence_number"] for e in run(socket, "resp_2", [SAID])] == [0, 1, 2]
    assert socket.after_terminal() == []


def test_a_steer_waits_for_tool_output_and_joins_the_next_create_after_it():
    socket = ResponsesSocket()
    create(socket)
    message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "use ls -a"}]}
    run(socket, "resp_1", [CALL], steer={"input": [message]})
    [pending] = socket.after_terminal()
    assert pending["type"] == "response.steer.pending" and pending["reason"] == "waiting_for_required_input"
    assert pending["required_input"] == [{"type": "function_call_output", "call_id": "call_1", "name": "exec_command"}]
    assert set(pending["steer"]) == {"id", "previous_response_id"}
    assert socket.after_terminal() == []  # announced once
    # Another steer on the same waiting response is accepted too.
    [again] = socket.receive({"type": "response.steer", "previous_response_id": "resp_1", "input": "and -l"}, 10)
    assert again["type"] == "response.steer.accepted"
    output = {"type": "function_call_output", "call_id": "call_1", "output": "a b"}
    later = {"type": "message", "role": "user", "content": "thanks"}
    made = create(socket, input=[output, later], previous_response_id="resp_1")
    assert made.notices == []
    steered = [message, {"type": "message", "role": "user", "content": "and -l"}]
    assert made.body["input"] == [USER, CALL, output, *steered, later]


def test_steers_left_behind_by_a_create_that_does_not_continue_are_returned():
    socket = ResponsesSocket()
    create(socket)
    run(socket, "resp_1", [CALL], steer=steer_text("careful"))
    socket.after_terminal()
    made = create(socket)  # a fresh conversation
    [failed] = made.notices
    assert failed["type"] == "response.steer.failed" and failed["error"]["code"] == "response_not_active"
    assert failed["steer"]["input"] == "careful" and failed["steer"]["id"].startswith("steer_")


def test_a_steered_response_that_fails_returns_its_steers():
    socket = ResponsesSocket()
    create(socket)
    run(socket, "resp_1", [], steer=steer_text("careful"), terminal="response.failed")
    [failed] = socket.after_terminal()
    assert failed["error"]["code"] == "successor_creation_failed" and not socket.busy


@pytest.mark.parametrize(
    ("steer", "code"),
    [
        ({"previous_response_id": "resp_9", "input": "x"}, "response_not_found"),
        ({"previous_response_id": "resp_1", "input": "x"}, "response_already_completed"),
        ({"previous_response_id": "resp_2", "input": ""}, "invalid_input"),
        ({"previous_response_id": "resp_2", "input": []}, "invalid_input"),
        ({"previous_response_id": "resp_2", "input": [{"role": "assistant", "content": "x"}]}, "invalid_input"),
        (
            {"previous_response_id": "resp_2", "input": [{"type": "function_call_output", "output": "x"}]},
            "invalid_input",
        ),
        (
            {"previous_response_id": "resp_2", "input": [{"role": "user", "content": [{"type": "output_text"}]}]},
            "invalid_input",
        ),
        ({"previous_response_id": "resp_2", "input": "x", "stream_id": "lane"}, "invalid_input"),
        ({"previous_response_id": 7, "input": "x"}, "invalid_input"),
    ],
)
def test_steers_that_cannot_apply_fail_with_openais_codes(steer, code):
    socket = ResponsesSocket()
    create(socket)
    run(socket, "resp_1", [SAID])
    create(socket, previous_response_id="resp_1", input=[])
    socket.outgoing({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_2"}})
    [failed] = socket.receive({"type": "response.steer", **steer}, 10)
    assert failed["type"] == "response.steer.failed"
    assert failed["error"] == {"type": "invalid_request_error", "code": code, "message": failed["error"]["message"]}
    assert "id" not in failed["steer"]  # refused before an id was given
    # Sent within the response, it takes the next number.
    assert failed["sequence_number"] == 1


def test_too_many_steers_are_refused():
    socket = ResponsesSocket()
    create(socket)
    socket.outgoing({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}})
    steer = {"type": "response.steer", "previous_response_id": "resp_1", "input": "x"}
    answers = [socket.receive(steer, 10)[0]["type"] for _ in range(MAX_STEERS + 1)]
    assert answers == ["response.steer.accepted"] * MAX_STEERS + ["response.steer.failed"]


def test_the_lifetime_error_is_openais_which_codex_reads_as_reconnect():
    error = lifetime_error(60)
    assert error["type"] == "error" and error["status"] == 400
    assert error["error"]["code"] == "websocket_connection_limit_reached"
    assert "(60 minutes)" in error["error"]["message"]


def test_a_response_stopped_for_a_steer_is_continued_by_its_successor():
    """`response.incomplete` with reason `steered` (the server stopped it at an item
    boundary) counts as a response the successor continues, its output included."""
    socket = ResponsesSocket()
    create(socket)
    socket.outgoing({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}})
    assert not socket.steered()
    socket.receive({"type": "response.steer", "previous_response_id": "resp_1", "input": "shorter"}, 10)
    assert socket.steered()
    stopped = {"id": "resp_1", "output": [SAID], "incomplete_details": {"reason": "steered"}}
    socket.outgoing({"type": "response.incomplete", "sequence_number": 1, "response": stopped})
    assert not socket.steered()
    successor = socket.after_terminal()
    assert isinstance(successor, Create)
    assert successor.body["input"] == [USER, SAID, {"type": "message", "role": "user", "content": "shorter"}]


def test_a_response_incomplete_for_another_reason_cannot_be_continued_by_a_steer():
    socket = ResponsesSocket()
    create(socket)
    socket.outgoing({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}})
    socket.receive({"type": "response.steer", "previous_response_id": "resp_1", "input": "shorter"}, 10)
    cut = {"id": "resp_1", "output": [SAID], "incomplete_details": {"reason": "max_output_tokens"}}
    socket.outgoing({"type": "response.incomplete", "sequence_number": 1, "response": cut})
    [failed] = socket.after_terminal()
    assert failed["error"]["code"] == "successor_creation_failed"


def test_a_refused_create_returns_the_steers_it_carried():
    """Steers are committed by the `response.created` of the response that carries
    them; a create refused before that returns them with its error."""
    socket = ResponsesSocket()
    create(socket)
    run(socket, "resp_1", [CALL], steer=steer_text("careful"))
    socket.after_terminal()
    output = {"type": "function_call_output", "call_id": "call_1", "output": "x"}
    create(socket, input=[output], previous_response_id="resp_1")
    error, returned = socket.failed(invalid_request("no slot"))
    assert error["type"] == "error" and not socket.busy
    assert returned["type"] == "response.steer.failed" and returned["error"]["code"] == "successor_creation_failed"
    assert returned["steer"]["input"] == "careful"
    # Once created, they are committed: a later refusal returns nothing more.
    create(socket)
    socket.outgoing({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_2"}})
    [only] = socket.failed(invalid_request("broke"))
    assert only["type"] == "error"
