"""What a model of each family emits: turn a planned turn into raw output text.

The scripted and simulated engines answer in any family's wire format with this,
so end-to-end tests drive every parser through real harnesses, and benchmarks and
round-trip tests get realistic raw output. It is the inverse of `parsing/`, written
from REFERENCE §1 independently of the parsers so that one can check the other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FB = "\uff5c"  # DeepSeek's full-width bar
SP = "\u2581"
MINIMAX_NS = "]<]minimax[>["  # MiniMax M3's namespace token before every tag
HY = ":opensource"  # the suffix of Hunyuan's special tokens in its public template


@dataclass(frozen=True)
class Reasoning:
    text: str


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


Segment = Reasoning | Text | Call

# reasoning parser name -> (start, end, forced: the first block has no start marker)
REASONING_MARKERS: dict[str, tuple[str, str, bool]] = {
    **{n: ("<think>", "</think>", False) for n in ("basic", "qwen3", "nemotron_deci", "glm45", "deepseek_v4")},
    **{
        n: ("<think>", "</think>", True)
        for n in (
            "deepseek_r1",
            "deepseek_v3",
            "deepseek_v3_1",
            "deepseek_v3_2",
            "step3",
            "nemotron_nano",
            "nemotron3",
            "kimi_k25",
            "minimax_m2",
            "minimax_append_think",
        )
    },
    "kimi": ("◁think▷", "◁/think▷", False),
    "kimi_k3": ("<|open|>think<|sep|>", "<|close|>think<|sep|>", True),
    "ling3": ("<think>", "</think>", True),
    "mimo": ("<think>", "</think>", True),
    "muse_glimmer": ("to=self<|message|>", "<|eom|>", False),
    "olmo3": ("<think>", "</think>", True),
    "plamo3": ("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>", True),
    "mistral": ("[THINK]", "[/THINK]", False),
    "granite": ("Here's my thought process:", "Here's my response:", False),
    "gemma4": ("<|channel>thought\n", "<channel|>", False),
    "seed_oss": ("<seed:think>", "</seed:think>", False),
    "spark25": ("<think>", "</think>", True),
    "step3p5": ("<think>", "</think>", True),
    "solar_open2": ("<|think:start|>", "<|think:end|>", True),
    "minimax_m3": ("<mm:think>", "</mm:think>", False),
    "inkling": ("<|content_thinking|>", "<|end_message|>", False),
    "apertus": ("<|inner_prefix|>", "<|inner_suffix|>", False),
    "cohere_command": ("<|START_THINKING|>", "<|END_THINKING|>", True),
    "deepseek_v41": ("<think>", "</think>", False),
    "ernie45": ("<think>", "</think>", True),
    "hunyuan_a13b": ("<think>", "</think>", False),
    "hy_v3": (f"<think{HY}>", f"</think{HY}>", False),
    "k2_horizon": ("<ifm|think>", "</ifm|think>", True),
    "apriel": ("Here are my reasoning steps:\n", "[BEGIN FINAL RESPONSE]", True),
    "solar_open": ("<|think|>", "<|end|>", False),
}


# The reasoning format each tool-call format's family pairs it with.
FAMILY_REASONING: dict[str, str | None] = {
    "hermes": "qwen3",
    "qwen3_coder": "qwen3",
    "nemotron_deci": "nemotron_deci",
    "llama3_json": None,
    "mistral": "mistral",
    "phi4": None,
    "jamba": None,
    "minimax_m1": "qwen3",
    "pythonic": None,
    "harmony": "gpt_oss",
    "deepseek_v3": "deepseek_v3",
    "deepseek_v3_1": "deepseek_v3_1",
    "deepseek_v3_2": "deepseek_v3_2",
    "deepseek_v4": "deepseek_v4",
    "kimi_k2": "kimi_k25",
    "kimi_k3": "kimi_k3",
    "lfm2": "qwen3",
    "ling3": "ling3",
    "longcat": None,
    "mimo": "mimo",
    "minicpm5": "qwen3",
    "muse_glimmer": "muse_glimmer",
    "olmo3": "olmo3",
    "glm45": "glm45",
    "glm47": "glm45",
    "minimax_m2": "minimax_m2",
    "gemma4": "gemma4",
    "seed_oss": "seed_oss",
    "spark25": "spark25",
    "plamo3": "plamo3",
    "poolside_v1": "qwen3",
    "step3": "step3",
    "xlam": None,
    "generic_json": None,
    "step3p5": "step3p5",
    "granite4": None,
    "minimax_m3": "minimax_m3",
    "inkling": "inkling",
    "apertus": "apertus",
    "cohere_command4": "cohere_command",
    "deepseek_v41": "deepseek_v41",
    "dots": None,
    "ernie45": "ernie45",
    "functiongemma": None,
    "gigachat3": None,
    "gigachat35": None,
    "granite": None,
    "granite_20b_fc": None,
    "hunyuan_a13b": "hunyuan_a13b",
    "hy_v3": "hy_v3",
    "hy_v4": "hy_v3",
    "internlm": "qwen3",
    "k2_horizon": "k2_horizon",
    "solar_open2": "solar_open2",
    "solar_open": "solar_open",
    "apriel": "apriel",
    "firefunction_v2": None,
    "cohere_command_r": None,
    "functionary_v3_1": None,
    "functionary_v3_2": None,
}


def render_output(
    segments: Sequence[Segment], tool_format: str | None, reasoning_format: str | None, *, calls_before: int = 0
) -> str:
    """Raw output for `segments` in the given family formats (names as the parsers
    use them). Consecutive calls share one tool-call section where the format has
    sections. `calls_before`: tool calls earlier in the conversation (Kimi numbers
    its call ids across the whole conversation)."""
    if tool_format == "harmony" or reasoning_format == "gpt_oss":
        return _render_harmony(segments)
    if tool_format == "inkling" or reasoning_format == "inkling":
        return _render_inkling(segments)
    if tool_format == "muse_glimmer" or reasoning_format == "muse_glimmer":
        return _render_muse_glimmer(segments)
    if tool_format == "kimi_k3" or reasoning_format == "kimi_k3":
        return _render_kimi_k3(segments, thinking=reasoning_format == "kimi_k3")
    out: list[str] = []
    first_reasoning = True
    i = 0
    call_counter = calls_before
    if reasoning_format is not None and REASONING_MARKERS[reasoning_format][2]:
        if segments and not isinstance(segments[0], Reasoning):
            # Forced families always close the block the template opened, even
            # when they have nothing to think.
            out.append(REASONING_MARKERS[reasoning_format][1] + "\n\n")
            first_reasoning = False
    while i < len(segments):
        segment = segments[i]
        if isinstance(segment, Reasoning):
            if reasoning_format is None:
                raise ValueError("a reasoning segment needs a reasoning format")
            start, end, forced = REASONING_MARKERS[reasoning_format]
            opener = "" if (forced and first_reasoning and not out) else start
            sep = "" if start.endswith("\n") else "\n"
            out.append(f"{opener}{sep if opener else ''}{segment.text}\n{end}\n\n")
            first_reasoning = False
            i += 1
        elif isinstance(segment, Text):
            out.append(segment.text)
            i += 1
        else:
            calls: list[Call] = []
            while i < len(segments) and isinstance(segment := segments[i], Call):
                calls.append(segment)
                i += 1
            if tool_format is None:
                raise ValueError("a call segment needs a tool format")
            out.append(_render_calls(tool_format, calls, call_counter))
            call_counter += len(calls)
    return "".join(out)


def _render_calls(fmt: str, calls: list[Call], counter: int) -> str:
    fmt = fmt.lower()
    if fmt == "apertus":
        body = ", ".join(
            "{" + json.dumps(c.name) + ": " + json.dumps(c.arguments, ensure_ascii=False) + "}" for c in calls
        )
        return f"<|tools_prefix|>[{body}]<|tools_suffix|>"
    if fmt in ("cohere_command3", "cohere_command4"):
        actions = ",\n".join(
            "    "
            + json.dumps({"tool_call_id": str(n), "tool_name": c.name, "parameters": c.arguments}, ensure_ascii=False)
            for n, c in enumerate(calls)
        )
        return f"<|START_ACTION|>[\n{actions}\n]<|END_ACTION|>"
    if fmt in ("dots", "gigachat35"):
        # dots: MiniMax-M2's untyped invoke elements; GigaChat 3.5: DSML-style GCML.
        gcml = fmt == "gigachat35"
        tag = f"{FB}GCML{FB}" if gcml else ""
        body = "".join(
            f'<{tag}invoke name="{c.name}">\n'
            + "".join(
                f'<{tag}parameter name="{k}"'
                + (f' string="{"true" if isinstance(v, str) else "false"}"' if gcml else "")
                + f">{_plain(v)}</{tag}parameter>\n"
                for k, v in c.arguments.items()
            )
            + f"</{tag}invoke>\n"
            for c in calls
        )
        block = f"{tag}tool_calls" if gcml else "dots_function_call"
        return f"<{block}>\n{body}</{block}>"
    if fmt == "functiongemma":
        return "".join(
            f"<start_function_call>call:{c.name}{_gemma_value(c.arguments, '<escape>')}<end_function_call>"
            for c in calls
        )
    if fmt == "gigachat3":
        # The `function call` role after the assistant's message; one call per role message.
        return "".join(
            "<|message_sep|>\n\nfunction call<|role_sep|>\n"
            + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            for c in calls
        )
    if fmt == "granite":
        return "<|tool_call|>" + _json_list(calls, "arguments")
    if fmt == "granite_20b_fc":
        return "".join(
            "<function_call> " + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            for c in calls
        )
    if fmt == "hunyuan_a13b":
        return "<tool_calls>" + _json_list(calls, "arguments") + "</tool_calls>"
    if fmt in ("hy_v3", "hy_v4"):
        # HY3's template: a newline after every tag pair and `<tool_sep>` after the
        # name; HY4 writes the calls back to back.
        nl, sep = ("\n", f"<tool_sep{HY}>\n") if fmt == "hy_v3" else ("", "")
        body = "".join(
            f"<tool_call{HY}>{c.name}{sep}"
            + "".join(
                f"<arg_key{HY}>{k}</arg_key{HY}>{nl}<arg_value{HY}>{_plain(v)}</arg_value{HY}>{nl}"
                for k, v in c.arguments.items()
            )
            + f"</tool_call{HY}>{nl}"
            for c in calls
        )
        return f"<tool_calls{HY}>{nl}{body}</tool_calls{HY}>"
    if fmt == "internlm":
        return "".join(
            "<|action_start|><|plugin|>\n"
            + json.dumps({"name": c.name, "parameters": c.arguments}, ensure_ascii=False)
            + "<|action_end|>"
            for c in calls
        )
    if fmt == "k2_horizon":
        body = "".join(
            f"<ifm|tool_call>{c.name}"
            + "".join(
                f"<ifm|arg_key>{k}</ifm|arg_key><ifm|arg_type>{_json_type(v)}</ifm|arg_type>"
                f"<ifm|arg_value>{_plain(v)}</ifm|arg_value>"
                for k, v in c.arguments.items()
            )
            + "</ifm|tool_call>"
            for c in calls
        )
        return f"<ifm|tool_calls>{body}</ifm|tool_calls>"
    if fmt in ("hermes", "qwen25", "ernie45"):
        return "".join(
            "<tool_call>\n"
            + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            + "\n</tool_call>\n"
            for c in calls
        )
    if fmt in ("qwen3_coder", "nemotron_nano", "step3p5"):
        return "".join(
            f"<tool_call>\n<function={c.name}>\n"
            + "".join(f"<parameter={k}>\n{_plain(v)}\n</parameter>\n" for k, v in c.arguments.items())
            + "</function>\n</tool_call>\n"
            for c in calls
        )
    if fmt == "seed_oss":
        # Its template wraps each call in its own section, values without newlines.
        return "".join(
            f"\n<seed:tool_call>\n<function={c.name}>\n"
            + "".join(f"<parameter={k}>{_plain(v)}</parameter>\n" for k, v in c.arguments.items())
            + "</function>\n</seed:tool_call>"
            for c in calls
        )
    if fmt == "granite4":
        return "".join(
            f'<tool_call>\n{{"name": "{c.name}", "arguments": {json.dumps(c.arguments, ensure_ascii=False)}}}\n</tool_call>'
            for c in calls
        )
    if fmt == "minimax_m3":
        body = "".join(
            f'{MINIMAX_NS}<invoke name="{c.name}">'
            + "".join(f"{MINIMAX_NS}<{k}>{_minimax_xml(v)}{MINIMAX_NS}</{k}>" for k, v in c.arguments.items())
            + f"{MINIMAX_NS}</invoke>\n"
            for c in calls
        )
        return f"{MINIMAX_NS}<tool_call>\n{body}{MINIMAX_NS}</tool_call>"
    if fmt == "nemotron_deci":
        return "<TOOLCALL>" + _json_list(calls, "arguments") + "</TOOLCALL>"
    if fmt in ("jamba", "apriel"):
        return "<tool_calls>" + _json_list(calls, "arguments") + "</tool_calls>"
    if fmt == "solar_open":
        body = "".join(
            f"<|tool_call:begin|>{counter + n:010d}<|tool_call:name|>{c.name}<|tool_call:args|>"
            + json.dumps(c.arguments, ensure_ascii=False)
            + "<|tool_call:end|>"
            for n, c in enumerate(calls)
        )
        return f"<|begin|>assistant<|tool_calls|>{body}<|calls|>"
    if fmt == "cohere_command_r":
        listed = json.dumps(
            [{"tool_name": c.name, "parameters": c.arguments} for c in calls], indent=4, ensure_ascii=False
        )
        return "\nAction:\n```json\n" + listed + "\n```"
    if fmt == "functionary_v3_1":
        return "".join(
            f"<function={c.name}>" + json.dumps(c.arguments, ensure_ascii=False) + "</function>" for c in calls
        )
    if fmt == "functionary_v3_2":
        return "".join(f">>>{c.name}\n" + json.dumps(c.arguments, ensure_ascii=False) for c in calls)
    if fmt == "minimax_m1":
        # One call object per line, as the model's function-call guide writes them.
        body = "".join(json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False) + "\n" for c in calls)
        return f"<tool_calls>\n{body}</tool_calls>"
    if fmt in ("phi4", "firefunction_v2"):
        return " functools" + _json_list(calls, "arguments")
    if fmt == "llama3_json":
        return "<|python_tag|>" + "; ".join(
            json.dumps({"name": c.name, "parameters": c.arguments}, ensure_ascii=False) for c in calls
        )
    if fmt == "mistral":
        return "".join(f"[TOOL_CALLS]{c.name}[ARGS]" + json.dumps(c.arguments, ensure_ascii=False) for c in calls)
    if fmt == "pythonic":
        return (
            "["
            + ", ".join(
                f"{c.name}(" + ", ".join(f"{k}={_python_literal(v)}" for k, v in c.arguments.items()) + ")"
                for c in calls
            )
            + "]"
        )
    if fmt == "deepseek_v3":
        body = "".join(
            f"<{FB}tool{SP}call{SP}begin{FB}>function<{FB}tool{SP}sep{FB}>{c.name}\n```json\n"
            + json.dumps(c.arguments, ensure_ascii=False)
            + f"\n```<{FB}tool{SP}call{SP}end{FB}>"
            for c in calls
        )
        return f"<{FB}tool{SP}calls{SP}begin{FB}>{body}<{FB}tool{SP}calls{SP}end{FB}>"
    if fmt == "deepseek_v3_1":
        body = "".join(
            f"<{FB}tool{SP}call{SP}begin{FB}>{c.name}<{FB}tool{SP}sep{FB}>"
            + json.dumps(c.arguments, ensure_ascii=False)
            + f"<{FB}tool{SP}call{SP}end{FB}>"
            for c in calls
        )
        return f"<{FB}tool{SP}calls{SP}begin{FB}>{body}<{FB}tool{SP}calls{SP}end{FB}>"
    if fmt in ("deepseek_v3_2", "deepseek_v4", "deepseek_v41"):
        block = {"deepseek_v3_2": "function_calls", "deepseek_v4": "tool_calls", "deepseek_v41": "calls"}[fmt]
        dsml = f"{FB}DSML{FB} " if fmt == "deepseek_v41" else f"{FB}DSML{FB}"
        body = "".join(
            f'<{dsml}invoke name="{c.name}">\n'
            + "".join(
                f'<{dsml}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
                f"{_plain(v)}</{dsml}parameter>\n"
                for k, v in c.arguments.items()
            )
            + f"</{dsml}invoke>\n"
            for c in calls
        )
        return f"<{dsml}{block}>\n{body}</{dsml}{block}>"
    if fmt == "kimi_k2":
        body = "".join(
            f"<|tool_call_begin|>functions.{c.name}:{counter + n}<|tool_call_argument_begin|>"
            + json.dumps(c.arguments, ensure_ascii=False)
            + "<|tool_call_end|>"
            for n, c in enumerate(calls)
        )
        return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"
    if fmt == "solar_open2":
        return "".join(
            f"<|tool_call:start|>{c.name}\n"
            + "".join(
                f"<|tool_arg:start|>{k}<|tool_arg:value|>{_plain(v)}<|tool_arg:end|>\n" for k, v in c.arguments.items()
            )
            + "<|tool_call:end|>"
            for c in calls
        )
    if fmt in ("glm45", "glm47"):
        nl = "\n" if fmt == "glm45" else ""
        return "".join(
            f"<tool_call>{c.name}{nl}"
            + "".join(
                f"<arg_key>{k}</arg_key>{nl}<arg_value>{_plain(v)}</arg_value>{nl}" for k, v in c.arguments.items()
            )
            + "</tool_call>"
            for c in calls
        )
    if fmt == "minimax_m2":
        body = "".join(
            f'<invoke name="{c.name}">\n'
            + "".join(f'<parameter name="{k}">{_plain(v)}</parameter>\n' for k, v in c.arguments.items())
            + "</invoke>\n"
            for c in calls
        )
        return f"<minimax:tool_call>\n{body}</minimax:tool_call>"
    if fmt == "lfm2":
        # Its template: strings quoted, mappings as JSON, anything else as Python writes it.
        return (
            "<|tool_call_start|>["
            + ", ".join(
                f"{c.name}(" + ", ".join(f"{k}={_lfm2_value(v)}" for k, v in c.arguments.items()) + ")" for c in calls
            )
            + "]<|tool_call_end|>"
        )
    if fmt == "ling3":
        # Its template: a newline after the name and before each value and the close.
        return "\n".join(
            f"<tool_call>{c.name}\n"
            + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{_plain(v)}</arg_value>" for k, v in c.arguments.items())
            + "\n</tool_call>"
            for c in calls
        )
    if fmt == "longcat":
        return "".join(
            "<longcat_tool_call>\n"
            + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            + "\n</longcat_tool_call>"
            for c in calls
        )
    if fmt == "mimo":
        return "".join(
            f"<tool_call>\n<function={c.name}>\n"
            + "".join(f"<parameter={k}>{_plain(v)}</parameter>\n" for k, v in c.arguments.items())
            + "</function>\n</tool_call>\n"
            for c in calls
        )
    if fmt == "minicpm5":
        return "\n".join(
            f'<function name="{c.name}">'
            + "".join(f'<param name="{k}">{_minicpm5_value(v)}</param>' for k, v in c.arguments.items())
            + "</function>"
            for c in calls
        )
    if fmt == "olmo3":
        # One call per line; JSON's spelling of each value is also a Python literal
        # (true/false/null included, which OLMo 3 writes).
        lines = (
            f"{c.name}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in c.arguments.items()) + ")"
            for c in calls
        )
        return "<function_calls>" + "\n".join(lines) + "</function_calls>"
    if fmt == "step3":
        body = "".join(
            f'<{FB}tool_call_begin{FB}>function<{FB}tool_sep{FB}><steptml:invoke name="{c.name}">'
            + "".join(f'<steptml:parameter name="{k}">{_plain(v)}</steptml:parameter>' for k, v in c.arguments.items())
            + f"</steptml:invoke><{FB}tool_call_end{FB}>"
            for c in calls
        )
        return f"<{FB}tool_calls_begin{FB}>{body}<{FB}tool_calls_end{FB}>"
    if fmt == "xlam":
        return _json_list(calls, "arguments")
    if fmt == "generic_json":
        return "<TOOLCALL>" + _json_list(calls, "arguments") + "</TOOLCALL>"
    if fmt == "plamo3":
        body = "".join(
            f"<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{c.name}<|plamo:end_tool_name:plamo|>"
            "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
            + json.dumps(c.arguments, ensure_ascii=False)
            + "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
            for c in calls
        )
        return f"<|plamo:begin_tool_requests:plamo|>{body}<|plamo:end_tool_requests:plamo|>"
    if fmt == "poolside_v1":
        # Laguna's template: a glm47-like call per tag pair.
        return "".join(
            f"<tool_call>{c.name}"
            + "".join(f"<arg_key>{k}</arg_key><arg_value>{_plain(v)}</arg_value>" for k, v in c.arguments.items())
            + "</tool_call>"
            for c in calls
        )
    if fmt == "spark25":
        return "".join(
            f"<tool_call>{c.name}"
            + "".join(f"<arg_key>{k}</arg_key><arg_value>{_plain(v)}</arg_value>" for k, v in c.arguments.items())
            + "</tool_call>"
            for c in calls
        )
    if fmt == "gemma4":
        return "".join(f"<|tool_call>call:{c.name}{_gemma_value(c.arguments)}<tool_call|>" for c in calls)
    raise ValueError(f"no renderer for tool format {fmt!r}")


def _render_harmony(segments: Sequence[Segment]) -> str:
    out: list[str] = []
    for segment in segments:
        head = "<|start|>assistant" if out else ""
        if isinstance(segment, Reasoning):
            out.append(f"{head}<|channel|>analysis<|message|>{segment.text}<|end|>")
        elif isinstance(segment, Text):
            out.append(f"{head}<|channel|>final<|message|>{segment.text}<|end|>")
        else:
            out.append(
                f"{head}<|channel|>commentary to=functions.{segment.name} <|constrain|>json<|message|>"
                + json.dumps(segment.arguments, ensure_ascii=False)
                + "<|call|>"
            )
    return "".join(out)


def _render_inkling(segments: Sequence[Segment]) -> str:
    """Inkling's typed blocks; the prompt already ends with the first `<|message_model|>`."""
    out: list[str] = []
    for segment in segments:
        head = "<|message_model|>" if out else ""
        if isinstance(segment, Reasoning):
            out.append(f"{head}<|content_thinking|>{segment.text}<|end_message|>")
        elif isinstance(segment, Text):
            out.append(f"{head}<|content_text|>{segment.text}<|end_message|>")
        else:
            payload = json.dumps({"name": segment.name, "args": segment.arguments}, ensure_ascii=False)
            out.append(f"{head}<|content_invoke_tool_json|>{payload}<|end_message|>")
    return "".join(out)


def _render_muse_glimmer(segments: Sequence[Segment]) -> str:
    """Muse Glimmer's messages after the prompt's `<|start|>assistant`: reasoning to
    self, text to the user, each call in its own tool channel as an ATEM block;
    `<|eom|>` between messages, `<|eot|>` after the last."""
    out: list[str] = []
    for segment in segments:
        head = "<|start|>assistant" if out else ""
        if isinstance(segment, Reasoning):
            out.append(f"{head} to=self<|message|>{segment.text}<|eom|>")
        elif isinstance(segment, Text):
            out.append(f"{head} to=user<|message|>{segment.text}<|eom|>")
        else:
            out.append(
                f'{head} to={segment.name}<|message|><atem:function_calls>\n<atem:invoke name="{segment.name}">\n'
                + "".join(
                    f'<atem:parameter name="{k}">{_plain(v)}</atem:parameter>\n' for k, v in segment.arguments.items()
                )
                + "</atem:invoke>\n</atem:function_calls><|eom|>"
            )
    if out:
        out[-1] = out[-1][: -len("<|eom|>")] + "<|eot|>"
    return "".join(out)


def _render_kimi_k3(segments: Sequence[Segment], thinking: bool) -> str:
    """Kimi K3's XTML channels: the think channel the prompt opened (closed even
    when empty), then response channels for text and tools channels for calls."""

    def tag(name: str, **attributes: str) -> str:
        attrs = "".join(f' {k}="{v.replace("&", "&amp;").replace(chr(34), "&quot;")}"' for k, v in attributes.items())
        return f"<|open|>{name}{attrs}<|sep|>"

    def argument(key: str, value: Any) -> str:
        kind = (
            "string"
            if isinstance(value, str)
            else "boolean"
            if isinstance(value, bool)
            else "number"
            if isinstance(value, (int, float))
            else "null"
            if value is None
            else "array"
            if isinstance(value, list)
            else "object"
        )
        return tag("argument", key=key, type=kind) + _plain(value) + "<|close|>argument<|sep|>"

    out: list[str] = []
    i = 0
    if thinking and not (segments and isinstance(segments[0], Reasoning)):
        out.append("<|close|>think<|sep|>")
    while i < len(segments):
        segment = segments[i]
        if isinstance(segment, Reasoning):
            out.append(("" if not out else tag("think")) + segment.text + "<|close|>think<|sep|>")
            i += 1
        elif isinstance(segment, Text):
            out.append(tag("response") + segment.text + "<|close|>response<|sep|>")
            i += 1
        else:
            body: list[str] = []
            while i < len(segments) and isinstance(segments[i], Call):
                call = segments[i]
                assert isinstance(call, Call)
                body.append(
                    tag("call", tool=call.name, index=str(len(body) + 1))
                    + "".join(argument(k, v) for k, v in call.arguments.items())
                    + "<|close|>call<|sep|>"
                )
                i += 1
            out.append(tag("tools") + "".join(body) + "<|close|>tools<|sep|>")
    return "".join(out) + "<|close|>message<|sep|>"


def _json_list(calls: list[Call], key: str) -> str:
    return json.dumps([{"name": c.name, key: c.arguments} for c in calls], ensure_ascii=False)


def _plain(value: Any) -> str:
    """A parameter value as untyped formats write it: strings bare, else JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _python_literal(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_python_literal(k)}: {_python_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_python_literal(v) for v in value) + "]"
    return repr(value)


def _lfm2_value(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)  # the template writes 'text' (repr also escapes its quotes) and str() of the rest


def _minicpm5_value(value: Any) -> str:
    """MiniCPM 5's template: a string holding `<`, `&` or a newline in CDATA, other
    strings bare, anything else as Python's str() writes it."""
    if isinstance(value, str):
        return f"<![CDATA[{value}]]>" if any(c in value for c in "<&\n") else value
    return _python_literal(value) if isinstance(value, (dict, list)) else str(value)


def _minimax_xml(value: Any) -> str:
    """MiniMax M3's template: mappings become elements, lists `<item>` elements,
    booleans JSON, anything else its text; None is left out."""
    if isinstance(value, dict):
        return "".join(
            f"{MINIMAX_NS}<{k}>{_minimax_xml(v)}{MINIMAX_NS}</{k}>" for k, v in value.items() if v is not None
        )
    if isinstance(value, list):
        return "".join(f"{MINIMAX_NS}<item>{_minimax_xml(v)}{MINIMAX_NS}</item>" for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _gemma_value(value: Any, quote: str = '<|"|>') -> str:
    """Gemma's object syntax; FunctionGemma delimits strings with `<escape>`."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v, quote) for v in value) + "]"
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    return json.dumps(value)


def _json_type(value: Any) -> str:
    """The JSON Schema type name of a value (K2 Horizon's `arg_type`)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else "object"
