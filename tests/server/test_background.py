"""Which requests the pipeline marks as background for engines that schedule."""

from tokenyard.conversation import Conversation, Message, Text, ToolSpec
from tokenyard.server.pipeline import is_background

ASK = [Message(role="user", parts=[Text(text="Write a title for this conversation.")])]
BASH = ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})


def test_an_agent_sessions_toolless_request_is_background():
    assert is_background(Conversation(model="m", messages=ASK, session_key="s1"))


def test_turns_with_tools_and_plain_chat_are_not():
    assert not is_background(Conversation(model="m", messages=ASK, session_key="s1", tools=[BASH]))
    assert not is_background(Conversation(model="m", messages=ASK))


def test_a_compaction_request_is_never_background():
    compaction = Conversation(model="m", messages=ASK, session_key="s1", request_kind="compaction")
    assert not is_background(compaction)
