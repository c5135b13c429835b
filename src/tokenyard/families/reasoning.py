"""Reasoning syntaxes: the one table of how each family brackets its thinking.

The reasoning parser (parsing/reasoning/) runs over these records; the replay
markers a profile writes earlier turns' reasoning back with derive from them
(families/catalog.py), so a family's markers are stated once. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReasoningFormat:
    name: str
    start: tuple[str, ...]
    end: tuple[str, ...]
    # Output is reasoning from its first token until an end marker (the template
    # opened the block, or the family never writes the start marker).
    force: bool = False
    # Markers that end reasoning without being consumed: they begin what follows
    # (a tool-call section).
    implicit_end: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    # Channel wrappers that are syntax wherever they appear outside a tool call:
    # reported as markers, never content (an implicit end among them also ends
    # reasoning).
    syntax: tuple[str, ...] = ()
    # Special tokens that only ever begin a marker: reasoning that ends, at the end of
    # output, in a cut-off marker starting with one ends in a marker, not reasoning.
    special_tokens: tuple[str, ...] = ()
    # The markers are ordinary prose, not control tokens: a start inside reasoning
    # or an end outside it is text the model wrote, kept as written.
    prose: bool = False
    # End-of-turn tokens (the engine stops at them; each must also be in `end` and
    # `syntax`): what follows one is not part of the message, so it is reported as
    # markers, never reasoning, content or calls.
    end_of_turn: tuple[str, ...] = ()


_THINK = (("<think>",), ("</think>",))

REASONING_FORMATS: tuple[ReasoningFormat, ...] = (
    ReasoningFormat("basic", *_THINK, aliases=("qwen3", "nemotron_deci", "glm45", "deepseek")),
    ReasoningFormat(
        "deepseek_r1",
        *_THINK,
        force=True,
        aliases=("deepseek_v3", "deepseek_v3_1", "deepseek_v3_2", "step3", "nemotron_nano", "nemotron3"),
    ),
    ReasoningFormat("deepseek_v4", *_THINK, implicit_end=("<｜DSML｜tool_calls>", "<｜DSML｜invoke name=")),
    ReasoningFormat("deepseek_v41", *_THINK, implicit_end=("<｜DSML｜ calls>", "<｜DSML｜ invoke name=")),
    # Apertus thinks in its `inner` block; a tool call may start inside it.
    ReasoningFormat("apertus", ("<|inner_prefix|>",), ("<|inner_suffix|>",), aliases=("apertus2509",)),
    # Cohere Command: the template opens the thinking block; a plain answer comes in
    # a text block (`<|START_RESPONSE|>` in Command A, `<|START_TEXT|>` in Command 4),
    # calls in an action block.
    ReasoningFormat(
        "cohere_command",
        ("<|START_THINKING|>",),
        ("<|END_THINKING|>",),
        force=True,
        implicit_end=("<|START_RESPONSE|>", "<|START_TEXT|>", "<|START_ACTION|>"),
        aliases=("cohere_command3", "cohere_command4"),
        syntax=("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>"),
    ),
    # ERNIE 4.5 Thinking starts inside reasoning; an answer may come in `<response>` tags.
    ReasoningFormat("ernie45", *_THINK, force=True, implicit_end=("<response>",), syntax=("<response>", "</response>")),
    # Hunyuan-A13B answers in `<answer>` tags after its reasoning.
    ReasoningFormat("hunyuan_a13b", *_THINK, implicit_end=("<answer>",), syntax=("<answer>", "</answer>")),
    # Hunyuan HY3/HY4: `<think>` spelled with or without the checkpoint's token suffix;
    # the template opens it for reasoning_effort low/high.
    ReasoningFormat(
        "hy_v3",
        ("<think>", "<think:opensource>"),
        ("</think>", "</think:opensource>"),
        implicit_end=("<tool_calls>", "<tool_calls:opensource>"),
        aliases=("hy_v4", "hunyuan"),
    ),
    # K2 Horizon: one pair of think tokens per reasoning effort.
    ReasoningFormat(
        "k2_horizon",
        ("<ifm|think>", "<ifm|think_fast>", "<ifm|think_faster>"),
        ("</ifm|think>", "</ifm|think_fast>", "</ifm|think_faster>"),
        force=True,
        implicit_end=("<ifm|tool_calls>",),
    ),
    ReasoningFormat("kimi", ("◁think▷",), ("◁/think▷",)),
    ReasoningFormat(
        "kimi_k25",
        *_THINK,
        force=True,
        implicit_end=("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>"),
    ),
    # The generation prompt opens the think channel; the response channel and the
    # tools channel follow it.
    ReasoningFormat(
        "kimi_k3",
        ("<|open|>think<|sep|>",),
        # The think close is also read without its separator (the model left it out).
        ("<|close|>think<|sep|>", "<|close|>think"),
        force=True,
        implicit_end=("<|open|>response<|sep|>", "<|open|>tools<|sep|>"),
        syntax=("<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>"),
        special_tokens=("<|open|>", "<|close|>"),
    ),
    ReasoningFormat("minimax_m2", *_THINK, force=True, implicit_end=("<minimax:tool_call>",)),
    ReasoningFormat("minimax_append_think", *_THINK, force=True),
    # MiniMax M3: the template opens `<mm:think>` itself when thinking_mode is
    # "enabled" (the prompt then ends inside reasoning); otherwise the model writes
    # it, or begins with a bare `</mm:think>`.
    ReasoningFormat("minimax_m3", ("<mm:think>",), ("</mm:think>",), implicit_end=("]<]minimax[>[<tool_call>",)),
    ReasoningFormat("seed_oss", ("<seed:think>",), ("</seed:think>",), implicit_end=("<seed:tool_call>",)),
    # Inkling's thinking is one kind of its typed blocks; `<|end_message|>` ends every
    # kind (the inkling tool parser owns the other blocks' framing).
    ReasoningFormat("inkling", ("<|content_thinking|>",), ("<|end_message|>", "<|content_model_end_sampling|>")),
    # Step-3.5's template always ends the prompt with `<think>\n`.
    ReasoningFormat("step3p5", *_THINK, force=True),
    # Solar Open 2: the generation prompt always opens `<|think:start|>` (and closes it
    # too for reasoning_effort low); a call may begin inside reasoning.
    ReasoningFormat(
        "solar_open2",
        ("<|think:start|>",),
        ("<|think:end|>",),
        force=True,
        implicit_end=("<|tool_call:start|>",),
    ),
    # Muse Glimmer: channel-scoped messages; `to=self` is reasoning, `to=user` the
    # answer, the framing tokens syntax (the tool channel belongs to muse_glimmer's
    # tool parser). Headers are matched from `to=`, not the space before it, so
    # ordinary prose seldom takes the marker path. A channel may open without its
    # role (`<|start|>to=self`) or its recipient (`<|start|><|message|>`: the user's).
    ReasoningFormat(
        "muse_glimmer",
        ("to=self<|message|>",),
        ("<|eom|>", "<|eot|>"),
        syntax=("<|start|>assistant", "<|start|><|message|>", "<|start|>", "to=user<|message|>", "<|eot|>", "<|eom|>"),
        aliases=("muse",),
    ),
    # OLMo 3 Think: the generation prompt opens `<think>`.
    ReasoningFormat("olmo3", *_THINK, force=True),
    # PLaMo 3: thinking from the first token (unless off); the end-of-turn token is
    # syntax, never content, and ends reasoning it interrupts and the turn.
    ReasoningFormat(
        "plamo3",
        ("<|plamo:begin_think:plamo|>",),
        ("<|plamo:end_think:plamo|>", "<|plamo:tag|>"),
        force=True,
        syntax=("<|plamo:tag|>",),
        end_of_turn=("<|plamo:tag|>",),
    ),
    # Ling 3 and Spark 2.5: the generation prompt opens `<think>` unless thinking is off.
    ReasoningFormat("ling3", *_THINK, force=True),
    ReasoningFormat("spark25", *_THINK, force=True),
    # MiMo reads as thinking from its first token (vLLM and SGLang alike) unless
    # thinking is off; a `<think>` it writes itself is syntax.
    ReasoningFormat("mimo", *_THINK, force=True),
    # Magistral and the reasoning Ministral write `[THINK]` themselves (their
    # templates never open it): text outside the block is the answer (vLLM's
    # mistral parser since it stopped reading an unmarked answer as reasoning).
    ReasoningFormat("mistral", ("[THINK]",), ("[/THINK]",), aliases=("magistral",)),
    # Apriel 1.5/1.6 (vLLM's `apriel`): everything before `[BEGIN FINAL RESPONSE]` is
    # reasoning (1.6's generation prompt opens it with `Here are my reasoning
    # steps:`); the answer's closing marker and the turn's end token are syntax.
    ReasoningFormat(
        "apriel",
        ("Here are my reasoning steps:\n",),
        ("[BEGIN FINAL RESPONSE]",),
        force=True,
        syntax=("[END FINAL RESPONSE]", "<|end|>"),
    ),
    # Solar Open 100B: `<|think|>` opens reasoning and `<|end|>` closes it (and the
    # answer); `<|begin|>assistant<|content|>` heads the answer (the tool section is
    # solar_open's tool parser's).
    ReasoningFormat(
        "solar_open",
        ("<|think|>",),
        ("<|end|>",),
        syntax=("<|begin|>assistant<|content|>", "<|content|>", "<|flush|>"),
    ),
    ReasoningFormat(
        "granite",
        ("Here's my thought process:", "Here is my thought process:"),
        ("Here's my response:", "Here is my response:"),
        prose=True,
    ),
    # The longer start markers swallow gemma's `thought` channel label, with or
    # without its newline (an empty thought channel has none).
    ReasoningFormat("gemma4", ("<|channel>thought\n", "<|channel>thought", "<|channel>"), ("<channel|>",)),
)

REASONING_BY_NAME = {name: fmt for fmt in REASONING_FORMATS for name in (fmt.name, *fmt.aliases)}
