from .support import WEATHER, parse, splitter_factory, summary

longcat = splitter_factory(None, "longcat", [WEATHER])


def test_plain_tool_call_tag_is_text():
    text = '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'
    assert summary(parse(longcat, text)) == [("text", text)]
