"""The family catalog: one record per model family, pure data.

A record says which parsers read the family's output (its reasoning syntax in
families/reasoning.py, its tool format: a parser in parsing/tools/), how its
template wants reasoning and thinking controls passed, and the text that ends
its generation. How a family is recognised is in families/detection.py, how a
forced tool choice is written in families/call_syntax.py, the peers' names for
its parsers in families/peer_names.py; tests/families/ checks that every record
has every fact it needs.

Replay markers (how earlier turns' reasoning is written into content for
templates that do not read a reasoning field) derive from the reasoning syntax;
a record states them only where they differ (`replay_markers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .reasoning import REASONING_BY_NAME

# `replay_markers` left to derive from the reasoning syntax.
DERIVED = ("", "")


@dataclass(frozen=True, kw_only=True)
class TemplateControls:
    """How a family's template wants reasoning and thinking passed, and what ends its
    generation: facts of the record that a served model's profile keeps as they are."""

    # The message field the template reads reasoning from, when it does.
    reasoning_field: str = "reasoning_content"
    # Template variable that switches thinking on/off, and extra variables that
    # keep earlier turns' reasoning in the prompt (prefix stability).
    thinking_kwarg: str | None = None
    # The values the thinking variable takes (off, on), where it is not a boolean
    # (HY3's `reasoning_effort`: "no_think" / "high").
    thinking_values: tuple[object, object] = (False, True)
    keep_history_kwargs: tuple[tuple[str, object], ...] = ()
    # Text (special tokens) that ends generation; empty: the tokenizer's EOS only.
    stop: tuple[str, ...] = ()
    # A ```json fenced call to a declared tool at the very end of a turn becomes a
    # call (parsing/fenced_calls.py): a small-model failure shape, recovered only
    # for models known to write it (the built-in Qwen2.5-Coder), or on request.
    recover_fenced_calls: bool = False


@dataclass(frozen=True)
class Family(TemplateControls):
    name: str
    # The reasoning syntax (a name in families/reasoning.py, or gpt-oss's harmony)
    # and the tool format (a parser in parsing/tools/); None where there is none.
    reasoning: str | None
    tool_format: str | None
    # (start, end) written around earlier turns' reasoning; None where the template
    # reads it from `reasoning_field` itself.
    replay_markers: tuple[str, str] | None = DERIVED

    @property
    def reasoning_markers(self) -> tuple[str, str] | None:
        if self.replay_markers != DERIVED:
            return self.replay_markers
        syntax = REASONING_BY_NAME.get(self.reasoning or "")
        return (syntax.start[0], syntax.end[0]) if syntax else None


_QWEN_STOP = ("<|im_end|>", "<|endoftext|>")
_DEEPSEEK_STOP = ("<｜end▁of▁sentence｜>",)

FAMILIES: tuple[Family, ...] = (
    Family("qwen3", "qwen3", "hermes", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
    Family("qwen3-coder", None, "qwen3_coder", stop=_QWEN_STOP),
    # Qwen3.5/3.6 think like Qwen3 and call tools like Qwen3-Coder.
    Family("qwen3.5", "qwen3", "qwen3_coder", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
    Family("deepseek-r1", "deepseek_r1", "deepseek_v3", stop=_DEEPSEEK_STOP),
    Family("deepseek-v3", None, "deepseek_v3", stop=_DEEPSEEK_STOP),
    Family("deepseek-v3.1", "deepseek_v3_1", "deepseek_v3_1", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
    Family("deepseek-v3.2", "deepseek_v3_2", "deepseek_v3_2", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
    Family("deepseek-v4", "deepseek_v4", "deepseek_v4", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
    Family("kimi-k2", None, "kimi_k2", stop=("<|im_end|>",)),
    Family("kimi-k2.5", "kimi_k25", "kimi_k2", stop=("<|im_end|>",)),
    Family(
        "kimi-k3",
        "kimi_k3",
        "kimi_k3",
        replay_markers=None,
        thinking_kwarg="thinking",
        stop=("<|end_of_msg|>",),
    ),
    Family(
        "glm-4.5",
        "glm45",
        "glm45",
        thinking_kwarg="enable_thinking",
        stop=("<|user|>", "<|observation|>", "<|endoftext|>"),
    ),
    Family(
        "glm-4.7",
        "glm45",
        "glm47",
        thinking_kwarg="enable_thinking",
        # GLM-4.7 drops earlier turns' reasoning unless told not to.
        keep_history_kwargs=(("clear_thinking", False),),
        stop=("<|user|>", "<|observation|>", "<|endoftext|>"),
    ),
    Family("minimax-m2", "minimax_m2", "minimax_m2", stop=("[e~[",)),
    # MiniMax-M1: `<beginning_of_sentence>role` turns, `<think>` the model opens
    # itself, one JSON call per line in `<tool_calls>` (vLLM's example template).
    Family("minimax-m1", "qwen3", "minimax_m1", stop=("<end_of_sentence>",)),
    Family(
        "gpt-oss",
        "gpt_oss",
        "harmony",
        reasoning_field="thinking",
        thinking_kwarg=None,
        stop=("<|return|>", "<|call|>"),
    ),
    # Llama-3.1-Nemotron ends a turn with `<|eot_id|>`; Nemotron Nano v2 (the same
    # `<TOOLCALL>` calls, detected as this family) with `<SPECIAL_12>`.
    Family("nemotron", "nemotron_deci", "nemotron_deci", stop=("<|eot_id|>", "<SPECIAL_12>")),
    Family("nemotron-nano", "nemotron_nano", "qwen3_coder", stop=("<|im_end|>",)),
    Family("llama-3", None, "llama3_json", stop=("<|eot_id|>", "<|eom_id|>")),
    Family("llama-4", None, "pythonic", stop=("<|eot|>", "<|eom|>")),
    # Mistral-Nemo, Mistral-Small, Devstral, Ministral answer directly; Magistral
    # (and the reasoning Ministral) think in [THINK] blocks.
    Family("mistral", None, "mistral", stop=("</s>",)),
    Family("magistral", "mistral", "mistral", stop=("</s>",)),
    Family(
        "gemma",
        "gemma4",
        "gemma4",
        # Gemma 4 ends a turn of calls at `<|tool_response>` (the results come next).
        stop=("<end_of_turn>", "<turn|>", "<|tool_response>"),
    ),
    Family("smollm2", None, "hermes", stop=("<|im_end|>",)),
    # SmolLM3: ChatML, `<think>` when reasoning (its `/think` flag), hermes calls.
    Family("smollm3", "qwen3", "hermes", stop=("<|im_end|>",)),
    # Hermes 2 Pro / Hermes 3: Llama 3 weights, ChatML turns, hermes calls.
    Family("hermes", None, "hermes", stop=("<|im_end|>",)),
    # Reka Edge: `<sep>`-separated `human:` / `assistant:` turns, Qwen3-style thinking and calls.
    Family("reka", "qwen3", "hermes", stop=("<sep>",)),
    # Phi-3.5 / Phi-4-mini: `<|assistant|>` turns ending in `<|end|>`; Phi-4-mini calls in `functools[...]`.
    Family("phi", None, "phi4", stop=("<|end|>",)),
    # Apriel 1.5: `<|assistant|>` turns, calls as a JSON list in `<tool_calls>` (jamba's syntax).
    Family("apriel", None, "jamba", stop=("<|end|>",)),
    # Apriel 1.6 Thinker: its prompt opens `Here are my reasoning steps:`; the answer
    # follows `[BEGIN FINAL RESPONSE]`.
    Family("apriel-thinker", "apriel", "jamba", replay_markers=None, stop=("<|end|>",)),
    # Solar Open 100B: special-token sections; `<|end|>` closes reasoning and, in
    # history, the answer, so it cannot end generation; a call turn ends at `<|calls|>`.
    # `<|flush|>` (an end of generation to llama.cpp's vocabulary rules) is not a stop:
    # Upstage's own vLLM parser reads `text<|flush|><|tool_calls|>…<|calls|>`, the
    # answer's text and then its calls in one turn, so a stop there would cut every
    # call that follows text. An answer without calls ends at the engine's EOS.
    Family("solar-open", "solar_open", "solar_open", stop=("<|calls|>",)),
    # Command R+ (2024): a fenced `Action:` JSON list of calls.
    Family("command-r-plus", None, "cohere_command_r", stop=("<|END_OF_TURN_TOKEN|>",)),
    # Functionary v3.1 (Llama 3.1 turns, `<function=NAME>{json}</function>`) and v3.2
    # (`>>>NAME\n{json}` recipients, `>>>all` for text).
    Family("functionary-v3.1", None, "functionary_v3_1", stop=("<|eot_id|>", "<|eom_id|>")),
    Family("functionary-v3.2", None, "functionary_v3_2", stop=("<|eot_id|>",)),
    # FireFunction v2: Llama 3 turns, calls as `functools[{...}]` (phi4's syntax).
    Family("firefunction-v2", None, "phi4", stop=("<|eot_id|>",)),
    # MiniMax M3's template opens `<mm:think>` itself for thinking_mode="enabled"
    # (the prompt then ends inside reasoning); its default is "adaptive".
    Family("minimax-m3", "minimax_m3", "minimax_m3", stop=("[e~[",)),
    # Seed-OSS switches thinking with an integer `thinking_budget`, not a boolean.
    Family(
        "seed-oss",
        "seed_oss",
        "seed_oss",
        stop=("<seed:eos>",),
    ),
    # Step-3.5's template always opens `<think>`; it has no switch.
    Family("step3.5", "step3p5", "step3p5", stop=("<|im_end|>",)),
    Family("granite-4", None, "granite4", stop=("<|end_of_text|>",)),
    # No public template: the prompt ends with `<|message_model|>`; every block
    # kind, thinking included, is a special token the model writes. Generation
    # ends at the tokenizer's EOS.
    Family("inkling", "inkling", "inkling"),
    # Apertus thinks in its `inner` block when `enable_thinking` is on.
    Family(
        "apertus",
        "apertus",
        "apertus",
        thinking_kwarg="enable_thinking",
        stop=("<|assistant_end|>",),
    ),
    # Command R7B writes `<|START_THINKING|>` itself; Command A / 4 templates open
    # it (switch `reasoning`) and read `reasoning_content`.
    Family(
        "cohere-command3",
        "cohere_command",
        "cohere_command3",
        thinking_kwarg="enable_thinking",
        stop=("<|END_OF_TURN_TOKEN|>",),
    ),
    Family(
        "cohere-command4",
        "cohere_command",
        "cohere_command4",
        thinking_kwarg="reasoning",
        stop=("<|END_OF_TURN_TOKEN|>",),
    ),
    Family("deepseek-v4.1", "deepseek_v41", "deepseek_v41", thinking_kwarg="thinking", stop=_DEEPSEEK_STOP),
    Family("dots", None, "dots"),
    Family("ernie-4.5", "ernie45", "ernie45", stop=("</s>",)),
    Family("functiongemma", None, "functiongemma", stop=("<end_of_turn>",)),
    # GigaChat 3 / 3.1: the `function call` role, one JSON call; 3.5 writes GCML blocks.
    Family("gigachat3", None, "gigachat3", stop=("</s>",)),
    Family("gigachat3.5", "deepseek_r1", "gigachat35", thinking_kwarg="reasoning", stop=("</s>",)),
    Family("granite-3", None, "granite", stop=("<|end_of_text|>",)),
    Family("hunyuan-a13b", "hunyuan_a13b", "hunyuan_a13b"),
    # HY3's template opens `<think:opensource>` for reasoning_effort low/high (its
    # default is no_think); its special tokens carry the `:opensource` suffix.
    Family(
        "hy3",
        "hy_v3",
        "hy_v3",
        replay_markers=("<think:opensource>", "</think:opensource>"),
        thinking_kwarg="reasoning_effort",
        thinking_values=("no_think", "high"),
        stop=("<｜hy_eos:opensource｜>",),
    ),
    Family(
        "hy4",
        "hy_v3",
        "hy_v4",
        replay_markers=("<think:opensource>", "</think:opensource>"),
        thinking_kwarg="reasoning_effort",
        thinking_values=("no_think", "high"),
    ),
    # Intern-S1 thinks like Qwen3; InternLM2 does not think.
    Family("intern-s1", "qwen3", "internlm", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
    Family("internlm2", None, "internlm", stop=("<|im_end|>",)),
    Family("k2-horizon", "k2_horizon", "k2_horizon"),
    # LFM2 / LFM2.5: ChatML with pythonic calls between special tokens; the
    # template reads `thinking` and drops earlier turns' unless told to keep them.
    Family(
        "lfm2",
        "qwen3",
        "lfm2",
        reasoning_field="thinking",
        keep_history_kwargs=(("preserve_thinking", True), ("keep_past_thinking", True)),
        stop=("<|im_end|>",),
    ),
    # Ling 3 / Ring 3 (Bailing V3): `<role>…</role>` turns; the prompt opens `<think>`
    # unless thinking is off.
    Family("ling-3", "ling3", "ling3", thinking_kwarg="enable_thinking", stop=("<|role_end|>",)),
    # PLaMo 3: special-token framing; generation ends at `<|plamo:tag|>`.
    Family(
        "plamo3",
        "plamo3",
        "plamo3",
        thinking_kwarg="enable_thinking",
        stop=("<|plamo:tag|>",),
    ),
    # Poolside Laguna: `<assistant>` turns, GLM-style calls; the prompt ends with
    # `<think>` (thinking on) or `</think>` (off).
    Family("laguna", "qwen3", "poolside_v1", thinking_kwarg="enable_thinking", stop=("</assistant>",)),
    Family("longcat", None, "longcat"),
    # MiMo V2 (MiMo-VL writes hermes calls: its template says so).
    Family("mimo", "mimo", "mimo", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
    Family("mimo-vl", "qwen3", "hermes", stop=_QWEN_STOP),
    # MiniCPM 5: ChatML, `<function name=..><param name=..>` calls; the prompt opens
    # `<think>` when enable_thinking is true, else the model may write it.
    Family("minicpm5", "qwen3", "minicpm5", thinking_kwarg="enable_thinking", stop=_QWEN_STOP),
    # Muse Glimmer: channel-scoped messages (`to=self` reasoning, `to=user` answer,
    # a tool channel per call); the template reads `reasoning_content`.
    Family("muse-glimmer", "muse_glimmer", "muse_glimmer", replay_markers=None, stop=("<|eot|>",)),
    # OLMo 3: ChatML, calls in `<function_calls>`, tool results in an `environment`
    # turn; the Think models' prompt opens `<think>`.
    Family("olmo3", "olmo3", "olmo3", stop=("<|im_end|>", "<|endoftext|>")),
    Family("spark-2.5", "spark25", "spark25", thinking_kwarg="enable_thinking", stop=_DEEPSEEK_STOP),
    # Step 3: StepTML invokes in special-token sections; reasoning from the first token.
    Family("step3", "step3", "step3"),
    # xLAM: a JSON list of calls as the answer.
    Family("xlam", None, "xlam"),
    # Qwen2/2.5 (Coder too): ChatML, hermes `<tool_call>{json}</tool_call>`, no reasoning.
    Family("qwen2.5", None, "hermes", stop=_QWEN_STOP),
)

BY_NAME: dict[str, Family] = {family.name: family for family in FAMILIES}
