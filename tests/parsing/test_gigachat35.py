from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["gigachat35"][1]
giga = splitter_factory(None, "gigachat35", [WEATHER])


def test_gcml_block_with_string_hints():
    assert summary(parse(giga, "Checking.\n" + LITERAL)) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_dsml_block_is_text_here_and_a_cut_value_truncated():
    dsml = LITERAL.replace("GCML", "DSML")
    assert summary(parse(giga, dsml)) == [("text", dsml)]
    assert summary(parse(giga, LITERAL[: LITERAL.index("Tokyo") + 2])) == [("incomplete", "get_weather", "truncated")]
