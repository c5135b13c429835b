"""How a forced tool choice is written into the prompt, per tool-call format.

For `tool_choice` "required" or a named tool, engines without guided decoding get
the family's call opener appended to the prompt (the prefill): the model's output
then continues a call that has already begun. `CallSyntax.opener` is that text, for
any call or for a named one; `arguments_end` is what follows a named call's
arguments, for guided-decoding engines that are given the call's syntax instead
(None where the arguments are not one JSON value a guide can describe).

Keyed by the tool parser's canonical name; the strings are each format's own, as
REFERENCE §1 and the models' chat templates write them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

FB = "\uff5c"  # DeepSeek's full-width bar
SP = "\u2581"
_DS_CALLS = f"<{FB}tool{SP}calls{SP}begin{FB}><{FB}tool{SP}call{SP}begin{FB}>"
_GIGACHAT = "<|message_sep|>\n\nfunction call<|role_sep|>"
_MM = "]<]minimax[>["
_PLAMO_CALLS = "<|plamo:begin_tool_requests:plamo|>"


@dataclass(frozen=True)
class CallSyntax:
    trigger: str  # the text every call (or call section) starts with
    any_opener: str  # a prefill that commits to some call
    named: Callable[[str, int], str]  # (tool name, call index in the conversation) -> a prefill naming it
    arguments_end: str | None = None  # after a named call's JSON arguments, for guides

    def opener(self, name: str | None, index: int = 0) -> str:
        return self.any_opener if name is None else self.named(name, index)


def _q(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


CALL_SYNTAX: dict[str, CallSyntax] = {
    "hermes": CallSyntax(
        "<tool_call>", "<tool_call>\n", lambda n, _: f'<tool_call>\n{{"name": {_q(n)}, "arguments": ', "}\n</tool_call>"
    ),
    "qwen3_coder": CallSyntax("<tool_call>", "<tool_call>\n<function=", lambda n, _: f"<tool_call>\n<function={n}>\n"),
    "nemotron_deci": CallSyntax(
        "<TOOLCALL>", "<TOOLCALL>[", lambda n, _: f'<TOOLCALL>[{{"name": {_q(n)}, "arguments": ', "}]</TOOLCALL>"
    ),
    "llama3_json": CallSyntax(
        "<|python_tag|>", "<|python_tag|>", lambda n, _: f'<|python_tag|>{{"name": {_q(n)}, "parameters": ', "}"
    ),
    "mistral": CallSyntax("[TOOL_CALLS]", "[TOOL_CALLS]", lambda n, _: f"[TOOL_CALLS]{n}[ARGS]", ""),
    # Phi-4-mini and FireFunction v2 write a space before `functools[` (their templates do).
    "phi4": CallSyntax(" functools[", " functools[", lambda n, _: f' functools[{{"name": {_q(n)}, "arguments": ', "}]"),
    "jamba": CallSyntax(
        "<tool_calls>",
        "<tool_calls>[",
        lambda n, _: f'<tool_calls>[{{"name": {_q(n)}, "arguments": ',
        "}]</tool_calls>",
    ),
    "minimax_m1": CallSyntax(
        "<tool_calls>",
        "<tool_calls>\n",
        lambda n, _: f'<tool_calls>\n{{"name": {_q(n)}, "arguments": ',
        "}\n</tool_calls>",
    ),
    "pythonic": CallSyntax("[", "[", lambda n, _: f"[{n}("),
    "harmony": CallSyntax(
        "<|channel|>commentary to=",
        "<|channel|>commentary to=functions.",
        lambda n, _: f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>",
        "<|call|>",
    ),
    "deepseek_v3": CallSyntax(
        _DS_CALLS,
        f"{_DS_CALLS}function<{FB}tool{SP}sep{FB}>",
        lambda n, _: f"{_DS_CALLS}function<{FB}tool{SP}sep{FB}>{n}\n```json\n",
        f"\n```<{FB}tool{SP}call{SP}end{FB}>",
    ),
    "deepseek_v3_1": CallSyntax(
        _DS_CALLS, _DS_CALLS, lambda n, _: f"{_DS_CALLS}{n}<{FB}tool{SP}sep{FB}>", f"<{FB}tool{SP}call{SP}end{FB}>"
    ),
    "deepseek_v3_2": CallSyntax(
        f"<{FB}DSML{FB}function_calls>",
        f'<{FB}DSML{FB}function_calls>\n<{FB}DSML{FB}invoke name="',
        lambda n, _: f'<{FB}DSML{FB}function_calls>\n<{FB}DSML{FB}invoke name="{n}">\n',
    ),
    "deepseek_v4": CallSyntax(
        f"<{FB}DSML{FB}tool_calls>",
        f'<{FB}DSML{FB}tool_calls>\n<{FB}DSML{FB}invoke name="',
        lambda n, _: f'<{FB}DSML{FB}tool_calls>\n<{FB}DSML{FB}invoke name="{n}">\n',
    ),
    "kimi_k2": CallSyntax(
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.",
        lambda n, i: f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
    ),
    "glm45": CallSyntax("<tool_call>", "<tool_call>", lambda n, _: f"<tool_call>{n}\n"),
    "glm47": CallSyntax("<tool_call>", "<tool_call>", lambda n, _: f"<tool_call>{n}"),
    "minimax_m2": CallSyntax(
        "<minimax:tool_call>",
        '<minimax:tool_call>\n<invoke name="',
        lambda n, _: f'<minimax:tool_call>\n<invoke name="{n}">\n',
    ),
    "gemma4": CallSyntax("<|tool_call>", "<|tool_call>call:", lambda n, _: f"<|tool_call>call:{n}"),
    "apertus": CallSyntax(
        "<|tools_prefix|>", "<|tools_prefix|>[{", lambda n, _: f"<|tools_prefix|>[{{{_q(n)}: ", "}]<|tools_suffix|>"
    ),
    "cohere_command4": CallSyntax(
        "<|START_ACTION|>",
        "<|START_ACTION|>[\n    {",
        # Ids count the calls of one action block; a forced call is its first.
        lambda n, _: f'<|START_ACTION|>[\n    {{"tool_call_id": "0", "tool_name": {_q(n)}, "parameters": ',
    ),
    "deepseek_v41": CallSyntax(
        f"<{FB}DSML{FB} calls>",
        f'<{FB}DSML{FB} calls>\n<{FB}DSML{FB} invoke name="',
        lambda n, _: f'<{FB}DSML{FB} calls>\n<{FB}DSML{FB} invoke name="{n}">\n',
    ),
    "dots": CallSyntax(
        "<dots_function_call>",
        '<dots_function_call>\n<invoke name="',
        lambda n, _: f'<dots_function_call>\n<invoke name="{n}">\n',
    ),
    "functiongemma": CallSyntax(
        "<start_function_call>", "<start_function_call>call:", lambda n, _: f"<start_function_call>call:{n}"
    ),
    "gigachat3": CallSyntax(
        _GIGACHAT,
        f"{_GIGACHAT}\n{{",
        lambda n, _: f'{_GIGACHAT}\n{{"name": {_q(n)}, "arguments": ',
        "}",
    ),
    "gigachat35": CallSyntax(
        f"<{FB}GCML{FB}tool_calls>",
        f'<{FB}GCML{FB}tool_calls>\n<{FB}GCML{FB}invoke name="',
        lambda n, _: f'<{FB}GCML{FB}tool_calls>\n<{FB}GCML{FB}invoke name="{n}">\n',
    ),
    "granite": CallSyntax(
        "<|tool_call|>", "<|tool_call|>[", lambda n, _: f'<|tool_call|>[{{"name": {_q(n)}, "arguments": ', "}]"
    ),
    "hy_v3": CallSyntax(
        "<tool_calls:opensource>",
        "<tool_calls:opensource>\n<tool_call:opensource>",
        lambda n, _: f"<tool_calls:opensource>\n<tool_call:opensource>{n}<tool_sep:opensource>\n",
    ),
    "hy_v4": CallSyntax(
        "<tool_calls:opensource>",
        "<tool_calls:opensource><tool_call:opensource>",
        lambda n, _: f"<tool_calls:opensource><tool_call:opensource>{n}",
    ),
    "inkling": CallSyntax(
        "<|content_invoke_tool_json|>",
        "<|content_invoke_tool_json|>{",
        lambda n, _: f'<|content_invoke_tool_json|>{{"name": {_q(n)}, "args": ',
        "}<|end_message|>",
    ),
    "internlm": CallSyntax(
        "<|action_start|><|plugin|>",
        "<|action_start|><|plugin|>\n{",
        lambda n, _: f'<|action_start|><|plugin|>\n{{"name": {_q(n)}, "parameters": ',
        "}<|action_end|>",
    ),
    "k2_horizon": CallSyntax(
        "<ifm|tool_calls>", "<ifm|tool_calls><ifm|tool_call>", lambda n, _: f"<ifm|tool_calls><ifm|tool_call>{n}"
    ),
    "kimi_k3": CallSyntax(
        "<|open|>tools<|sep|>",
        '<|open|>tools<|sep|><|open|>call tool="',
        # Indexes count the calls of one tools channel (from 1); a forced call is its first.
        lambda n, _: f'<|open|>tools<|sep|><|open|>call tool="{n}" index="1"<|sep|>',
    ),
    "lfm2": CallSyntax("<|tool_call_start|>", "<|tool_call_start|>[", lambda n, _: f"<|tool_call_start|>[{n}("),
    "ling3": CallSyntax("<tool_call>", "<tool_call>", lambda n, _: f"<tool_call>{n}\n"),
    "longcat": CallSyntax(
        "<longcat_tool_call>",
        "<longcat_tool_call>\n",
        lambda n, _: f'<longcat_tool_call>\n{{"name": {_q(n)}, "arguments": ',
        "}\n</longcat_tool_call>",
    ),
    "minicpm5": CallSyntax('<function name="', '<function name="', lambda n, _: f'<function name="{n}">'),
    "minimax_m3": CallSyntax(
        f"{_MM}<tool_call>",
        f'{_MM}<tool_call>\n{_MM}<invoke name="',
        lambda n, _: f'{_MM}<tool_call>\n{_MM}<invoke name="{n}">',
    ),
    # The call is a message on the tool's own channel: its header names the tool.
    "muse_glimmer": CallSyntax(
        " to=",
        " to=",
        lambda n, _: f' to={n}<|message|><atem:function_calls>\n<atem:invoke name="{n}">\n',
    ),
    "olmo3": CallSyntax("<function_calls>", "<function_calls>", lambda n, _: f"<function_calls>{n}("),
    "plamo3": CallSyntax(
        _PLAMO_CALLS,
        f"{_PLAMO_CALLS}<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>",
        lambda n, _: (
            f"{_PLAMO_CALLS}<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{n}"
            "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
        ),
        "<|plamo:end_tool_arguments:plamo|>",
    ),
    # Seed-OSS writes a newline before each call.
    "seed_oss": CallSyntax(
        "\n<seed:tool_call>",
        "\n<seed:tool_call>\n<function=",
        lambda n, _: f"\n<seed:tool_call>\n<function={n}>\n",
    ),
    "step3": CallSyntax(
        f"<{FB}tool_calls_begin{FB}>",
        f'<{FB}tool_calls_begin{FB}><{FB}tool_call_begin{FB}>function<{FB}tool_sep{FB}><steptml:invoke name="',
        lambda n, _: (
            f'<{FB}tool_calls_begin{FB}><{FB}tool_call_begin{FB}>function<{FB}tool_sep{FB}><steptml:invoke name="{n}">'
        ),
    ),
    "functionary_v3_1": CallSyntax("<function=", "<function=", lambda n, _: f"<function={n}>", "</function>"),
    # Command R+ writes its JSON indented, so a guide gets no arguments tag.
    "cohere_command_r": CallSyntax(
        "\nAction:",
        "\nAction:\n```json\n[\n    {\n",
        lambda n, _: f'\nAction:\n```json\n[\n    {{\n        "tool_name": {_q(n)},\n        "parameters": ',
    ),
    "xlam": CallSyntax("[", '[{"name": ', lambda n, _: f'[{{"name": {_q(n)}, "arguments": ', "}]"),
}
# Formats that write another's calls (their parser is that format's engine with
# other framing around the calls).
CALL_SYNTAX.update(
    {
        "ernie45": CALL_SYNTAX["hermes"],
        "granite4": CALL_SYNTAX["hermes"],
        "hunyuan_a13b": CALL_SYNTAX["jamba"],
        "mimo": CALL_SYNTAX["qwen3_coder"],
        "step3p5": CALL_SYNTAX["qwen3_coder"],
        "poolside_v1": CALL_SYNTAX["glm47"],
        "spark25": CALL_SYNTAX["glm47"],
    }
)


def call_syntax(tool_parser: str | None) -> CallSyntax | None:
    """The syntax of `tool_parser`'s calls (its canonical name), if known."""
    return CALL_SYNTAX.get((tool_parser or "").lower())
