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
    "phi4": CallSyntax("functools[", "functools[", lambda n, _: f'functools[{{"name": {_q(n)}, "arguments": ', "}]"),
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
}


def call_syntax(tool_parser: str | None) -> CallSyntax | None:
    """The syntax of `tool_parser`'s calls (its canonical name), if known."""
    return CALL_SYNTAX.get((tool_parser or "").lower())
