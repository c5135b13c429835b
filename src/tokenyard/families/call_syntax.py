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


def _name_after(head: str, tail: str = "", *, trigger: str | None = None, end: str | None = None) -> CallSyntax:
    """A call is `head` (a prefill committing to some call), the tool's name, then
    `tail`; every call starts with `trigger` (by default `head`)."""
    return CallSyntax(head if trigger is None else trigger, head, lambda n, _: f"{head}{n}{tail}", end)


def _invoke(section: str, invoke: str, tail: str = '">\n') -> CallSyntax:
    """A call section `section`, then `invoke name="NAME"` on the next line (the
    DSML and MiniMax XML families, each with its own spelling of the tags)."""
    return _name_after(f'{section}\n{invoke} name="', tail, trigger=section)


def _json_object(
    head: str,
    end: str | None,
    *,
    arguments: str = "arguments",
    trigger: str | None = None,
    any_opener: str | None = None,
) -> CallSyntax:
    """A call is `head`, then the JSON object `{"name": NAME, "<arguments>": ...}`.
    `trigger` is by default `head` without the newline or bracket that opens the
    list or object; `any_opener` is by default `head`."""
    return CallSyntax(
        head.rstrip("\n[{") if trigger is None else trigger,
        head if any_opener is None else any_opener,
        lambda n, _: f'{head}{{"name": {_q(n)}, "{arguments}": ',
        end,
    )


_PLAMO_NAME = f"{_PLAMO_CALLS}<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
_PLAMO_ARGUMENTS = (
    "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
)
_STEP3_CALL = f"<{FB}tool_calls_begin{FB}><{FB}tool_call_begin{FB}>function<{FB}tool_sep{FB}>"

CALL_SYNTAX: dict[str, CallSyntax] = {
    "hermes": _json_object("<tool_call>\n", "}\n</tool_call>"),
    "qwen3_coder": _name_after("<tool_call>\n<function=", ">\n", trigger="<tool_call>"),
    "nemotron_deci": _json_object("<TOOLCALL>[", "}]</TOOLCALL>"),
    "llama3_json": _json_object("<|python_tag|>", "}", arguments="parameters"),
    "mistral": _name_after("[TOOL_CALLS]", "[ARGS]", end=""),
    # Phi-4-mini and FireFunction v2 write a space before `functools[` (their templates do).
    "phi4": _json_object(" functools[", "}]", trigger=" functools["),
    "jamba": _json_object("<tool_calls>[", "}]</tool_calls>"),
    "minimax_m1": _json_object("<tool_calls>\n", "}\n</tool_calls>"),
    "pythonic": _name_after("[", "("),
    "harmony": _name_after(
        "<|channel|>commentary to=functions.",
        " <|constrain|>json<|message|>",
        trigger="<|channel|>commentary to=",
        end="<|call|>",
    ),
    "deepseek_v3": _name_after(
        f"{_DS_CALLS}function<{FB}tool{SP}sep{FB}>",
        "\n```json\n",
        trigger=_DS_CALLS,
        end=f"\n```<{FB}tool{SP}call{SP}end{FB}>",
    ),
    "deepseek_v3_1": _name_after(_DS_CALLS, f"<{FB}tool{SP}sep{FB}>", end=f"<{FB}tool{SP}call{SP}end{FB}>"),
    "deepseek_v3_2": _invoke(f"<{FB}DSML{FB}function_calls>", f"<{FB}DSML{FB}invoke"),
    "deepseek_v4": _invoke(f"<{FB}DSML{FB}tool_calls>", f"<{FB}DSML{FB}invoke"),
    "kimi_k2": CallSyntax(
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.",
        lambda n, i: f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
    ),
    "glm45": _name_after("<tool_call>", "\n"),
    "glm47": _name_after("<tool_call>"),
    "minimax_m2": _invoke("<minimax:tool_call>", "<invoke"),
    "gemma4": _name_after("<|tool_call>call:", trigger="<|tool_call>"),
    "apertus": CallSyntax(
        "<|tools_prefix|>", "<|tools_prefix|>[{", lambda n, _: f"<|tools_prefix|>[{{{_q(n)}: ", "}]<|tools_suffix|>"
    ),
    "cohere_command4": CallSyntax(
        "<|START_ACTION|>",
        "<|START_ACTION|>[\n    {",
        # Ids count the calls of one action block; a forced call is its first.
        lambda n, _: f'<|START_ACTION|>[\n    {{"tool_call_id": "0", "tool_name": {_q(n)}, "parameters": ',
    ),
    "deepseek_v41": _invoke(f"<{FB}DSML{FB} calls>", f"<{FB}DSML{FB} invoke"),
    "dots": _invoke("<dots_function_call>", "<invoke"),
    "functiongemma": _name_after("<start_function_call>call:", trigger="<start_function_call>"),
    "gigachat3": _json_object(f"{_GIGACHAT}\n", "}", any_opener=f"{_GIGACHAT}\n{{"),
    "gigachat35": _invoke(f"<{FB}GCML{FB}tool_calls>", f"<{FB}GCML{FB}invoke"),
    "granite": _json_object("<|tool_call|>[", "}]"),
    "hy_v3": _name_after(
        "<tool_calls:opensource>\n<tool_call:opensource>", "<tool_sep:opensource>\n", trigger="<tool_calls:opensource>"
    ),
    "hy_v4": _name_after("<tool_calls:opensource><tool_call:opensource>", trigger="<tool_calls:opensource>"),
    "inkling": _json_object(
        "<|content_invoke_tool_json|>",
        "}<|end_message|>",
        arguments="args",
        any_opener="<|content_invoke_tool_json|>{",
    ),
    "internlm": _json_object(
        "<|action_start|><|plugin|>\n",
        "}<|action_end|>",
        arguments="parameters",
        any_opener="<|action_start|><|plugin|>\n{",
    ),
    "k2_horizon": _name_after("<ifm|tool_calls><ifm|tool_call>", trigger="<ifm|tool_calls>"),
    # Indexes count the calls of one tools channel (from 1); a forced call is its first.
    "kimi_k3": _name_after(
        '<|open|>tools<|sep|><|open|>call tool="', '" index="1"<|sep|>', trigger="<|open|>tools<|sep|>"
    ),
    "lfm2": _name_after("<|tool_call_start|>[", "(", trigger="<|tool_call_start|>"),
    "longcat": _json_object("<longcat_tool_call>\n", "}\n</longcat_tool_call>"),
    "minicpm5": _name_after('<function name="', '">'),
    "minimax_m3": _invoke(f"{_MM}<tool_call>", f"{_MM}<invoke", '">'),
    # The call is a message on the tool's own channel: its header names the tool.
    "muse_glimmer": CallSyntax(
        " to=",
        " to=",
        lambda n, _: f' to={n}<|message|><atem:function_calls>\n<atem:invoke name="{n}">\n',
    ),
    "olmo3": _name_after("<function_calls>", "("),
    "plamo3": _name_after(
        _PLAMO_NAME, _PLAMO_ARGUMENTS, trigger=_PLAMO_CALLS, end="<|plamo:end_tool_arguments:plamo|>"
    ),
    # Seed-OSS writes a newline before each call.
    "seed_oss": _name_after("\n<seed:tool_call>\n<function=", ">\n", trigger="\n<seed:tool_call>"),
    "step3": _name_after(f'{_STEP3_CALL}<steptml:invoke name="', '">', trigger=f"<{FB}tool_calls_begin{FB}>"),
    "functionary_v3_1": _name_after("<function=", ">", end="</function>"),
    # Command R+ writes its JSON indented, so a guide gets no arguments tag.
    "cohere_command_r": CallSyntax(
        "\nAction:",
        "\nAction:\n```json\n[\n    {\n",
        lambda n, _: f'\nAction:\n```json\n[\n    {{\n        "tool_name": {_q(n)},\n        "parameters": ',
    ),
    "xlam": _json_object("[", "}]", trigger="[", any_opener='[{"name": '),
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
        "ling3": CALL_SYNTAX["glm45"],
        "poolside_v1": CALL_SYNTAX["glm47"],
        "spark25": CALL_SYNTAX["glm47"],
    }
)


def call_syntax(tool_parser: str | None) -> CallSyntax | None:
    """The syntax of `tool_parser`'s calls (its canonical name), if known."""
    return CALL_SYNTAX.get((tool_parser or "").lower())
