"""Which requests are side queries: a stream of their own for the prefix watch, background for engines that schedule."""

from tokenyard.conversation import Conversation, Message, Text, ToolSpec
from tokenyard.prompting.streams import is_side_query

ASK = [Message(role="user", parts=[Text(text="Write a title for this conversation.")])]
BASH = ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})


def test_an_agent_sessions_toolless_request_is_side_query():
    assert is_side_query(Conversation(model="m", messages=ASK, session_key="s1"))


def test_turns_with_tools_and_plain_chat_are_not():
    assert not is_side_query(Conversation(model="m", messages=ASK, session_key="s1", tools=[BASH]))
    assert not is_side_query(Conversation(model="m", messages=ASK))


def test_a_compaction_request_is_never_background():
    compaction = Conversation(model="m", messages=ASK, session_key="s1", request_kind="compaction")
    assert not is_side_query(compaction)


def test_a_side_query_has_a_stream_of_its_own():
    from tokenyard.prompting.streams import StreamKind, prompt_stream

    turn = prompt_stream(Conversation(model="m", messages=ASK, session_key="s1", tools=[BASH]))
    side = prompt_stream(Conversation(model="m", messages=ASK, session_key="s1"))
    assert turn is not None and side is not None
    assert side.kind is StreamKind.SIDE_QUERY and turn.kind is StreamKind.TURN and side.key != turn.key
