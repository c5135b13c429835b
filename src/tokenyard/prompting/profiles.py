"""Model profiles: what tokenyard must know about each family.

A `ModelProfile` names the family's parsers, the markers it thinks in, the stop
tokens, and how its chat template wants reasoning and thinking controls passed. A
model directory is matched to a profile by what is in it (config.json's
model_type, the chat template's own markers, the folder name), and every field can
be overridden from the command line (`--reasoning-parser`, `--tool-call-parser`,
`--chat-template`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class ModelProfile:
    family: str
    reasoning_parser: str | None
    tool_parser: str | None
    # How reasoning is written into content for templates that do not read a
    # reasoning field themselves: (start, end) markers.
    reasoning_markers: tuple[str, str] | None = ("<think>", "</think>")
    # The message field the template reads reasoning from, when it does.
    reasoning_field: str = "reasoning_content"
    # Template variable that switches thinking on/off, and extra variables that
    # keep earlier turns' reasoning in the prompt (prefix stability).
    thinking_kwarg: str | None = None
    # The values the thinking variable takes (off, on), where it is not a boolean
    # (HY3's `reasoning_effort`: "no_think" / "high").
    thinking_values: tuple[object, object] = (False, True)
    keep_history_kwargs: tuple[tuple[str, object], ...] = ()
    # Text (special tokens) that ends generation for this family.
    stop: tuple[str, ...] = ()
    # A ```json fenced call to a declared tool at the very end of a turn becomes a
    # call (parsing/fenced_calls.py): a small-model failure shape, recovered only
    # for models known to write it (the built-in Qwen2.5-Coder), or on request.
    recover_fenced_calls: bool = False

    def with_overrides(
        self,
        reasoning_parser: str | None = None,
        tool_parser: str | None = None,
        reasoning_markers: tuple[str, str] | None = None,
        recover_fenced_calls: bool | None = None,
    ) -> ModelProfile:
        """This profile with command-line overrides. A reasoning parser given for a
        family that has none brings its markers (for replay into content)."""
        return replace(
            self,
            reasoning_parser=reasoning_parser or self.reasoning_parser,
            tool_parser=tool_parser or self.tool_parser,
            reasoning_markers=self.reasoning_markers or reasoning_markers,
            recover_fenced_calls=self.recover_fenced_calls if recover_fenced_calls is None else recover_fenced_calls,
        )


_QWEN_STOP = ("<|im_end|>", "<|endoftext|>")
_DEEPSEEK_STOP = ("<｜end▁of▁sentence｜>",)

PROFILES: dict[str, ModelProfile] = {
    p.family: p
    for p in (
        ModelProfile("qwen3", "qwen3", "hermes", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
        ModelProfile("qwen3-coder", None, "qwen3_coder", reasoning_markers=None, stop=_QWEN_STOP),
        # Qwen3.5/3.6 think like Qwen3 and call tools like Qwen3-Coder.
        ModelProfile("qwen3.5", "qwen3", "qwen3_coder", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
        ModelProfile("deepseek-r1", "deepseek_r1", "deepseek_v3", stop=_DEEPSEEK_STOP),
        ModelProfile("deepseek-v3", None, "deepseek_v3", reasoning_markers=None, stop=_DEEPSEEK_STOP),
        ModelProfile("deepseek-v3.1", "deepseek_v3_1", "deepseek_v3_1", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
        ModelProfile("deepseek-v3.2", "deepseek_v3_2", "deepseek_v3_2", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
        ModelProfile("deepseek-v4", "deepseek_v4", "deepseek_v4", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
        ModelProfile("kimi-k2", None, "kimi_k2", reasoning_markers=None, stop=("<|im_end|>",)),
        ModelProfile("kimi-k2.5", "kimi_k25", "kimi_k2", stop=("<|im_end|>",)),
        ModelProfile(
            "kimi-k3",
            "kimi_k3",
            "kimi_k3",
            reasoning_markers=None,
            thinking_kwarg="thinking",
            stop=("<|end_of_msg|>",),
        ),
        ModelProfile(
            "glm-4.5",
            "glm45",
            "glm45",
            thinking_kwarg="enable_thinking",
            stop=("<|user|>", "<|observation|>", "<|endoftext|>"),
        ),
        ModelProfile(
            "glm-4.7",
            "glm45",
            "glm47",
            thinking_kwarg="enable_thinking",
            # GLM-4.7 drops earlier turns' reasoning unless told not to.
            keep_history_kwargs=(("clear_thinking", False),),
            stop=("<|user|>", "<|observation|>", "<|endoftext|>"),
        ),
        ModelProfile("minimax-m2", "minimax_m2", "minimax_m2", stop=("[e~[",)),
        # MiniMax-M1: `<beginning_of_sentence>role` turns, `<think>` the model opens
        # itself, one JSON call per line in `<tool_calls>` (vLLM's example template).
        ModelProfile("minimax-m1", "qwen3", "minimax_m1", stop=("<end_of_sentence>",)),
        ModelProfile(
            "gpt-oss",
            "gpt_oss",
            "harmony",
            reasoning_markers=None,
            reasoning_field="thinking",
            thinking_kwarg=None,
            stop=("<|return|>", "<|call|>"),
        ),
        ModelProfile("nemotron", "nemotron_deci", "nemotron_deci", stop=("<|eot_id|>",)),
        ModelProfile("nemotron-nano", "nemotron_nano", "qwen3_coder", stop=("<|im_end|>",)),
        ModelProfile("llama-3", None, "llama3_json", reasoning_markers=None, stop=("<|eot_id|>", "<|eom_id|>")),
        ModelProfile("llama-4", None, "pythonic", reasoning_markers=None, stop=("<|eot|>", "<|eom|>")),
        # Mistral-Nemo, Mistral-Small, Devstral, Ministral answer directly; Magistral
        # (and the reasoning Ministral) think in [THINK] blocks.
        ModelProfile("mistral", None, "mistral", reasoning_markers=None, stop=("</s>",)),
        ModelProfile("magistral", "mistral", "mistral", reasoning_markers=("[THINK]", "[/THINK]"), stop=("</s>",)),
        ModelProfile("ministral-3", "ministral3", "mistral", reasoning_markers=("[THINK]", "[/THINK]"), stop=("</s>",)),
        ModelProfile(
            "gemma",
            "gemma4",
            "gemma4",
            reasoning_markers=("<|channel>thought\n", "<channel|>"),
            # Gemma 4 ends a turn of calls at `<|tool_response>` (the results come next).
            stop=("<end_of_turn>", "<turn|>", "<|tool_response>"),
        ),
        ModelProfile("smollm2", None, "hermes", reasoning_markers=None, stop=("<|im_end|>",)),
        # SmolLM3: ChatML, `<think>` when reasoning (its `/think` flag), hermes calls.
        ModelProfile("smollm3", "qwen3", "hermes", stop=("<|im_end|>",)),
        # Hermes 2 Pro / Hermes 3: Llama 3 weights, ChatML turns, hermes calls.
        ModelProfile("hermes", None, "hermes", reasoning_markers=None, stop=("<|im_end|>",)),
        # Reka Edge: `<sep>`-separated `human:` / `assistant:` turns, Qwen3-style thinking and calls.
        ModelProfile("reka", "qwen3", "hermes", stop=("<sep>",)),
        # Phi-3.5 / Phi-4-mini: `<|assistant|>` turns ending in `<|end|>`; Phi-4-mini calls in `functools[...]`.
        ModelProfile("phi", None, "phi4", reasoning_markers=None, stop=("<|end|>",)),
        # Apriel 1.5: `<|assistant|>` turns, calls as a JSON list in `<tool_calls>` (jamba's syntax).
        ModelProfile("apriel", None, "jamba", reasoning_markers=None, stop=("<|end|>",)),
        # FireFunction v2: Llama 3 turns, calls as `functools[{...}]` (phi4's syntax).
        ModelProfile("firefunction-v2", None, "phi4", reasoning_markers=None, stop=("<|eot_id|>",)),
        # MiniMax M3's template opens `<mm:think>` itself for thinking_mode="enabled"
        # (the prompt then ends inside reasoning); its default is "adaptive".
        ModelProfile(
            "minimax-m3", "minimax_m3", "minimax_m3", reasoning_markers=("<mm:think>", "</mm:think>"), stop=("[e~[",)
        ),
        # Seed-OSS switches thinking with an integer `thinking_budget`, not a boolean.
        ModelProfile(
            "seed-oss",
            "seed_oss",
            "seed_oss",
            reasoning_markers=("<seed:think>", "</seed:think>"),
            stop=("<seed:eos>",),
        ),
        # Step-3.5's template always opens `<think>`; it has no switch.
        ModelProfile("step3.5", "step3p5", "step3p5", stop=("<|im_end|>",)),
        ModelProfile("granite-4", None, "granite4", reasoning_markers=None, stop=("<|end_of_text|>",)),
        # No public template: the prompt ends with `<|message_model|>`; every block
        # kind, thinking included, is a special token the model writes. Generation
        # ends at the tokenizer's EOS.
        ModelProfile("inkling", "inkling", "inkling", reasoning_markers=("<|content_thinking|>", "<|end_message|>")),
        # Apertus thinks in its `inner` block when `enable_thinking` is on.
        ModelProfile(
            "apertus",
            "apertus",
            "apertus",
            reasoning_markers=("<|inner_prefix|>", "<|inner_suffix|>"),
            thinking_kwarg="enable_thinking",
            stop=("<|assistant_end|>",),
        ),
        # Command R7B writes `<|START_THINKING|>` itself; Command A / 4 templates open
        # it (switch `reasoning`) and read `reasoning_content`.
        ModelProfile(
            "cohere-command3",
            "cohere_command",
            "cohere_command3",
            reasoning_markers=("<|START_THINKING|>", "<|END_THINKING|>"),
            thinking_kwarg="enable_thinking",
            stop=("<|END_OF_TURN_TOKEN|>",),
        ),
        ModelProfile(
            "cohere-command4",
            "cohere_command",
            "cohere_command4",
            reasoning_markers=("<|START_THINKING|>", "<|END_THINKING|>"),
            thinking_kwarg="reasoning",
            stop=("<|END_OF_TURN_TOKEN|>",),
        ),
        ModelProfile("deepseek-v4.1", "deepseek_v41", "deepseek_v41", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
        ModelProfile("dots", None, "dots", reasoning_markers=None),
        ModelProfile("ernie-4.5", "ernie45", "ernie45", stop=("</s>",)),
        ModelProfile("functiongemma", None, "functiongemma", reasoning_markers=None, stop=("<end_of_turn>",)),
        # GigaChat 3 / 3.1: the `function call` role, one JSON call; 3.5 writes GCML blocks.
        ModelProfile("gigachat3", None, "gigachat3", reasoning_markers=None, stop=("</s>",)),
        ModelProfile("gigachat3.5", "deepseek_r1", "gigachat35", thinking_kwarg="reasoning", stop=("</s>",)),
        ModelProfile("granite-3", None, "granite", reasoning_markers=None, stop=("<|end_of_text|>",)),
        ModelProfile("hunyuan-a13b", "hunyuan_a13b", "hunyuan_a13b"),
        # HY3's template opens `<think:opensource>` for reasoning_effort low/high (its
        # default is no_think); its special tokens carry the `:opensource` suffix.
        ModelProfile(
            "hy3",
            "hy_v3",
            "hy_v3",
            reasoning_markers=("<think:opensource>", "</think:opensource>"),
            thinking_kwarg="reasoning_effort",
            thinking_values=("no_think", "high"),
            stop=("<｜hy_eos:opensource｜>",),
        ),
        ModelProfile(
            "hy4",
            "hy_v3",
            "hy_v4",
            reasoning_markers=("<think:opensource>", "</think:opensource>"),
            thinking_kwarg="reasoning_effort",
            thinking_values=("no_think", "high"),
        ),
        # Intern-S1 thinks like Qwen3; InternLM2 does not think.
        ModelProfile("intern-s1", "qwen3", "internlm", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
        ModelProfile("internlm2", None, "internlm", reasoning_markers=None, stop=("<|im_end|>",)),
        ModelProfile("k2-horizon", "k2_horizon", "k2_horizon", reasoning_markers=("<ifm|think>", "</ifm|think>")),
        # LFM2 / LFM2.5: ChatML with pythonic calls between special tokens; the
        # template reads `thinking` and drops earlier turns' unless told to keep them.
        ModelProfile(
            "lfm2",
            "qwen3",
            "lfm2",
            reasoning_field="thinking",
            keep_history_kwargs=(("preserve_thinking", True), ("keep_past_thinking", True)),
            stop=("<|im_end|>",),
        ),
        # Ling 3 / Ring 3 (Bailing V3): `<role>…</role>` turns; the prompt opens `<think>`
        # unless thinking is off.
        ModelProfile("ling-3", "ling3", "ling3", thinking_kwarg="enable_thinking", stop=("<|role_end|>",)),
        # PLaMo 3: special-token framing; generation ends at `<|plamo:tag|>`.
        ModelProfile(
            "plamo3",
            "plamo3",
            "plamo3",
            reasoning_markers=("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>"),
            thinking_kwarg="enable_thinking",
            stop=("<|plamo:tag|>",),
        ),
        # Poolside Laguna: `<assistant>` turns, GLM-style calls; the prompt ends with
        # `<think>` (thinking on) or `</think>` (off).
        ModelProfile("laguna", "qwen3", "poolside_v1", thinking_kwarg="enable_thinking", stop=("</assistant>",)),
        ModelProfile("longcat", None, "longcat", reasoning_markers=None),
        # MiMo V2 (MiMo-VL writes hermes calls: its template says so).
        ModelProfile("mimo", "mimo", "mimo", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
        ModelProfile("mimo-vl", "qwen3", "hermes", stop=_QWEN_STOP),
        # MiniCPM 5: ChatML, `<function name=..><param name=..>` calls; the prompt opens
        # `<think>` when enable_thinking is true, else the model may write it.
        ModelProfile("minicpm5", "qwen3", "minicpm5", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
        # Muse Glimmer: channel-scoped messages (`to=self` reasoning, `to=user` answer,
        # a tool channel per call); the template reads `reasoning_content`.
        ModelProfile("muse-glimmer", "muse_glimmer", "muse_glimmer", reasoning_markers=None, stop=("<|eot|>",)),
        # OLMo 3: ChatML, calls in `<function_calls>`, tool results in an `environment`
        # turn; the Think models' prompt opens `<think>`.
        ModelProfile("olmo3", "olmo3", "olmo3", stop=("<|im_end|>", "<|endoftext|>")),
        ModelProfile("spark-2.5", "spark25", "spark25", thinking_kwarg="enable_thinking", stop=_DEEPSEEK_STOP),
        # Step 3: StepTML invokes in special-token sections; reasoning from the first token.
        ModelProfile("step3", "step3", "step3"),
        # xLAM: a JSON list of calls as the answer.
        ModelProfile("xlam", None, "xlam", reasoning_markers=None),
        # Qwen2/2.5 (Coder too): ChatML, hermes `<tool_call>{json}</tool_call>`, no reasoning.
        ModelProfile("qwen2.5", None, "hermes", reasoning_markers=None, stop=_QWEN_STOP),
    )
}

# Chat-template fingerprints, most specific first.
_TEMPLATE_SIGNS: tuple[tuple[str, str], ...] = (
    ("<|channel|>", "gpt-oss"),
    ("｜DSML｜", "deepseek-dsml"),
    ("<|content_invoke_tool_json|>", "inkling"),
    ("<|tools_prefix|>", "apertus"),
    ("<|START_ACTION|>", "cohere-command3"),
    ("<|role_sep|>", "gigachat3"),
    # MiniCPM 5's template also splits content on a `<tool_sep>` of its own.
    ('<param name="', "minicpm5"),
    ("<tool_sep", "hy3"),
    ("]<]minimax[>[", "minimax-m3"),
    ("<minimax:tool_call>", "minimax-m2"),
    ("<beginning_of_sentence>ai name=", "minimax-m1"),
    ("<seed:tool_call>", "seed-oss"),
    ("<|im_start|>tool_response", "step3.5"),
    ("<|start_of_role|>", "granite-4"),
    ("<|tool_calls_section_begin|>", "kimi-k2"),
    ("<|open|>", "kimi-k3"),
    ("<|tool_call_start|>", "lfm2"),
    ("<|tool_list_start|>", "lfm2"),
    ("List of tools: [", "lfm2"),
    ("<|plamo:", "plamo3"),
    ("<assistant>", "laguna"),
    ("<role>HUMAN</role>", "ling-3"),
    ("<longcat_tool_call>", "longcat"),
    ("<atem:function_calls>", "muse-glimmer"),
    ("<|im_start|>environment", "olmo3"),
    ("<|Bot|>", "spark-2.5"),
    ("<arg_key>", "glm-4.7"),
    ("<function=", "qwen3-coder"),
    ("You are a function calling AI model", "hermes"),
    ("Reasoning Mode", "smollm3"),
    ("You are MiMo", "mimo-vl"),
    ("<sep>", "reka"),
    ("<tool_calls>[", "apriel"),
    ("functools[", "firefunction-v2"),
    ("<TOOLCALL>", "nemotron"),
)

# Syntax several families share: a model's name says which of them it is (a
# DeepSeek-R1 distill is not DeepSeek V3.1), so these are read after the names.
_GENERIC_TEMPLATE_SIGNS: tuple[tuple[str, str], ...] = (
    ("<｜tool▁sep｜>", "deepseek-v3.1"),
    ("<|python_tag|>", "llama-3"),
    ("<|start_header_id|>", "llama-3"),
    ("[TOOL_CALLS]", "mistral"),
    ("<start_of_turn>", "gemma"),
    ("<|turn>", "gemma"),
    ("<|assistant|>", "phi"),
)

_NAME_SIGNS: tuple[tuple[str, str], ...] = (
    (r"gpt-?oss", "gpt-oss"),
    (r"deepseek-?v4\.?1", "deepseek-v4.1"),
    (r"deepseek-?v4", "deepseek-v4"),
    (r"deepseek-?v3\.?2", "deepseek-v3.2"),
    (r"deepseek-?v3\.?1", "deepseek-v3.1"),
    (r"deepseek-?r1", "deepseek-r1"),
    (r"deepseek-?v3", "deepseek-v3"),
    (r"kimi-?k3", "kimi-k3"),
    (r"kimi-?k2\.?5", "kimi-k2.5"),
    (r"kimi-?k2", "kimi-k2"),
    (r"glm-?4\.?[67]", "glm-4.7"),
    (r"glm-?4\.?5", "glm-4.5"),
    (r"minimax-?m3", "minimax-m3"),
    (r"minimax-?m1", "minimax-m1"),
    (r"minimax", "minimax-m2"),
    (r"seed-?oss", "seed-oss"),
    (r"step-?3\.?[57]", "step3.5"),
    (r"granite-?4", "granite-4"),
    (r"inkling", "inkling"),
    (r"apertus", "apertus"),
    (r"command-?r7b", "cohere-command3"),
    (r"command-?a|cohere2", "cohere-command4"),
    (r"dots\.?llm", "dots"),
    (r"ernie-?4\.?5", "ernie-4.5"),
    (r"functiongemma", "functiongemma"),
    (r"gigachat-?3\.?5", "gigachat3.5"),
    (r"gigachat", "gigachat3"),
    (r"granite-?3", "granite-3"),
    (r"hunyuan-?a13b", "hunyuan-a13b"),
    (r"hy-?4|hunyuan-?v4", "hy4"),
    (r"hy-?3|hunyuan", "hy3"),
    (r"intern-?s1", "intern-s1"),
    (r"internlm", "internlm2"),
    (r"k2-?horizon", "k2-horizon"),
    (r"lfm-?2", "lfm2"),
    (r"laguna|poolside", "laguna"),
    (r"plamo-?3", "plamo3"),
    (r"\b(?:ling|ring)-?3", "ling-3"),
    (r"longcat", "longcat"),
    (r"mimo-?v2", "mimo"),
    (r"minicpm-?5", "minicpm5"),
    (r"muse-?glimmer", "muse-glimmer"),
    (r"olmo-?3", "olmo3"),
    (r"spark-?2\.?5", "spark-2.5"),
    (r"step-?3\b", "step3"),
    (r"xlam", "xlam"),
    (r"qwen3\.[56]", "qwen3.5"),
    (r"qwen3-?coder", "qwen3-coder"),
    (r"qwen3", "qwen3"),
    (r"qwen2", "qwen2.5"),
    (r"nemotron.*nano", "nemotron-nano"),
    (r"nemotron", "nemotron"),
    (r"hermes-?[23]", "hermes"),
    (r"firefunction", "firefunction-v2"),
    (r"smollm-?3", "smollm3"),
    (r"mimo-?vl", "mimo-vl"),
    (r"reka", "reka"),
    (r"apriel", "apriel"),
    (r"phi-?[34]", "phi"),
    (r"llama-?4", "llama-4"),
    (r"llama-?3", "llama-3"),
    (r"magistral", "magistral"),
    (r"ministral.*reasoning", "ministral-3"),
    (r"mistral|ministral|devstral", "mistral"),
    (r"gemma", "gemma"),
    (r"smollm", "smollm2"),
)


def profile_by_name(family: str) -> ModelProfile:
    key = family.strip().lower()
    if key not in PROFILES:
        raise ValueError(f"unknown model family {family!r}; known: {', '.join(sorted(PROFILES))}")
    return PROFILES[key]


def detect_profile(
    model_dir: str | Path | None = None, chat_template: str | None = None, name: str | None = None
) -> ModelProfile:
    """The profile of a model, from its chat template's markers, then its names
    (folder, config.json). Falls back to `smollm2`-like ChatML with no parsers."""
    names = [name or ""]
    if model_dir is not None:
        folder = Path(model_dir)
        names.append(folder.name)
        config = folder / "config.json"
        if config.exists():
            try:
                data = json.loads(config.read_text(encoding="utf-8"))
            except ValueError:
                data = {}
            names += [
                str(data.get("model_type", "")),
                str(data.get("_name_or_path", "")),
                *map(str, data.get("architectures", [])),
            ]
    joined = " ".join(names).lower()
    if chat_template:
        template = chat_template
        for sign, family in _TEMPLATE_SIGNS:
            if sign in template:
                if family == "deepseek-dsml":
                    # V3.2 wraps calls in `function_calls`; V4 in `tool_calls` (its
                    # template assembles that marker, so it is not a literal).
                    return PROFILES["deepseek-v3.2" if "function_calls" in template else "deepseek-v4"]
                if family == "qwen3-coder" and "<think>" in template:
                    return PROFILES["qwen3.5"]
                if family == "kimi-k2" and "<think>" in template:
                    return PROFILES["kimi-k2.5"]
                if family == "granite-4" and "<tool_call>" not in template:
                    return PROFILES["granite-3"]  # `<|tool_call|>[...]`
                if family == "cohere-command3" and "<|START_TEXT|>" in template:
                    return PROFILES["cohere-command4"]
                return PROFILES[family]
    for pattern, family in _NAME_SIGNS:
        if re.search(pattern, joined):
            return PROFILES[family]
    if chat_template:
        template = chat_template
        for sign, family in _GENERIC_TEMPLATE_SIGNS:
            if sign in template:
                if family == "deepseek-v3.1":
                    # V3.1 switches thinking with `thinking`; R1 (and its distills)
                    # always think; V3 never does.
                    if "thinking is defined" in template:
                        return PROFILES["deepseek-v3.1"]
                    return PROFILES["deepseek-r1" if "<think>" in template else "deepseek-v3"]
                if family == "mistral" and "[THINK]" in template:
                    return PROFILES["ministral-3"]
                return PROFILES[family]
        if "<tool_call>" in template and "<think>" in template:
            return PROFILES["qwen3"]
        if "<tool_call>" in template and "You are Qwen" in template:
            return PROFILES["qwen2.5"]
    return ModelProfile("generic", None, None, reasoning_markers=None)
