from tokenyard.conversation import ToolSpec
from tokenyard.events import ToolCallDelta, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import NS, TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["minimax_m3"][1]
ORDER = ToolSpec(
    name="create_order",
    parameters={
        "type": "object",
        "properties": {
            "user_id": {"type": "integer"},
            "note": {"type": "string"},
            "express": {"type": "boolean"},
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}},
            },
            "address": {"type": "object", "properties": {"zip": {"type": "string"}}},
            "tags": {"type": "array"},
        },
    },
)
m3 = splitter_factory("minimax_m3", "minimax_m3", [WEATHER])
orders = splitter_factory("minimax_m3", "minimax_m3", [ORDER])


def el(name: str, inner: str) -> str:
    return f"{NS}<{name}>{inner}{NS}</{name}>"


def block(*invokes: str) -> str:
    return f"{NS}<tool_call>\n" + "".join(invokes) + f"{NS}</tool_call>"


def invoke(name: str, body: str) -> str:
    return f'{NS}<invoke name="{name}">{body}{NS}</invoke>\n'


def test_reference_literal():
    events = parse(m3, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw.startswith(f'{NS}<invoke name="get_weather">') and ready.raw.endswith(f"{NS}</invoke>")


def test_nested_elements_typed_by_schema():
    body = (
        el("user_id", "42")
        + el("note", 'fragile, "handle" <with> care')
        + el("express", "true")
        + el("items", el("item", el("sku", "b-1") + el("qty", "2")) + el("item", el("sku", "c-9") + el("qty", "1")))
        + el("address", el("zip", "01234"))
        + el("tags", "")
    )
    assert summary(parse(orders, block(invoke("create_order", body)))) == [
        (
            "call",
            "create_order",
            {
                "user_id": 42,
                "note": 'fragile, "handle" <with> care',
                "express": True,
                "items": [{"sku": "b-1", "qty": 2}, {"sku": "c-9", "qty": 1}],
                "address": {"zip": "01234"},
                "tags": [],
            },
        )
    ]


def test_without_a_schema_items_are_a_list_and_repeated_names_collect():
    # Inside a structure the schema does not describe, numbers and booleans read back
    # as the template wrote them (`{{ val }}`); a zero-led code stays text.
    body = el("xs", el("item", "a") + el("item", "true")) + el(
        "obj", el("k", "1") + el("k", "2.5") + el("j", "-3") + el("zip", "018956")
    )
    body += el("top", "7")  # a top-level value without a schema is the text written
    assert summary(parse(splitter_factory(None, "minimax_m3"), block(invoke("anything", body)))) == [
        ("call", "anything", {"xs": ["a", True], "obj": {"k": [1, 2.5], "j": -3, "zip": "018956"}, "top": "7"})
    ]


def test_an_empty_element_no_string_can_fill_is_null_or_an_empty_container():
    # The template writes null (a list's item), [] and {} as nothing: where the schema
    # admits no string that is what the empty element was; where a string may fill
    # it, or the schema is silent, it is the text written.
    tool = ToolSpec(
        name="t",
        parameters={
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": ["integer", "null"]}},
                "limit": {"type": "integer"},
                "tags": {"type": "array"},
                "meta": {"type": "object"},
                "label": {"type": ["string", "null"]},
                "free": {"type": "object"},
            },
        },
    )
    body = (
        el("ids", el("item", "1") + el("item", ""))
        + el("limit", "")
        + el("tags", "")
        + el("meta", "")
        + el("label", "")
        + el("free", el("x", "") + el("xs", el("item", "")))
    )
    assert summary(parse(splitter_factory(None, "minimax_m3", [tool]), block(invoke("t", body)))) == [
        (
            "call",
            "t",
            {"ids": [1, None], "limit": None, "tags": [], "meta": {}, "label": "", "free": {"x": "", "xs": [""]}},
        )
    ]


def test_reasoning_then_prose_then_several_calls():
    text = "<mm:think>Two cities.</mm:think>Checking both.\n" + block(
        invoke("get_weather", el("city", "Tokyo") + el("days", "3")),
        invoke("get_weather", el("city", "Paris")),
    )
    assert summary(parse(m3, text)) == [
        ("reasoning", "Two cities."),
        ("text", "Checking both."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris"}),
    ]


def test_prefilled_opener_and_bare_closer():
    # thinking_mode "enabled": the prompt ends with `<mm:think>`.
    opened = splitter_factory("minimax_m3", "minimax_m3", [WEATHER], prompt_opened_reasoning=True)
    assert summary(parse(opened, "Hmm.</mm:think>Sunny.")) == [("reasoning", "Hmm."), ("text", "Sunny.")]
    # thinking disabled: the model's turn begins after a `</mm:think>`.
    assert summary(parse(m3, "</mm:think>Sunny.")) == [("text", "Sunny.")]


def test_call_block_ends_unclosed_reasoning():
    opened = splitter_factory("minimax_m3", "minimax_m3", [WEATHER], prompt_opened_reasoning=True)
    assert summary(parse(opened, "Look it up.\n" + LITERAL)) == [
        ("reasoning", "Look it up."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_string_parameter_streams_before_it_closes():
    splitter = m3()
    events = splitter.feed(f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>Tok')
    assert any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Tok'


def test_missing_invoke_close_and_truncation():
    # The section's end closes a call whose `</invoke>` is missing.
    text = f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{el("city", "Oslo")}{NS}</tool_call>'
    assert summary(parse(m3, text)) == [("call", "get_weather", {"city": "Oslo"})]
    # Output that ends inside a call never dispatches it.
    assert summary(parse(m3, LITERAL[: LITERAL.index("Tokyo") + 3])) == [("incomplete", "get_weather", "truncated")]


def test_text_that_is_not_a_call():
    for text in (
        "The <tool_call> tag is MiniMax M2's; ]<]minimax[ is not a token.",
        f"{NS}<tool_call>\nplain words{NS}</tool_call>",
    ):
        assert "".join(s[1] for s in summary(parse(m3, text)) if s[0] == "text")


def test_a_call_that_ends_inside_an_unclosed_parameter_is_not_dispatched():
    ns = "]<]minimax[>["
    text = "".join(
        ns + p
        for p in ("<tool_call>", '<invoke name="get_weather">', "<city>Tokyo", "</wrong>", "</invoke>", "</tool_call>")
    )
    events = parse(splitter_factory("minimax_m3", "minimax_m3", [WEATHER]), text)
    assert [s[0] for s in summary(events) if s[0] in ("call", "incomplete")] == ["incomplete"]


UNION = ToolSpec(
    name="union_args",
    parameters={
        "type": "object",
        "properties": {
            "filter": {
                "anyOf": [
                    {"type": "array", "items": {"type": "string"}},
                    {"type": "object", "properties": {"field": {"type": "string"}}},
                ]
            },
            "label": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"text": {"type": "string"}}}]},
            "limit": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"max": {"type": "integer"}}}]},
        },
    },
)
unions = splitter_factory("minimax_m3", "minimax_m3", [UNION])


def test_union_parameters_take_the_alternative_their_content_fits():
    def args(body: str) -> object:
        return summary(parse(unions, block(invoke("union_args", body))))[0][2]

    assert args(el("filter", el("item", "alpha") + el("item", "beta"))) == {"filter": ["alpha", "beta"]}
    assert args(el("filter", el("field", "x"))) == {"filter": {"field": "x"}}
    assert args(el("limit", "5")) == {"limit": 5}
    assert args(el("limit", el("max", "10"))) == {"limit": {"max": 10}}
    assert args(el("label", "hi")) == {"label": "hi"}
    # A union with a string alternative is a string, even when it looks structured.
    assert args(el("label", el("text", "hi"))) == {"label": el("text", "hi")}
