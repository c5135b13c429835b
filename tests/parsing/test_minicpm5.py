from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["minicpm5"][1]
minicpm = splitter_factory("qwen3", "minicpm5", [WEATHER])


def test_calls_one_after_another_with_text_and_reasoning():
    paris = LITERAL.replace("Tokyo", "Paris")
    text = "<think>Two cities.</think>Checking.\n" + LITERAL + "\n" + paris + "\n<think>Done.</think>Both sunny."
    assert summary(parse(minicpm, text)) == [
        ("reasoning", "Two cities."),
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("reasoning", "Done."),
        ("text", "Both sunny."),
    ]


def test_cdata_wrapper_is_syntax_and_its_inside_verbatim():
    text = '<function name="get_weather"><param name="city"><![CDATA[a <b> & "c"\n]]]></param></function>'
    assert summary(parse(minicpm, text)) == [("call", "get_weather", {"city": 'a <b> & "c"\n]'})]


def test_value_that_merely_starts_like_cdata():
    text = '<function name="get_weather"><param name="city"><![CD</param></function>'
    assert summary(parse(minicpm, text)) == [("call", "get_weather", {"city": "<![CD"})]


def test_python_str_values_typed_by_schema():
    text = '<function name="get_weather"><param name="city">Tokyo</param><param name="days">3</param></function>'
    assert summary(parse(minicpm, text)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]


def test_a_parameter_given_twice_is_no_call():
    # SGLang's minicpm5 test_duplicate_param_names_invalid: which value was meant is unknown.
    from .support import WEATHER, parse, splitter_factory, summary

    text = '<function name="get_weather"><param name="city">Oslo</param><param name="city">Rome</param></function> ok'
    events = summary(parse(splitter_factory(None, "minicpm5", [WEATHER]), text))
    assert [kind for kind, *_ in events] == ["incomplete", "text"]


def test_text_between_parameters_that_is_no_parameter_breaks_the_call():
    # SGLang's minicpm5 test_param_missing_name_invalid: `<param>` with no name.
    from .support import WEATHER, parse, splitter_factory, summary

    text = '<function name="get_weather"><param>Oslo</param><param name="days">2</param></function> ok'
    events = summary(parse(splitter_factory(None, "minicpm5", [WEATHER]), text))
    assert [kind for kind, *_ in events] == ["incomplete", "text"]
