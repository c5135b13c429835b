from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["hy_v4"][1]
hy = splitter_factory("hy_v4", "hy_v4", [WEATHER])
S = ":opensource"


def call(name: str, args: str = "") -> str:
    return f"<tool_call{S}>{name}{args}</tool_call{S}>"


def arg(key: str, value: str) -> str:
    return f"<arg_key{S}>{key}</arg_key{S}><arg_value{S}>{value}</arg_value{S}>"


def test_calls_back_to_back_and_a_zero_argument_call():
    text = f"<tool_calls{S}>" + call("get_weather", arg("city", "A")) + call("get_time") + f"</tool_calls{S}>"
    assert summary(parse(hy, text)) == [("call", "get_weather", {"city": "A"}), ("call", "get_time", {})]


def test_hy_v3_separator_is_not_part_of_the_name_here():
    # HY4 has no `<tool_sep>`: a name runs up to the first key.
    text = f"<tool_calls{S}>" + call("get_weather\n", arg("days", "2")) + f"</tool_calls{S}>"
    assert summary(parse(hy, text)) == [("call", "get_weather", {"days": 2})]


def test_cut_inside_a_value_is_truncated():
    assert summary(parse(hy, LITERAL[: LITERAL.index("Tokyo") + 2])) == [("incomplete", "get_weather", "truncated")]
