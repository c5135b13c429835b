"""K2 Horizon's IFM tool calls (its default `xml` and `xml_typed` formats): the
`arg_key`/`arg_value` shape of glm45.py with `ifm|` tags inside a section, and an
optional declared type between a key and its value:

    <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>Tokyo</ifm|arg_value></ifm|tool_call></ifm|tool_calls>

A declared `string` streams as text; any other declared type is decoded as JSON,
else typed by the tool's schema. In its `json` format the call's body is one JSON
call object instead (`<ifm|tool_call>{"name": ..., "arguments": {...}}</ifm|tool_call>`),
whose arguments stream as the model wrote them.
"""

from __future__ import annotations

from .glm45 import KeyValueSyntax, KeyValueToolParser

_IFM = KeyValueSyntax(
    ("<ifm|tool_call>", "</ifm|tool_call>"),
    ("<ifm|arg_key>", "</ifm|arg_key>"),
    ("<ifm|arg_value>", "</ifm|arg_value>"),
    name_ends=(),
    type_tags=("<ifm|arg_type>", "</ifm|arg_type>"),
    section=("<ifm|tool_calls>", "</ifm|tool_calls>"),
)


class K2HorizonToolParser(KeyValueToolParser):
    name = "k2_horizon"
    syntaxes = (_IFM,)
    json_bodies = True
    reasoning_exit_markers = ("<ifm|tool_calls>",)
