from tokenyard.conversation import ToolSpec
from tokenyard.events import ToolCallDelta, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = (
    '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo</parameter>\n'
    '<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>'
)
PARIS_INVOKE = '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n<parameter name="days">2</parameter>\n</invoke>\n'

minimax = splitter_factory(None, "minimax_m2", [WEATHER])
# The family's reasoning is forced: output starts inside reasoning.
minimax_reasoning = splitter_factory("minimax_m2", "minimax_m2", [WEATHER])

EDIT = ToolSpec(
    name="edit",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"},
            "options": {"type": "object"},
            "lines": {"type": "array"},
            "force": {"type": "boolean"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
        },
    },
)
edit = splitter_factory(None, "minimax_m2", [EDIT])


def call(name: str, body: str) -> str:
    return f'<minimax:tool_call>\n<invoke name="{name}">\n{body}</invoke>\n</minimax:tool_call>'


def test_reference_literal():
    events = parse(minimax, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw.startswith('<invoke name="get_weather">') and ready.raw.endswith("</invoke>")


def test_prose_then_several_invokes_then_prose():
    text = "Both cities.\n" + LITERAL.replace("</minimax:tool_call>", PARIS_INVOKE + "</minimax:tool_call>") + "\nDone."
    assert summary(parse(minimax, text)) == [
        ("text", "Both cities."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Done."),
    ]


def test_schema_typed_values():
    body = (
        '<parameter name="path">src/a.py</parameter>\n'
        '<parameter name="count">\n12\n</parameter>\n'
        '<parameter name="force">True</parameter>\n'
        '<parameter name="ratio">0.5</parameter>\n'
        '<parameter name="options">{"a": {"b": [1, null]}}</parameter>\n'
        "<parameter name=\"lines\">['x', 'y']</parameter>\n"  # a Python literal
        '<parameter name="extra">7</parameter>\n'  # undeclared: stays a string
    )
    events = parse(edit, call("edit", body))
    assert summary(events) == [
        (
            "call",
            "edit",
            {
                "path": "src/a.py",
                "count": 12,
                "force": True,
                "ratio": 0.5,
                "options": {"a": {"b": [1, None]}},
                "lines": ["x", "y"],
                "extra": "7",
            },
        )
    ]


def test_value_may_contain_opening_tags():
    content = 'see <parameter name="x"> and <invoke name="y"> in the docs'
    events = parse(edit, call("edit", f'<parameter name="content">{content}</parameter>\n'))
    assert summary(events) == [("call", "edit", {"content": content})]


def test_multiline_value_strips_one_newline_each_side():
    content = '\nline1\n  東京 "q" \\ 🌸\n'
    events = parse(edit, call("edit", f'<parameter name="content">\n{content}\n</parameter>\n'))
    assert summary(events) == [("call", "edit", {"content": content})]


def test_quoted_and_bare_names():
    text = "<minimax:tool_call>\n<invoke name='get_weather'>\n<parameter name=city>Oslo</parameter>\n</invoke>\n</minimax:tool_call>"
    assert summary(parse(minimax, text)) == [("call", "get_weather", {"city": "Oslo"})]


def test_no_parameters():
    events = parse(minimax, call("get_weather", ""))
    assert summary(events) == [("call", "get_weather", {})]
    assert next(e for e in events if isinstance(e, ToolCallReady)).arguments == "{}"


def test_string_streams_before_the_parameter_closes():
    splitter = minimax()
    events = splitter.feed('<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tok')
    assert any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Tok'


def test_not_a_call_is_text():
    text = 'The <minimax:tool_call> tag wraps calls; <invoke name="x"> alone is prose.'
    assert summary(parse(minimax, text)) == [("text", text)]


def test_interleaved_with_forced_reasoning_in_order():
    text = (
        "Tokyo first.</think>\n\n"
        + LITERAL
        + "\n<think>Now Paris.</think>\n\n"
        + LITERAL.replace("Tokyo", "Paris").replace(">3<", ">2<")
        + "\nBoth done."
    )
    assert summary(parse(minimax_reasoning, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Both done."),
    ]


def test_reasoning_ends_implicitly_at_the_call_block():
    text = "Tokyo first.\n" + LITERAL + "\n<think>Now Paris.\n" + LITERAL.replace("Tokyo", "Paris") + "\nBoth done."
    assert summary(parse(minimax_reasoning, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Both done."),
    ]


def test_a_closing_tag_inside_a_value_is_its_text():
    spec = ToolSpec(name="note", parameters={"type": "object", "properties": {"content": {"type": "string"}}})
    value = "Close a value with </parameter> then go on"
    text = (
        f'<minimax:tool_call><invoke name="note"><parameter name="content">{value}</parameter>\n'
        "</invoke></minimax:tool_call>"
    )
    assert summary(parse(splitter_factory("minimax_m2", "minimax_m2", [spec]), text)) == [
        ("call", "note", {"content": value})
    ]
