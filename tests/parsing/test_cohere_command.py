from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["cohere_command4"][1]
cmd4 = splitter_factory("cohere_command4", "cohere_command4", [WEATHER])
r7b = splitter_factory("cohere_command3", "cohere_command3", [WEATHER])


def test_thinking_opened_by_the_template_then_actions():
    two = LITERAL.replace(
        "\n]",
        ',\n    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]',
    )
    assert summary(parse(cmd4, "Two cities.<|END_THINKING|>" + two)) == [
        ("reasoning", "Two cities."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris"}),
    ]


def test_text_blocks_of_both_generations_are_syntax():
    assert summary(parse(cmd4, "Hm.<|END_THINKING|><|START_TEXT|>Sunny.<|END_TEXT|>")) == [
        ("reasoning", "Hm."),
        ("text", "Sunny."),
    ]
    # Command R7B writes its own START_THINKING and answers in a response block.
    assert summary(parse(r7b, "<|START_THINKING|>Hm.<|END_THINKING|><|START_RESPONSE|>Sunny.<|END_RESPONSE|>")) == [
        ("reasoning", "Hm."),
        ("text", "Sunny."),
    ]


def test_no_thinking_block_starts_with_the_text_block():
    assert summary(parse(cmd4, "<|START_TEXT|>Sunny.<|END_TEXT|>")) == [("text", "Sunny.")]


def test_cut_action_is_incomplete():
    text = '<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"ci'
    assert summary(parse(cmd4, text)) == [("incomplete", "get_weather", "truncated")]


def test_the_models_call_ids_are_kept_unless_they_collide():
    from tokenyard.events import ToolCallReady
    from tokenyard.parsing.splitter import OutputSplitter
    from tokenyard.parsing.tools.base import CallIds

    two = LITERAL.replace(
        "\n]",
        ',\n    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]',
    )
    text = "Two cities.<|END_THINKING|>" + two
    fresh = OutputSplitter("cohere_command4", "cohere_command4", tools=[WEATHER], call_ids=CallIds(nonce="t"))
    events = [*fresh.feed(text), *fresh.finish()]
    assert [e.id for e in events if isinstance(e, ToolCallReady)] == ["0", "1"]
    # An id already used earlier in the conversation gets a fresh one.
    reused = CallIds(nonce="t")
    reused.reserve(["0"])
    splitter = OutputSplitter("cohere_command4", "cohere_command4", tools=[WEATHER], call_ids=reused)
    events = [*splitter.feed(text), *splitter.finish()]
    assert [e.id for e in events if isinstance(e, ToolCallReady)] == ["call_t00", "1"]


def test_the_end_of_turn_token_is_a_marker_not_text():
    text = "<|START_RESPONSE|>Hi.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>"
    assert summary(parse(cmd4, text)) == [("text", "Hi.")]
