"""The scripted engine's rules: what it answers given the conversation so far."""

from __future__ import annotations

from tests.fixtures import model_dir
from tokenyard.conversation import Conversation, Message, Text, ToolCall, ToolResult, ToolSpec
from tokenyard.engines.scripted import SCRIPTED_COMMAND, ScriptedEngine
from tokenyard.engines.wire import Call
from tokenyard.engines.wire import Text as TextSegment
from tokenyard.prompting.tokenizer import Tokenizer

EXEC = ToolSpec(name="exec", parameters={"type": "object", "properties": {"command": {"type": "string"}}})


def _engine() -> ScriptedEngine:
    return ScriptedEngine(
        Tokenizer.from_model_dir(model_dir("qwen3-coder")), tool_format="hermes", reasoning_format=None
    )


def _conversation(*messages: Message) -> Conversation:
    return Conversation(model="m", messages=list(messages), tools=[EXEC])


ASK = Message(role="user", parts=[Text(text="Run a command.")])
CALL = Message(role="assistant", parts=[ToolCall(id="c1", name="exec", arguments='{"command": "echo"}')])
RESULT = Message(role="user", parts=[ToolResult(tool_call_id="c1", content=[Text(text="out-42")])])


def test_a_new_question_gets_a_shell_call():
    answer = _engine()._rule_answer(_conversation(ASK), thinking=False)
    assert answer == [Call("exec", {"command": SCRIPTED_COMMAND})]


def test_tool_results_are_answered_even_with_a_client_message_after_them():
    # OpenClaw appends an internal-context user message after every tool result.
    context = Message(role="user", parts=[Text(text="<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> none")])
    for conversation in (_conversation(ASK, CALL, RESULT), _conversation(ASK, CALL, RESULT, context)):
        answer = _engine()._rule_answer(conversation, thinking=False)
        assert answer == [TextSegment("The tool returned: out-42")]
