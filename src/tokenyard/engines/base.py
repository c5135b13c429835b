"""The engine protocol: prompt token ids in, generated tokens (or text) out.

Every engine — embedded CPU, scripted, simulated, remote vLLM/SGLang/llama.cpp —
implements `Engine`. The pipeline renders the prompt, calls `generate`, and turns
what comes back into events; engines know nothing of APIs or parsers.

A chunk carries new token ids (the pipeline detokenizes them incrementally, special
tokens kept), or text for engines that only produce text. The last chunk has a
`finish_reason` and the engine's own accounting: how many prompt tokens it found
in its prefix cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from ..conversation import Conversation

EngineFinish = Literal["stop", "length", "abort"]


class EngineError(Exception):
    """The engine failed to serve a request (down, crashed, answered garbage)."""


class PromptTooLong(EngineError):
    """The prompt does not fit the model's context window."""

    def __init__(self, prompt_tokens: int, max_model_len: int):
        super().__init__(f"prompt is {prompt_tokens} tokens; this model's context window is {max_model_len} tokens")
        self.prompt_tokens = prompt_tokens
        self.max_model_len = max_model_len


@dataclass
class EngineRequest:
    request_id: str
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    # Token ids that end generation (the family's end-of-turn tokens, eos).
    stop_token_ids: list[int] = field(default_factory=list)
    # The rendered prompt as text, and the conversation it came from: engines that
    # script their answers (tests, demos, benchmarks) read them; real ones do not.
    prompt_text: str = ""
    conversation: Conversation | None = None
    # A request the user is not waiting on (an agent's title or summary request):
    # engines that schedule may run it after the others and cap its output.
    background: bool = False


@dataclass
class EngineChunk:
    token_ids: list[int] = field(default_factory=list)
    # Text for engines that do not produce token ids; None when token_ids are given.
    text: str | None = None
    finish_reason: EngineFinish | None = None
    # Prompt tokens whose KV the engine reused from its prefix cache: set on the
    # first chunk, or on the last by engines that only count it at the end (vLLM).
    cached_tokens: int | None = None
    # Prompt tokens the engine newly stored in its prefix cache for this request (set
    # with cached_tokens by engines that can tell; None: unknown).
    cache_written_tokens: int | None = None


@dataclass(frozen=True)
class EngineInfo:
    name: str
    max_model_len: int


class Engine(Protocol):
    def info(self) -> EngineInfo: ...

    def generate(self, request: EngineRequest) -> AsyncIterator[EngineChunk]:
        """Stream the generation. Closing the iterator early (the client went away)
        aborts the request and frees its resources."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...
