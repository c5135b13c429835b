"""StepFun Step 3: StepTML invokes inside DeepSeek-style special-token sections
(`｜` is the full-width bar U+FF5C),

    <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">
    <steptml:parameter name="city">Tokyo</steptml:parameter>
    <steptml:parameter name="days">3</steptml:parameter>
    </steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>

Values are the text between the tags (whitespace is data), typed by the tool's
schema. Between the call token and the invoke a model may write
`function<｜tool_sep｜>NAME\n` or nothing; between calls, a stray `<｜tool_sep｜>`. The shape is
`InvokeToolParser`'s (invoke_xml.py) with Step 3's tokens as the block and around
each invoke. Its reasoning (`step3`) starts inside `<think>`."""

from __future__ import annotations

from .invoke_xml import InvokeSyntax, InvokeToolParser

_SYNTAX = InvokeSyntax(
    "step3",  # unused: the block's tags are special tokens
    "steptml:invoke",
    "steptml:parameter",
    strip_newline=False,  # the value is the text between the tags, whitespace included
    bare_invoke_starts_call=False,
    block_tags=("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"),
    call_wrapper=("<｜tool_call_begin｜>", "<｜tool_call_end｜>"),
    call_separator="<｜tool_sep｜>",
)


class Step3ToolParser(InvokeToolParser):
    name = "step3"
    aliases = ()
    syntax = _SYNTAX
    start_markers = _SYNTAX.start_markers
