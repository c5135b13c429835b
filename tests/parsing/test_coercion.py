import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.parsing.coercion import coerce_value, parameter_types

TOOL = ToolSpec(
    name="t",
    parameters={
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
            "o": {"type": "object"},
            "a": {"type": "array", "items": {"type": "string"}},
            "s": {"type": "string"},
            "maybe": {"type": ["integer", "null"]},
            "any_of": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
            "e": {"enum": [1, 2, 3]},
        },
    },
)


@pytest.mark.parametrize(
    "name,text,expected",
    [
        ("n", "3", 3),
        ("n", " 42\n", 42),
        ("n", "3.0", 3),
        ("n", "three", "three"),  # kept as written, never invented
        ("x", "2.5", 2.5),
        ("x", "7", 7),
        ("x", "nan", "nan"),
        ("b", "True", True),
        ("b", "false", False),
        ("o", '{"k": [1, 2]}', {"k": [1, 2]}),
        ("o", "{'k': None}", {"k": None}),  # a Python literal, as models write
        ("a", '["a", "b"]', ["a", "b"]),
        ("a", "not a list", "not a list"),
        ("s", "007", "007"),
        ("s", " spaced ", " spaced "),
        ("maybe", "null", None),
        ("maybe", "5", 5),
        ("any_of", "true", True),
        ("any_of", "yes", "yes"),
        ("e", "2", 2),
        ("undeclared", "5", "5"),
    ],
)
def test_coerce(name, text, expected):
    value = coerce_value(text, parameter_types(TOOL, name))
    assert value == expected and type(value) is type(expected)


def test_no_tool_means_strings():
    assert coerce_value("5", parameter_types(None, "n")) == "5"


def test_type_names_tool_authors_write_are_understood():
    from tokenyard.conversation import ToolSpec
    from tokenyard.parsing.coercion import coerce_value, parameter_types

    tool = ToolSpec(
        name="t",
        parameters={
            "type": "object",
            "properties": {
                "f": {"type": "float"},
                "i": {"type": "int"},
                "b": {"type": "bool"},
                "d": {"type": "double"},
                "u": {"type": "uint"},  # Dynamo's test_qwen3_coder_mixed_tool_types
            },
        },
    )
    assert coerce_value("2.5", parameter_types(tool, "f")) == 2.5
    assert coerce_value("2.5", parameter_types(tool, "d")) == 2.5
    assert coerce_value("7", parameter_types(tool, "i")) == 7
    assert coerce_value("true", parameter_types(tool, "b")) is True
    assert coerce_value("5", parameter_types(tool, "u")) == 5


def test_json_escaped_as_if_inside_a_string_is_unescaped_for_containers():
    # GLM writes array values escaped (SGLang's test_array_argument_with_escaped_json).
    assert coerce_value('[{\\"id\\": \\"1\\", \\"path\\": \\"C:\\\\\\\\x\\"}]', ("array",)) == [
        {"id": "1", "path": "C:\\x"}
    ]
    assert coerce_value('{\\"a\\": 1}', ("object",)) == {"a": 1}
    # Not containers of the declared kind, or not JSON once unescaped: the text stays.
    assert coerce_value('{\\"a\\": 1}', ("array",)) == '{\\"a\\": 1}'
    assert coerce_value('[\\"a\\" oops', ("array",)) == '[\\"a\\" oops'


def test_none_is_null_only_where_a_string_is_not_allowed():
    assert coerce_value("none", ("string", "null")) == "none"
    assert coerce_value("null", ("string", "null")) is None
    assert coerce_value("None", ("integer", "null")) is None
    assert coerce_value("none", ("string",)) == "none"
    assert coerce_value("nil", ("integer", "null")) is None


def test_parameters_of_a_top_level_one_of_are_typed():
    tool = ToolSpec(
        name="acme",
        parameters={
            "type": "object",
            "oneOf": [
                {"type": "object", "properties": {"count": {"type": "integer"}}},
                {"type": "object", "properties": {"kind": {"const": "other"}}},
            ],
        },
    )
    assert parameter_types(tool, "count")[0] == "integer"
    assert coerce_value("7", parameter_types(tool, "count")) == 7


def test_digit_booleans_only_where_no_other_type_takes_them():
    from tokenyard.parsing.coercion import coerce_value

    assert coerce_value("1", ("boolean",)) is True
    assert coerce_value(" 0 ", ("boolean",)) is False
    assert coerce_value("1", ("boolean", "integer")) == 1
    assert coerce_value("2", ("boolean",)) == "2"


def test_an_unknown_type_name_lets_the_text_decide():
    # Dynamo's test_schema_aware_type_conversion (param8, "other_type").
    tool = ToolSpec(name="t", parameters={"type": "object", "properties": {"p": {"type": "other_type"}}})
    types = parameter_types(tool, "p")
    assert coerce_value("{'arg1': 3, 'arg2': [1, 2]}", types) == {"arg1": 3, "arg2": [1, 2]}
    assert coerce_value("42", types) == 42
    assert coerce_value("hello", types) == "hello"


def test_a_scalar_written_as_a_json_string_is_its_value_where_no_string_is_allowed():
    # SGLang's glm4_moe test_schema_type_coercion: `"42"` for a number parameter.
    assert coerce_value('"42"', ("number",)) == 42
    assert coerce_value('"2.5"', ("integer", "number")) == 2.5
    assert coerce_value('"true"', ("boolean",)) is True
    assert coerce_value('"null"', ("null", "integer")) is None
    assert coerce_value('\\"123\\"', ("integer",)) == 123  # quotes escaped as inside a string
    # Where a string is allowed besides other types, the quotes say which: a string.
    assert coerce_value('"42"', ("integer", "string")) == "42"
    assert coerce_value('"null"', ("null", "string")) == "null"
    assert coerce_value("null", ("null", "string")) is None
    # The text inside is no such value: kept as written.
    assert coerce_value('"abc"', ("number",)) == '"abc"'
    assert coerce_value('" 42"', ("number",)) == '" 42"'


def test_numbers_are_written_without_separators_in_ascii_digits():
    # Python's int() reads `123_456` and Arabic-Indic digits; a parameter is a number only as JSON writes it.
    assert coerce_value("123_456", ("integer", "string")) == "123_456"
    assert coerce_value("١٢", ("number",)) == "١٢"


def test_an_enum_decides_between_readings():
    # SGLang's glm47 schema tests: `7` for enum ["7", 8] is the string.
    assert coerce_value("7", ("integer", "string"), ["7", 8]) == "7"
    assert coerce_value("8", ("integer", "string"), ["7", 8]) == 8
    assert coerce_value("1.0", ("number", "string"), [1, "auto"]) == 1.0


def test_local_refs_and_root_unions_type_a_parameter():
    tool = ToolSpec(
        name="t",
        parameters={
            "$defs": {"a/b~c": {"type": "integer"}, "cycle": {"$ref": "#/$defs/cycle"}},
            "properties": {"n": {"$ref": "#/$defs/a~1b~0c"}, "c": {"$ref": "#/$defs/cycle"}},
        },
    )
    assert parameter_types(tool, "n") == ("integer",)
    assert parameter_types(tool, "c") == ()
    union = ToolSpec(
        name="u",
        parameters={
            "oneOf": [
                {"properties": {"kind": {"const": "text"}, "value": {"type": "string"}}},
                {"allOf": [{"properties": {"kind": {"enum": ["count"]}, "value": {"type": "integer"}}}]},
            ]
        },
    )
    assert parameter_types(union, "value") == ("integer", "string")
    assert parameter_types(union, "value", {"kind": "text"}) == ("string",)
    assert parameter_types(union, "value", {"kind": "count"}) == ("integer",)


def test_large_integers_stay_exact_and_null_is_no_value_where_no_string_fits():
    # SGLang's qwen3_coder numeric-precision tests: a float would round 9007199254740993.
    assert coerce_value("9007199254740993", ("number",)) == 9007199254740993
    assert coerce_value(" -18446744073709551615 ", ("null", "number")) == -18446744073709551615
    assert coerce_value("1.25e3", ("number",)) == 1250.0
    assert coerce_value("null", ("number",)) is None
    assert coerce_value("null", ("string",)) == "null"
