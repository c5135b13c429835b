"""Which stream a request belongs to when its client names no session (OpenClaw)."""

from tokenyard.conversation import Conversation, Message, Text, ToolCall, ToolResult
from tokenyard.prompting.streams import inferred_session, prompt_stream

SYSTEM = "<!-- openclaw:attempt:STABLE -->\nYou are a personal assistant running inside OpenClaw."
ASK = Message(role="user", parts=[Text(text="[Sat 2026-11-28 10:05 UTC] Run a shell command.")])
CALL = Message(role="assistant", parts=[ToolCall(id="toolu1", name="exec", arguments='{"command": "ls"}')])
RESULT = Message(role="user", parts=[ToolResult(tool_call_id="toolu1", content=[Text(text="a.py")])])


def anthropic(*messages, system=SYSTEM, ask=ASK):
    return Conversation(model="m", system=[Text(text=system)], messages=[ask, *messages])


def responses(*messages):
    developer = Message(role="developer", parts=[Text(text=SYSTEM)])
    return Conversation(model="m", messages=[developer, ASK, *messages])


def test_an_openclaw_session_is_named_by_its_system_prompt_and_first_message():
    first, second = inferred_session(anthropic()), inferred_session(anthropic(CALL, RESULT))
    assert first is not None and first == second
    assert inferred_session(responses()) == inferred_session(responses(CALL, RESULT)) is not None
    later = Message(role="user", parts=[Text(text="[Sat 2026-11-28 10:06 UTC] Run a shell command.")])
    assert inferred_session(anthropic(ask=later)) != first, "another session, typed a minute later"


def test_other_clients_that_name_no_session_get_none():
    assert inferred_session(anthropic(system="You are a helpful assistant.")) is None
    assert inferred_session(Conversation(model="m", messages=[ASK])) is None
    assert prompt_stream(Conversation(model="m", messages=[ASK])) is None
