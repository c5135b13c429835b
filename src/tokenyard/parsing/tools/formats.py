"""The tool-call formats a grammar engine parses with a config alone: one row each,
(name, aliases, engine, config). Adding such a format is one row here (plus its
cases); the registry registers each row under its name and aliases, as it does the
engines' own formats and the variants that bring code of their own.

The table lives here, not in `families/`: a row names its engine class, and
`families/` (the lowest floor) imports nothing of ours. A family record names its
format by the row's name (`Family.tool_format`), which the registry resolves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import get_args, get_type_hints

from .base import FormatConfig, ToolParser
from .gemma4 import Gemma4Config, Gemma4ToolParser
from .glm45 import Glm45ToolParser, KeyValueConfig, KeyValueSyntax, KeyValueToolParser
from .hermes import HermesToolParser
from .invoke_xml import InvokeConfig, InvokeSyntax, InvokeToolParser
from .json_call_list import JsonCallListConfig, JsonCallListParser, OpeningCallListParser
from .pythonic import PythonicConfig, PythonicToolParser
from .qwen3_coder import Qwen3CoderToolParser
from .token_section import TokenSectionConfig, TokenSectionToolParser


@dataclass(frozen=True)
class Format:
    """One tool-call format: its name (`--tool-parser`), other names for it, the
    grammar engine that parses it and the engine's config."""

    name: str
    aliases: tuple[str, ...]
    engine: type[ToolParser]
    config: FormatConfig


# DeepSeek's end-of-sentence token: the engine stops on it, so it reaches the parser
# only when handed a whole output; it is a control token there, never text.
END_OF_SENTENCE = "<｜end▁of▁sentence｜>"

# --- JSON call lists (json_call_list.py) ----------------------------------------------

_GIGACHAT_ROLE = "function call<|role_sep|>\n"
_GIGACHAT_END = "<|message_sep|>"

_JSON_LISTS = (
    # Nemotron (Llama-3.x-Nemotron "deci"):
    #   <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Tokyo"}}, ...]</TOOLCALL>
    # The tags are plain text to the Llama 3 tokenizer, no special tokens.
    Format(
        "nemotron_deci",
        (),
        JsonCallListParser,
        JsonCallListConfig(start_markers=("<TOOLCALL>",), close_tag="</TOOLCALL>", text_start_markers=("<TOOLCALL>",)),
    ),
    # IBM granite-20b-functioncalling: each call its own object after a marker, no
    # closing tag, calls back to back:  <function_call> {"name": ..., "arguments": {...}}
    Format(
        "granite_20b_fc",
        (),
        JsonCallListParser,
        JsonCallListConfig(start_markers=("<function_call>",), bracketed=False),
    ),
    # Tencent Hunyuan-A13B: a list in a `<tool_calls>` section, after its `<answer>`
    # opens (reasoning format `hunyuan_a13b`):  <tool_calls>[{"name": ...}]</tool_calls>
    Format(
        "hunyuan_a13b",
        (),
        JsonCallListParser,
        JsonCallListConfig(start_markers=("<tool_calls>",), close_tag="</tool_calls>"),
    ),
    # IBM Granite 3.x: a list after a marker, no closing tag:  <|tool_call|>[{"name": ...}]
    # `<|tool_call|>` is Granite 3.0's special token; 3.1+ writes the plain-text
    # `<tool_call>`. (Granite 4 writes hermes blocks: granite4.)
    Format("granite", (), JsonCallListParser, JsonCallListConfig(start_markers=("<|tool_call|>", "<tool_call>"))),
    # AI21 Jamba, and ServiceNow Apriel 1.5/1.6 (the same list; Apriel's objects carry
    # an `"id"` after the arguments, read and left out; its reasoning is the `apriel`
    # format):  <tool_calls>[{"name": ..., "arguments": {...}}, ...]</tool_calls>
    Format(
        "jamba",
        ("apriel",),
        JsonCallListParser,
        JsonCallListConfig(start_markers=("<tool_calls>",), close_tag="</tool_calls>"),
    ),
    # Llama 3.x JSON calls, after `<|python_tag|>` or as bare JSON opening the output;
    # several calls are separated by `;` or a newline and run to the end of output:
    #   <|python_tag|>{"name": "get_weather", "parameters": {"city": "Tokyo"}}; {"name": ...}
    #   {"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}
    Format(
        "llama3_json",
        ("llama4_json",),
        OpeningCallListParser,
        JsonCallListConfig(start_markers=("<|python_tag|>",), bracketed=False, separator=";", newline_separates=True),
    ),
    # The common JSON call shapes, for a model whose format is not named: Dynamo's
    # `default` parser (its fallback when no parser is chosen) reads exactly these,
    #   {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    #   [{"name": "get_weather", "parameters": {...}}, {"name": ...}]
    #   Checking. <TOOLCALL>[{"name": "get_weather", "arguments": {...}}]</TOOLCALL>
    #   Checking. <|python_tag|>{"name": "get_weather", "parameters": {...}}
    # A bare object or list is a call only where it opens the output and names a
    # declared tool (a JSON answer stays the answer); after a marker the model said
    # it is calling.
    Format(
        "generic_json",
        (),
        OpeningCallListParser,
        JsonCallListConfig(
            start_markers=("<TOOLCALL>", "<|python_tag|>"),
            close_tags=(("<TOOLCALL>", "</TOOLCALL>"),),
            text_start_markers=("<TOOLCALL>",),
        ),
    ),
    # Salesforce xLAM: a JSON list of calls, as the whole answer or after a marker,
    #   [{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]
    #   Checking.[TOOL_CALLS][{"name": ...}]
    #   <tool_call>[{"name": ...}]</tool_call>
    #   ```json\n[{"name": ...}]\n```
    # A bare `[` starts a call list only where a declared tool's name follows (prose
    # keeps its brackets); the markers' own closing tags are syntax. In reasoning,
    # brackets and code fences are prose. A bare `[` and the fence are text the model
    # wrote, so a list none of whose calls is delivered shows them.
    Format(
        "xlam",
        (),
        JsonCallListParser,
        JsonCallListConfig(
            start_markers=("[", "[TOOL_CALLS]", "<tool_call>", "```json"),
            close_tags=(("<tool_call>", "</tool_call>"), ("```json", "```")),
            reasoning_exit_markers=("[TOOL_CALLS]", "<tool_call>"),
            text_start_markers=("[", "```json"),
        ),
    ),
    # Sber GigaChat 3 / 3.1: one JSON call that runs to the end of the output, in the
    # `function call` role after the assistant's text (GigaChat 3) or after a
    # `<|function_call|>` token (3.1):
    #   <|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": {...}}
    #   <|function_call|>{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    # The `<|message_sep|>` that ends a message (the text's, the call's) is syntax:
    # the call's closing tag, and a marker where no call follows it.
    Format(
        "gigachat3",
        (),
        JsonCallListParser,
        JsonCallListConfig(
            start_markers=(_GIGACHAT_ROLE, _GIGACHAT_END + "\n\n" + _GIGACHAT_ROLE, "<|function_call|>"),
            stray_markers=(_GIGACHAT_END,),
            reasoning_exit_markers=(_GIGACHAT_ROLE, "<|function_call|>"),
            bracketed=False,
            close_tag=_GIGACHAT_END,
        ),
    ),
    # Phi-4-mini and FireFunction v2 (whose template writes ` functools[` after the
    # answer text): a JSON array after the word `functools`, no closing tag,
    #   functools[{"name": "get_weather", "arguments": {"city": "Tokyo"}}, ...]
    # FireFunction's template replays `arguments` through `tojson`, so its history
    # holds them as a JSON string; a string that serializes an object is read as it.
    # Thinking about Python's functools must not end the reasoning. `functools` is a
    # word, no special token: it goes with the first call (shown if none is delivered).
    Format(
        "phi4",
        ("phi4_mini_json", "firefunction_v2"),
        JsonCallListParser,
        JsonCallListConfig(
            start_markers=("functools",), reasoning_exit_markers=("functools[",), text_start_markers=("functools",)
        ),
    ),
)

# --- one JSON call object per block (hermes.py) ---------------------------------------

_HERMES = HermesToolParser.config
_HERMES_BLOCKS = (
    # Baidu ERNIE 4.5: hermes blocks after the reasoning. A name of its own because
    # vLLM gives it one; its reasoning (`ernie45`) ends at `</think>`, and a text
    # answer may come wrapped in `<response>` … `</response>`.
    Format("ernie45", (), HermesToolParser, _HERMES),
    # IBM Granite 4.0 / 4.1: hermes blocks inside Granite's own turn framing
    # (`<|start_of_role|>assistant<|end_of_role|>`). A name of its own: vLLM's.
    Format("granite4", (), HermesToolParser, _HERMES),
    # InternLM2 / Intern-S1 (SGLang's `interns1`): one call per action block, with or
    # without a space between the two opening tokens; the arguments key is
    # `parameters` (`arguments` is read too):
    #   <|action_start|><|plugin|>
    #   {"name": "get_weather", "parameters": {"city": "Tokyo"}}<|action_end|>
    Format(
        "internlm",
        ("interns1",),
        HermesToolParser,
        replace(
            _HERMES,
            start_markers=("<|action_start|><|plugin|>", "<|action_start|> <|plugin|>"),
            close_tag="<|action_end|>",
        ),
    ),
    # Meituan LongCat-Flash: hermes calls under tags of its own, one call per pair:
    #   <longcat_tool_call>\n{"name": ..., "arguments": {...}}\n</longcat_tool_call>
    Format(
        "longcat",
        (),
        HermesToolParser,
        replace(_HERMES, start_markers=("<longcat_tool_call>",), close_tag="</longcat_tool_call>"),
    ),
)

# --- `<call>NAME<key>K</key><value>V</value></call>` (glm45.py) -----------------------

_GLM = Glm45ToolParser.config
# The suffixes of Hunyuan's special tokens the public checkpoints use: the public HY3
# template writes `<tool_calls:opensource>`…, the preview tokenizer no suffix.
_HUNYUAN_SUFFIXES = ("", ":opensource")


def _hunyuan(*, tool_sep: bool) -> KeyValueConfig:
    """Hunyuan's spellings of the shape, in a `<tool_calls>` section; only the
    section's opening ends reasoning the model never closed. A region keeps the
    spelling it began with."""

    def tags(name: str, suffix: str) -> tuple[str, str]:
        return f"<{name}{suffix}>", f"</{name}{suffix}>"

    syntaxes = tuple(
        KeyValueSyntax(
            tags("tool_call", suffix),
            tags("arg_key", suffix),
            tags("arg_value", suffix),
            name_ends=(f"<tool_sep{suffix}>",) if tool_sep else (),
            section=tags("tool_calls", suffix),
        )
        for suffix in _HUNYUAN_SUFFIXES
    )
    return KeyValueConfig(syntaxes=syntaxes, reasoning_exit_markers=tuple(s.section[0] for s in syntaxes))


_SOLAR_CALL = ("<|tool_call:start|>", "<|tool_call:end|>")
_SOLAR_ARG = ("<|tool_arg:start|>", "<|tool_arg:value|>", "<|tool_arg:end|>")

_KEY_VALUES = (
    # GLM-4.7: the glm45 shape without newlines between the tags:
    #   <tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value></tool_call>
    Format("glm47", (), Glm45ToolParser, _GLM),
    # Poolside Laguna: GLM-4's grammar, with or without the newlines, inside
    # `<assistant>` turns; the generation prompt ends with `<think>` or `</think>` as
    # thinking is on or off. A name of its own: vLLM's and SGLang's.
    Format("poolside_v1", (), Glm45ToolParser, _GLM),
    # Spark 2.5: GLM-4.7's grammar inside DeepSeek-style turn framing
    # (`<｜start▁of▁sentence｜><|Bot|>`); reasoning parser `spark25`. SGLang's Spark 2.5
    # tests keep untyped values as text.
    Format("spark25", (), Glm45ToolParser, replace(_GLM, decode_untyped=False)),
    # inclusionAI Ling 3 / Ring 3 (Bailing V3): GLM-4.5's grammar as its template writes
    # it; what differs is the turn framing (`<role>ASSISTANT</role>`) and the reasoning
    # (the generation prompt opens `<think>`: reasoning parser `ling3`).
    Format("ling3", (), Glm45ToolParser, _GLM),
    # Tencent Hunyuan HY3 (SGLang's `hunyuan`): the shape in a `<tool_calls>` section,
    # the name ended by `<tool_sep>`; non-string values JSON, strings bare:
    #   <tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>
    #   <arg_value>Tokyo</arg_value>\n</tool_call>\n</tool_calls>
    Format("hy_v3", ("hunyuan",), KeyValueToolParser, _hunyuan(tool_sep=True)),
    # Tencent Hunyuan HY4: HY3's shape without `<tool_sep>`: the name runs up to the
    # first `<arg_key>`, and calls follow each other with nothing between them.
    Format("hy_v4", (), KeyValueToolParser, _hunyuan(tool_sep=False)),
    # K2 Horizon's IFM calls (its `xml` and `xml_typed` formats): `ifm|` tags in a
    # section, an optional declared type between a key and its value,
    #   <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key>
    #   <ifm|arg_type>string</ifm|arg_type><ifm|arg_value>Tokyo</ifm|arg_value>…
    # A declared `string` streams as text; any other declared type is decoded as JSON,
    # else typed by the schema. In its `json` format the body is one JSON call object
    # (`<ifm|tool_call>{"name": ..., "arguments": {...}}</ifm|tool_call>`).
    Format(
        "k2_horizon",
        (),
        KeyValueToolParser,
        KeyValueConfig(
            syntaxes=(
                KeyValueSyntax(
                    ("<ifm|tool_call>", "</ifm|tool_call>"),
                    ("<ifm|arg_key>", "</ifm|arg_key>"),
                    ("<ifm|arg_value>", "</ifm|arg_value>"),
                    name_ends=(),
                    type_tags=("<ifm|arg_type>", "</ifm|arg_type>"),
                    section=("<ifm|tool_calls>", "</ifm|tool_calls>"),
                ),
            ),
            json_bodies=True,
            reasoning_exit_markers=("<ifm|tool_calls>",),
        ),
    ),
    # Upstage Solar Open 2 (vLLM's): the shape spelled in special tokens, the key's
    # closer opening the value; the name is the rest of the start token's line:
    #   <|tool_call:start|>get_weather
    #   <|tool_arg:start|>city<|tool_arg:value|>Tokyo<|tool_arg:end|>
    #   <|tool_call:end|>
    # Values are raw text typed by the schema. A value ends at its own
    # `<|tool_arg:end|>`; a dropped end token is read where the next token shows it
    # (`special_tokens`); a key given twice keeps its first value; the tokens met
    # outside a call are markers.
    Format(
        "solar_open2",
        (),
        KeyValueToolParser,
        KeyValueConfig(
            syntaxes=(KeyValueSyntax(_SOLAR_CALL, _SOLAR_ARG[:2], (None, _SOLAR_ARG[2]), special_tokens=True),),
            stray_markers=(_SOLAR_CALL[1], *_SOLAR_ARG),
            first_value_wins=True,
        ),
    ),
)

# --- `<function=…><parameter=…>` (qwen3_coder.py) -------------------------------------

_QWEN3_CODER = Qwen3CoderToolParser.config
_FUNCTION_TAGS = (
    # StepFun Step-3.5 / 3.7: Qwen3-Coder's grammar; its template always opens
    # `<think>` (reasoning parser `step3p5`), and Step-3.5 misspells tags now and then.
    Format("step3p5", (), Qwen3CoderToolParser, replace(_QWEN3_CODER, lenient_tags=True)),
    # Xiaomi MiMo (V2): the grammar written compactly; a string value is the text
    # between the tags verbatim, no newline dropped (vLLM and SGLang read it so).
    Format("mimo", (), Qwen3CoderToolParser, replace(_QWEN3_CODER, strip_value_newline=False)),
    # ByteDance Seed-OSS: the grammar inside `<seed:tool_call>` … `</seed:tool_call>`.
    # Its template writes values inline (where a model writes the newlines anyway the
    # pair is dropped; a value's own trailing newline is kept, as llama.cpp's tests
    # expect) and non-string values with Python's `str()`, which coercion reads. It
    # writes out the call it means to make while it thinks ("The format is
    # <seed:tool_call>..." in vLLM's tests): inside unclosed thinking the section
    # starts a call only at a line start.
    Format(
        "seed_oss",
        (),
        Qwen3CoderToolParser,
        replace(
            _QWEN3_CODER,
            section_open="<seed:tool_call>",
            section_close="</seed:tool_call>",
            start_markers=("<seed:tool_call>", "<function="),
            reasoning_exit_markers=("<seed:tool_call>",),
            paired_newlines=True,
            reasoning_exit_at_line_start=True,
        ),
    ),
)

# --- `<block><invoke name=…><parameter name=…>` (invoke_xml.py) -----------------------


def _invoke(syntax: InvokeSyntax, stray_markers: tuple[str, ...] = (), quote_aware: bool = False) -> InvokeConfig:
    """A format begun by its syntax's own start markers."""
    return InvokeConfig(
        syntax=syntax, start_markers=syntax.start_markers, stray_markers=stray_markers, quote_aware=quote_aware
    )


def _dsml(block: str, token: str = "｜DSML｜") -> InvokeSyntax:
    """DeepSeek's DSML spelling of the shape, outer block named `block` (GigaChat 3.5
    spells it with its own token); a bare invoke also starts a call where DeepSeek's
    reasoning may end right at it (REFERENCE §1)."""
    return InvokeSyntax(
        f"{token}{block}", f"{token}invoke", f"{token}parameter", strip_newline=False, bare_invoke_starts_call=True
    )


def _plain_xml(block: str, *, strip_newline: bool = False, block_json: bool = False) -> InvokeSyntax:
    """Plain-text `invoke`/`parameter` tags in a `block`; a bare `<invoke name=` is
    too common in prose about XML to start a call."""
    return InvokeSyntax(
        block, "invoke", "parameter", strip_newline=strip_newline, bare_invoke_starts_call=False, block_json=block_json
    )


# Outside a call, a tag that begins with the DSML token but is none of the format's
# (a damaged opener, the other version's block) is a marker, never content.
_DSML_STRAYS = ("<｜DSML｜", "</｜DSML｜", END_OF_SENTENCE)

_INVOKES = (
    # DeepSeek V3.2 DSML (`｜` is the full-width bar U+FF5C):
    #   <｜DSML｜function_calls>
    #   <｜DSML｜invoke name="get_weather">
    #   <｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>
    #   <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    #   </｜DSML｜invoke>
    #   </｜DSML｜function_calls>
    Format(
        "deepseek_v3_2",
        ("deepseek_v32",),
        InvokeToolParser,
        _invoke(_dsml("function_calls"), stray_markers=_DSML_STRAYS, quote_aware=True),
    ),
    # DeepSeek V4: V3.2's shape with the outer block named `tool_calls`.
    Format(
        "deepseek_v4",
        (),
        InvokeToolParser,
        _invoke(_dsml("tool_calls"), stray_markers=_DSML_STRAYS, quote_aware=True),
    ),
    # DeepSeek V4.1: V4's shape spelled with a space after the token and the outer
    # block named `calls`:  <｜DSML｜ calls><｜DSML｜ invoke name="get_weather">…
    Format(
        "deepseek_v41", (), InvokeToolParser, _invoke(_dsml("calls", "｜DSML｜ "), stray_markers=(END_OF_SENTENCE,))
    ),
    # Sber GigaChat 3.5: the DSML shape spelled with a `｜GCML｜` token:
    #   <｜GCML｜tool_calls><｜GCML｜invoke name="get_weather">…</｜GCML｜tool_calls>
    Format(
        "gigachat35",
        (),
        InvokeToolParser,
        _invoke(
            InvokeSyntax(
                "｜GCML｜tool_calls",
                "｜GCML｜invoke",
                "｜GCML｜parameter",
                strip_newline=False,
                bare_invoke_starts_call=False,
            )
        ),
    ),
    # MiniMax M2 / M2.5: one block holds one or more invokes; values are untyped text
    # typed by the schema, one newline right inside the parameter tags dropped (the
    # model writes multi-line values so). Names may be quoted or bare. The tags are
    # plain text, so a value may contain `<invoke name=` (file contents); only a
    # closing tag ends it.
    #   <minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Tokyo</parameter>
    #   </invoke>\n</minimax:tool_call>
    Format("minimax_m2", (), InvokeToolParser, _invoke(_plain_xml("minimax:tool_call", strip_newline=True))),
    # rednote dots (dots.llm): MiniMax-M2's invokes inside `<dots_function_call>`;
    # values untyped, names quoted or bare; a block may instead hold one
    # `{"name": ..., "arguments": {...}}` object. A closing tag with no block open is
    # the format's syntax, never answer text.
    Format(
        "dots",
        (),
        InvokeToolParser,
        _invoke(_plain_xml("dots_function_call", block_json=True), stray_markers=("</dots_function_call>",)),
    ),
    # StepFun Step 3: StepTML invokes inside DeepSeek-style special-token sections,
    #   <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">
    #   <steptml:parameter name="city">Tokyo</steptml:parameter>
    #   </steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>
    # Values are the text between the tags (whitespace is data), typed by the schema.
    # Between the call token and the invoke a model may write
    # `function<｜tool_sep｜>NAME\n` or nothing; between calls, a stray `<｜tool_sep｜>`.
    # Its reasoning (`step3`) starts inside `<think>`.
    Format(
        "step3",
        (),
        InvokeToolParser,
        _invoke(
            InvokeSyntax(
                "step3",  # unused: the block's tags are special tokens
                "steptml:invoke",
                "steptml:parameter",
                strip_newline=False,
                bare_invoke_starts_call=False,
                block_tags=("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"),
                call_wrapper=("<｜tool_call_begin｜>", "<｜tool_call_end｜>"),
                call_separator="<｜tool_sep｜>",
            )
        ),
    ),
)

# --- special-token sections (token_section.py) ----------------------------------------

_DEEPSEEK_SECTION = TokenSectionConfig(
    section_begins=("<｜tool▁calls▁begin｜>",),
    section_ends=("<｜tool▁calls▁end｜>",),
    call_begin="<｜tool▁call▁begin｜>",
    call_end="<｜tool▁call▁end｜>",
    header_end="<｜tool▁sep｜>",
    stray_markers=(END_OF_SENTENCE,),
)

_TOKEN_SECTIONS = (
    # DeepSeek-V3 / R1: a typed header, then the arguments in a JSON fence (the bars
    # are full-width U+FF5C, `▁` is U+2581):
    #   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    #   ```json\n{"city":"Tokyo"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
    # The header ends at the newline before the fence.
    Format(
        "deepseek_v3",
        (),
        TokenSectionToolParser,
        replace(_DEEPSEEK_SECTION, header_end="\n", fenced=True, name_after="<｜tool▁sep｜>"),
    ),
    # DeepSeek-V3.1: the name, then the arguments; calls back to back or separated by
    # whitespace:
    #   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city":"Tokyo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
    Format("deepseek_v3_1", ("deepseek_v31",), TokenSectionToolParser, _DEEPSEEK_SECTION),
    # Upstage Solar Open 100B: each call carries the model's own call id (10 lowercase
    # letters or digits) before the name, kept as the call's id (the template writes
    # it back and pairs tool results by it); reasoning is the `solar_open` format:
    #   <|begin|>assistant<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather
    #   <|tool_call:args|>{"city":"Tokyo"}<|tool_call:end|><|calls|>
    Format(
        "solar_open",
        (),
        TokenSectionToolParser,
        TokenSectionConfig(
            section_begins=("<|begin|>assistant<|tool_calls|>", "<|tool_calls|>"),
            section_ends=("<|calls|>",),
            call_begin="<|tool_call:begin|>",
            call_end="<|tool_call:end|>",
            header_end="<|tool_call:args|>",
            name_after="<|tool_call:name|>",
            id_before_name=True,
        ),
    ),
    # PFN PLaMo 3: JSON calls framed by its special tokens (one line on the wire):
    #   <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>
    #   <|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>
    #   <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Tokyo"}
    #   <|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>
    # The name tokens are the header; the arguments opener with its JSON constraint
    # tokens ends it; the arguments closer with the request closer ends the call.
    Format(
        "plamo3",
        (),
        TokenSectionToolParser,
        TokenSectionConfig(
            section_begins=("<|plamo:begin_tool_requests:plamo|>",),
            section_ends=("<|plamo:end_tool_requests:plamo|>",),
            call_begin="<|plamo:begin_tool_request:plamo|>",
            call_end="<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>",
            header_end="<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",
            name_tags=("<|plamo:begin_tool_name:plamo|>", "<|plamo:end_tool_name:plamo|>"),
        ),
    ),
)

# --- pythonic call lists (pythonic.py) and Gemma's object syntax (gemma4.py) ----------


def _wrapped(opening: str, closing: str, *, json_items: bool = False, bracketed: bool = True) -> PythonicConfig:
    """Pythonic calls only inside a wrapper: its opening alone begins them."""
    return PythonicConfig(
        wrapper_open=opening,
        wrapper_close=closing,
        json_items=json_items,
        bracketed=bracketed,
        start_markers=(opening,),
        reasoning_exit_markers=(opening,),
    )


_OTHERS = (
    # Liquid AI LFM2 / LFM2.5: a pythonic list between special tokens,
    #   <|tool_call_start|>[get_weather(city='Tokyo', days=3)]<|tool_call_end|>
    # Strings single-quoted, mappings as JSON, other values as Python writes them; a
    # list item may also be a JSON call object (LFM2 writes those when asked for
    # JSON), or one such object with no list around it. Only the start token begins a
    # call: a bare `[` is prose.
    Format("lfm2", (), PythonicToolParser, _wrapped("<|tool_call_start|>", "<|tool_call_end|>", json_items=True)),
    # Ai2 OLMo 3: pythonic calls one per line inside `<function_calls>` tags; values
    # are Python literals or JSON's `true`/`false`/`null`. The thinking models'
    # generation prompt opens `<think>` (reasoning parser `olmo3`).
    #   <function_calls>\nget_weather(city="Tokyo", days=3)\nget_time(zone="Asia/Tokyo")\n</function_calls>
    Format("olmo3", (), PythonicToolParser, _wrapped("<function_calls>", "</function_calls>", bracketed=False)),
    # Google FunctionGemma: Gemma 4's syntax under its own tokens, `<escape>`
    # delimiting strings; Gemma 4's tool-response token is not its own, and its calls
    # are read at their token only (the recovery of a call without its token answers
    # Gemma 4 outputs, in vLLM's tests):
    #   <start_function_call>call:get_weather{city:<escape>Tokyo<escape>,days:3}<end_function_call>
    Format(
        "functiongemma",
        (),
        Gemma4ToolParser,
        Gemma4Config(
            call_open="<start_function_call>",
            call_close="<end_function_call>",
            quote="<escape>",
            stray_markers=(),
            bare_call_at_opening=False,
        ),
    ),
)

FORMATS: tuple[Format, ...] = (
    *_JSON_LISTS,
    *_HERMES_BLOCKS,
    *_KEY_VALUES,
    *_FUNCTION_TAGS,
    *_INVOKES,
    *_TOKEN_SECTIONS,
    *_OTHERS,
)


def parser_class(row: Format) -> type[ToolParser]:
    """The row's parser: its engine under the row's name, with the row's config."""
    # The engine's declared `config: ClassVar[XConfig]`.
    (config_type,) = get_args(get_type_hints(row.engine)["config"])
    if not isinstance(row.config, config_type):
        raise TypeError(f"{row.name}: {type(row.config).__name__} does not configure {row.engine.__name__}")
    title = "".join(part.capitalize() for part in row.name.split("_"))
    namespace = {"name": row.name, "aliases": row.aliases, "config": row.config, "__module__": __name__}
    return type(f"{title}ToolParser", (row.engine,), namespace)


PARSERS: tuple[type[ToolParser], ...] = tuple(parser_class(row) for row in FORMATS)
