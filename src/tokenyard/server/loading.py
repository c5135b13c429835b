"""From command-line settings to a served model and its engine."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..engines.base import Engine
from ..parsing.reasoning.parser import HARMONY_REASONING_NAMES, canonical_reasoning_name, reasoning_format
from ..parsing.registry import check_tool_parser_name
from ..prompting.profiles import detect_profile
from ..prompting.render import PromptRenderer
from ..prompting.template import ChatTemplate
from ..prompting.tokenizer import Tokenizer
from .pipeline import ServedModel

BUILTIN_MODELS = ("smollm2",)


@dataclass
class ModelSettings:
    model: str = "smollm2"
    engine: str = "embedded"
    served_model_names: tuple[str, ...] = ()
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    chat_template: Path | None = None
    keep_anthropic_preamble: bool = False
    # scripted and simulated engines
    script: Path | None = None
    token_delay: float = 0.0
    max_model_len: int | None = None
    # simulated engine
    time_scale: float = 1.0
    kv_block_size: int = 16
    kv_blocks: int | None = None
    max_batched_tokens: int = 8192
    # remote engine
    engine_url: str | None = None
    engine_model: str | None = None
    engine_api_key: str | None = None


def _tokenizer_for(settings: ModelSettings) -> tuple[Tokenizer, Path | None]:
    """The tokenizer, and the HF model directory when there is one (the embedded
    engine loads weights from it)."""
    spec = settings.model
    if spec in BUILTIN_MODELS or spec.endswith(".gguf"):
        from ..engines.embedded import resolve_embedded_model  # fetched/converted once, cached

        if settings.engine == "embedded":
            folder = resolve_embedded_model(spec)
            return Tokenizer.from_model_dir(folder), folder
        from ..engines.embedded import builtin_gguf

        gguf = builtin_gguf(spec) if spec in BUILTIN_MODELS else Path(spec)
        return Tokenizer.from_gguf(gguf), None
    folder = Path(spec)
    if not folder.is_dir():
        raise ValueError(
            f"--model {spec!r}: not a model directory, a .gguf file, or one of {', '.join(BUILTIN_MODELS)}"
        )
    return Tokenizer.from_model_dir(folder), folder


def load(settings: ModelSettings) -> tuple[ServedModel, Engine]:
    tokenizer, folder = _tokenizer_for(settings)
    source = settings.chat_template.read_text(encoding="utf-8") if settings.chat_template else tokenizer.chat_template
    if not source:
        raise ValueError(f"{settings.model}: no chat template found; pass --chat-template FILE")
    name_hint = settings.served_model_names[0] if settings.served_model_names else settings.model
    markers = None
    # Peer spellings (vLLM's `openai_gptoss`, SGLang's `deepseekv31`...) become ours.
    reasoning_name = canonical_reasoning_name(settings.reasoning_parser) if settings.reasoning_parser else None
    tool_name = check_tool_parser_name(settings.tool_call_parser) if settings.tool_call_parser else None
    if reasoning_name and reasoning_name not in HARMONY_REASONING_NAMES:
        fmt = reasoning_format(reasoning_name)
        markers = (fmt.start[-1], fmt.end[0])
    profile = detect_profile(folder, source, name=f"{settings.model} {name_hint}").with_overrides(
        reasoning_name, tool_name, markers
    )
    template = ChatTemplate(source, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token)
    renderer = PromptRenderer(profile, template, tokenizer, keep_anthropic_preamble=settings.keep_anthropic_preamble)
    names = settings.served_model_names or (Path(settings.model).name if folder else settings.model,)
    model = ServedModel(names[0], profile, tokenizer, renderer, aliases=tuple(names[1:]), created=int(time.time()))
    if settings.engine in ("scripted", "simulated"):
        from ..engines.scripted import ScriptedEngine

        scripted = ScriptedEngine(
            tokenizer,
            tool_format=profile.tool_parser,
            reasoning_format=profile.reasoning_parser,
            script=settings.script,
            token_delay=settings.token_delay,
            max_model_len=settings.max_model_len or 1_000_000,
            name=names[0],
        )
        engine: Engine = scripted
        if settings.engine == "simulated":
            from ..engines.simulated import SimulatedEngine

            window = settings.max_model_len or 262_144
            blocks = settings.kv_blocks or max(65_536, -(-window // settings.kv_block_size))
            engine = SimulatedEngine(
                tokenizer,
                scripted,
                block_size=settings.kv_block_size,
                num_blocks=blocks,
                max_batched_tokens=settings.max_batched_tokens,
                max_model_len=window,
                time_scale=settings.time_scale,
                name=names[0],
            )
    elif settings.engine == "embedded":
        from ..engines.embedded import EmbeddedEngine

        if folder is None:
            raise ValueError("the embedded engine needs a model directory, a .gguf file or a built-in model")
        engine = EmbeddedEngine(folder)
    elif settings.engine == "remote":
        from ..engines.remote import RemoteEngine

        if not settings.engine_url:
            raise ValueError("--engine remote needs --engine-url URL (an OpenAI-compatible completions server)")
        engine = RemoteEngine(
            settings.engine_url,
            model=settings.engine_model,
            api_key=settings.engine_api_key,
            max_model_len=settings.max_model_len,
        )
    else:
        raise ValueError(f"unknown engine {settings.engine!r}; known: embedded, scripted, simulated, remote")
    return model, engine
