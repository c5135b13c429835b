from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import FB, TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["step3"][1]
step = splitter_factory("step3", "step3", [WEATHER])
BEGIN, END = f"<{FB}tool_calls_begin{FB}>", f"<{FB}tool_calls_end{FB}>"
CALL, CALL_END, SEP = f"<{FB}tool_call_begin{FB}>", f"<{FB}tool_call_end{FB}>", f"<{FB}tool_sep{FB}>"


def invoke(city: str) -> str:
    return (
        f'<steptml:invoke name="get_weather"><steptml:parameter name="city">{city}</steptml:parameter></steptml:invoke>'
    )


def test_reasoning_then_text_and_a_section():
    assert summary(parse(step, "Need it.</think>Checking.\n" + LITERAL)) == [
        ("reasoning", "Need it."),
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_call_token_variants_and_separator_between_calls():
    text = (
        f"</think>{BEGIN}{CALL}{invoke('Tokyo')}{CALL_END}{SEP}"
        f"{CALL}function{SEP}get_weather\n{invoke('  Paris ')}{CALL_END}{END}Done."
    )
    assert summary(parse(step, text)) == [
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "  Paris "}),
        ("text", "Done."),
    ]


def test_section_without_an_invoke_is_text():
    assert summary(parse(step, f"</think>{BEGIN}nothing{END}")) == [("text", f"{BEGIN}nothing{END}")]
