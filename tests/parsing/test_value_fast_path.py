"""The XML-style engines' hot path for a long value (`take_value_text`) streams value
text without the state machine; a streamed string that decides which shape of a
root `oneOf` the call takes must still be read whole, however the text is chunked."""

import pytest

from tokenyard.conversation import ToolSpec

from .support import parse, splitter_factory, summary

_BRANCHES = [
    {"properties": {"kind": {"type": "string", "const": "plain"}, "value": {"type": "string"}}},
    {"properties": {"kind": {"type": "string", "const": "counted"}, "value": {"type": "integer"}}},
]
_TOOL = ToolSpec(name="inspect", parameters={"oneOf": _BRANCHES})


def _glm47(kind: str) -> str:
    return (
        f"<tool_call>inspect<arg_key>kind</arg_key><arg_value>{kind}</arg_value>"
        "<arg_key>value</arg_key><arg_value>7</arg_value></tool_call>"
    )


def _minimax_m2(kind: str) -> str:
    return (
        '<minimax:tool_call><invoke name="inspect">'
        f'<parameter name="kind">{kind}</parameter><parameter name="value">7</parameter>'
        "</invoke></minimax:tool_call>"
    )


@pytest.mark.parametrize(("fmt", "render"), [("glm47", _glm47), ("minimax_m2", _minimax_m2)])
@pytest.mark.parametrize(("kind", "value"), [("plain", "7"), ("counted", 7)])
def test_a_streamed_discriminator_types_the_values_after_it(fmt, render, kind, value) -> None:
    make = splitter_factory(None, fmt, [_TOOL])
    assert summary(parse(make, render(kind))) == [("call", "inspect", {"kind": kind, "value": value})]
