"""What a model of each family emits: turn a planned turn into raw output text.

The scripted and simulated engines answer in any family's wire format with this,
so end-to-end tests drive every parser through real harnesses, and benchmarks and
round-trip tests get realistic raw output. It is the inverse of `parsing/`, written
from REFERENCE §1 independently of the parsers so that one can check the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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
        return HARMONY.render(segments)
    if tool_format == "inkling" or reasoning_format == "inkling":
        return INKLING.render(segments)
    if tool_format == "muse_glimmer" or reasoning_format == "muse_glimmer":
        return MUSE_GLIMMER.render(segments)
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
    if fmt in LAYOUTS:
        return LAYOUTS[fmt].render(calls, counter)
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
    if fmt == "functiongemma":
        return "".join(
            f"<start_function_call>call:{c.name}{_gemma_value(c.arguments, '<escape>')}<end_function_call>"
            for c in calls
        )
    if fmt == "cohere_command_r":
        listed = json.dumps(
            [{"tool_name": c.name, "parameters": c.arguments} for c in calls], indent=4, ensure_ascii=False
        )
        return "\nAction:\n```json\n" + listed + "\n```"
    if fmt == "pythonic":
        return (
            "["
            + ", ".join(
                f"{c.name}(" + ", ".join(f"{k}={_python_literal(v)}" for k, v in c.arguments.items()) + ")"
                for c in calls
            )
            + "]"
        )
    if fmt == "lfm2":
        # Its template: strings quoted, mappings as JSON, anything else as Python writes it.
        return (
            "<|tool_call_start|>["
            + ", ".join(
                f"{c.name}(" + ", ".join(f"{k}={_lfm2_value(v)}" for k, v in c.arguments.items()) + ")" for c in calls
            )
            + "]<|tool_call_end|>"
        )
    if fmt == "olmo3":
        # One call per line; JSON's spelling of each value is also a Python literal
        # (true/false/null included, which OLMo 3 writes).
        lines = (
            f"{c.name}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in c.arguments.items()) + ")"
            for c in calls
        )
        return "<function_calls>" + "\n".join(lines) + "</function_calls>"
    if fmt == "gemma4":
        return "".join(f"<|tool_call>call:{c.name}{_gemma_value(c.arguments)}<tool_call|>" for c in calls)
    raise ValueError(f"no renderer for tool format {fmt!r}")


@dataclass(frozen=True)
class Messages:
    """A format that writes each segment as its own message, `sep` between them (the
    prompt opened the first) and `end` after the last; `reasoning` and `text` name
    `{text}`."""

    sep: str
    reasoning: str
    text: str
    call: Callable[[Call], str]
    end: str = ""

    def render(self, segments: Sequence[Segment]) -> str:
        def message(s: Segment) -> str:
            if isinstance(s, Reasoning):
                return self.reasoning.format(text=s.text)
            return self.text.format(text=s.text) if isinstance(s, Text) else self.call(s)

        return self.sep.join(message(s) for s in segments) + (self.end if segments else "")


HARMONY = Messages(
    "<|start|>assistant",
    "<|channel|>analysis<|message|>{text}<|end|>",
    "<|channel|>final<|message|>{text}<|end|>",
    lambda c: (
        f"<|channel|>commentary to=functions.{c.name} <|constrain|>json<|message|>"
        + json.dumps(c.arguments, ensure_ascii=False)
        + "<|call|>"
    ),
)
# Inkling's typed blocks; the prompt already ends with the first `<|message_model|>`.
INKLING = Messages(
    "<|message_model|>",
    "<|content_thinking|>{text}<|end_message|>",
    "<|content_text|>{text}<|end_message|>",
    lambda c: (
        "<|content_invoke_tool_json|>"
        + json.dumps({"name": c.name, "args": c.arguments}, ensure_ascii=False)
        + "<|end_message|>"
    ),
)
# Muse Glimmer's messages after the prompt's `<|start|>assistant`: reasoning to self,
# text to the user, each call in its own tool channel as an ATEM block; `<|eom|>`
# between messages, `<|eot|>` after the last.
MUSE_GLIMMER = Messages(
    "<|eom|><|start|>assistant",
    " to=self<|message|>{text}",
    " to=user<|message|>{text}",
    lambda c: f" to={c.name}<|message|>{_ATEM.render([c])}",
    end="<|eot|>",
)


def _render_kimi_k3(segments: Sequence[Segment], thinking: bool) -> str:
    """Kimi K3's XTML channels: the think channel the prompt opened (closed even
    when empty), then response channels for text and tools channels for calls."""

    def tag(name: str, **attributes: str) -> str:
        attrs = "".join(f' {k}="{v.replace("&", "&amp;").replace(chr(34), "&quot;")}"' for k, v in attributes.items())
        return f"<|open|>{name}{attrs}<|sep|>"

    def argument(key: str, value: Any) -> str:
        kind = _json_type(value)
        kind = "number" if kind == "integer" else kind  # K3 names every number one way
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
    """The JSON Schema type name of a value (K2 Horizon's `arg_type`). Kept apart from
    parsing/coercion.py's reader on purpose: what the model writes is the oracle's
    to say, so a slip in one shows against the other."""
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


@dataclass(frozen=True)
class Layout:
    """A format that writes each call by templates: `call` names `{name}`,
    `{arguments}` (the arguments as JSON), `{object}` (the name and arguments as a
    JSON object, the arguments under `key`) and `{index}` (the call's number in the
    conversation); `argument`, written once per argument before `end`, names
    `{key}`, `{value}` (as `value` writes it), `{type}` (its JSON Schema type) and
    `{string}` (whether it is a string: DSML's attribute). Any template may name the
    constants `{FB}`, `{SP}`, `{HY}` and `{NS}`. `section` wraps consecutive calls,
    `sep` stands between them."""

    call: str
    argument: str = ""
    end: str = ""
    section: tuple[str, str] = ("", "")
    sep: str = ""
    value: Callable[[Any], str] = _plain
    key: str = "arguments"

    def render(self, calls: Sequence[Call], counter: int = 0) -> str:
        def fill(template: str, **fields: object) -> str:
            return template.format(FB=FB, SP=SP, HY=HY, NS=MINIMAX_NS, **fields)

        body = self.sep.join(
            fill(
                self.call,
                name=c.name,
                index=counter + n,
                arguments=json.dumps(c.arguments, ensure_ascii=False),
                object=json.dumps({"name": c.name, self.key: c.arguments}, ensure_ascii=False),
            )
            + "".join(
                fill(
                    self.argument,
                    key=k,
                    value=self.value(v),
                    type=_json_type(v),
                    string="true" if isinstance(v, str) else "false",
                )
                for k, v in c.arguments.items()
            )
            + fill(self.end)
            for n, c in enumerate(calls)
        )
        return fill(self.section[0]) + body + fill(self.section[1])


def _dsml(tag: str, block: str) -> Layout:
    """DeepSeek's DSML invoke elements (GigaChat 3.5's GCML is the same with its tag)."""
    return Layout(
        f'<{tag}invoke name="{{name}}">\n',
        f'<{tag}parameter name="{{key}}" string="{{string}}">{{value}}</{tag}parameter>\n',
        f"</{tag}invoke>\n",
        (f"<{tag}{block}>\n", f"</{tag}{block}>"),
    )


_QWEN3_CODER = Layout(
    "<tool_call>\n<function={name}>\n", "<parameter={key}>\n{value}\n</parameter>\n", "</function>\n</tool_call>\n"
)
# Laguna's template (poolside_v1) writes glm47's calls too.
_GLM47 = Layout("<tool_call>{name}", "<arg_key>{key}</arg_key><arg_value>{value}</arg_value>", "</tool_call>")
_INVOKE = '<invoke name="{name}">\n', '<parameter name="{key}">{value}</parameter>\n', "</invoke>\n"


def _json_list(before: str, after: str) -> Layout:
    return Layout("{object}", section=(before + "[", "]" + after), sep=", ")


_HERMES = Layout("<tool_call>\n{object}\n</tool_call>\n")
_DEEPSEEK_CALLS = ("<{FB}tool{SP}calls{SP}begin{FB}>", "<{FB}tool{SP}calls{SP}end{FB}>")

LAYOUTS: dict[str, Layout] = {
    "hermes": _HERMES,
    "qwen25": _HERMES,
    "ernie45": _HERMES,
    "longcat": Layout("<longcat_tool_call>\n{object}\n</longcat_tool_call>"),
    "internlm": Layout("<|action_start|><|plugin|>\n{object}<|action_end|>", key="parameters"),
    # The `function call` role after the assistant's message; one call per role message.
    "gigachat3": Layout("<|message_sep|>\n\nfunction call<|role_sep|>\n{object}"),
    "granite_20b_fc": Layout("<function_call> {object}"),
    # One call object per line, as the model's function-call guide writes them.
    "minimax_m1": Layout("{object}\n", section=("<tool_calls>\n", "</tool_calls>")),
    "llama3_json": Layout("{object}", section=("<|python_tag|>", ""), sep="; ", key="parameters"),
    # A JSON list of the calls after a marker.
    "xlam": _json_list("", ""),
    "granite": _json_list("<|tool_call|>", ""),
    "phi4": _json_list(" functools", ""),
    "firefunction_v2": _json_list(" functools", ""),
    "hunyuan_a13b": _json_list("<tool_calls>", "</tool_calls>"),
    "jamba": _json_list("<tool_calls>", "</tool_calls>"),
    "apriel": _json_list("<tool_calls>", "</tool_calls>"),
    "nemotron_deci": _json_list("<TOOLCALL>", "</TOOLCALL>"),
    "generic_json": _json_list("<TOOLCALL>", "</TOOLCALL>"),
    "deepseek_v3": Layout(
        "<{FB}tool{SP}call{SP}begin{FB}>function<{FB}tool{SP}sep{FB}>{name}\n```json\n{arguments}\n```<{FB}tool{SP}call{SP}end{FB}>",
        section=_DEEPSEEK_CALLS,
    ),
    "deepseek_v3_1": Layout(
        "<{FB}tool{SP}call{SP}begin{FB}>{name}<{FB}tool{SP}sep{FB}>{arguments}<{FB}tool{SP}call{SP}end{FB}>",
        section=_DEEPSEEK_CALLS,
    ),
    "kimi_k2": Layout(
        "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>",
        section=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
    ),
    "solar_open": Layout(
        "<|tool_call:begin|>{index:010d}<|tool_call:name|>{name}<|tool_call:args|>{arguments}<|tool_call:end|>",
        section=("<|begin|>assistant<|tool_calls|>", "<|calls|>"),
    ),
    "plamo3": Layout(
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{name}<|plamo:end_tool_name:plamo|>"
        "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{arguments}"
        "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>",
        section=("<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"),
    ),
    "functionary_v3_1": Layout("<function={name}>{arguments}</function>"),
    "functionary_v3_2": Layout(">>>{name}\n{arguments}"),
    "mistral": Layout("[TOOL_CALLS]{name}[ARGS]{arguments}"),
    # Its template writes the name unescaped.
    "granite4": Layout('<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'),
    "qwen3_coder": _QWEN3_CODER,
    "nemotron_nano": _QWEN3_CODER,
    "step3p5": _QWEN3_CODER,
    # Its template wraps each call in its own section, values without newlines.
    "seed_oss": Layout(
        "\n<seed:tool_call>\n<function={name}>\n",
        "<parameter={key}>{value}</parameter>\n",
        "</function>\n</seed:tool_call>",
    ),
    "mimo": Layout(
        "<tool_call>\n<function={name}>\n", "<parameter={key}>{value}</parameter>\n", "</function>\n</tool_call>\n"
    ),
    "glm45": Layout(
        "<tool_call>{name}\n", "<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n", "</tool_call>"
    ),
    "glm47": _GLM47,
    "poolside_v1": _GLM47,
    "spark25": _GLM47,
    # Its template: a newline after the name and before each value and the close.
    "ling3": Layout(
        "<tool_call>{name}\n", "<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>", "\n</tool_call>", sep="\n"
    ),
    # HY3's template: a newline after every tag pair and `<tool_sep>` after the name;
    # HY4 writes the calls back to back.
    "hy_v3": Layout(
        "<tool_call{HY}>{name}<tool_sep{HY}>\n",
        "<arg_key{HY}>{key}</arg_key{HY}>\n<arg_value{HY}>{value}</arg_value{HY}>\n",
        "</tool_call{HY}>\n",
        ("<tool_calls{HY}>\n", "</tool_calls{HY}>"),
    ),
    "hy_v4": Layout(
        "<tool_call{HY}>{name}",
        "<arg_key{HY}>{key}</arg_key{HY}><arg_value{HY}>{value}</arg_value{HY}>",
        "</tool_call{HY}>",
        ("<tool_calls{HY}>", "</tool_calls{HY}>"),
    ),
    "k2_horizon": Layout(
        "<ifm|tool_call>{name}",
        "<ifm|arg_key>{key}</ifm|arg_key><ifm|arg_type>{type}</ifm|arg_type><ifm|arg_value>{value}</ifm|arg_value>",
        "</ifm|tool_call>",
        ("<ifm|tool_calls>", "</ifm|tool_calls>"),
    ),
    "solar_open2": Layout(
        "<|tool_call:start|>{name}\n",
        "<|tool_arg:start|>{key}<|tool_arg:value|>{value}<|tool_arg:end|>\n",
        "<|tool_call:end|>",
    ),
    "minimax_m2": Layout(*_INVOKE, ("<minimax:tool_call>\n", "</minimax:tool_call>")),
    # dots: MiniMax-M2's untyped invoke elements; GigaChat 3.5: DSML-style GCML.
    "dots": Layout(*_INVOKE, ("<dots_function_call>\n", "</dots_function_call>")),
    "gigachat35": _dsml("{FB}GCML{FB}", "tool_calls"),
    "deepseek_v3_2": _dsml("{FB}DSML{FB}", "function_calls"),
    "deepseek_v4": _dsml("{FB}DSML{FB}", "tool_calls"),
    "deepseek_v41": _dsml("{FB}DSML{FB} ", "calls"),
    "minimax_m3": Layout(
        '{NS}<invoke name="{name}">',
        "{NS}<{key}>{value}{NS}</{key}>",
        "{NS}</invoke>\n",
        ("{NS}<tool_call>\n", "{NS}</tool_call>"),
        value=_minimax_xml,
    ),
    "minicpm5": Layout(
        '<function name="{name}">',
        '<param name="{key}">{value}</param>',
        "</function>",
        sep="\n",
        value=_minicpm5_value,
    ),
    "step3": Layout(
        '<{FB}tool_call_begin{FB}>function<{FB}tool_sep{FB}><steptml:invoke name="{name}">',
        '<steptml:parameter name="{key}">{value}</steptml:parameter>',
        "</steptml:invoke><{FB}tool_call_end{FB}>",
        ("<{FB}tool_calls_begin{FB}>", "<{FB}tool_calls_end{FB}>"),
    ),
}


_ATEM: Layout = Layout(
    '<atem:function_calls>\n<atem:invoke name="{name}">\n',
    '<atem:parameter name="{key}">{value}</atem:parameter>\n',
    "</atem:invoke>\n</atem:function_calls>",
)
