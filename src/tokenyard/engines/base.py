"""The engine protocol: prompt token ids in, generated tokens (or text) out.

Every engine — embedded CPU, scripted, simulated, remote vLLM/SGLang/llama.cpp —
implements `Engine`. The pipeline renders the prompt, calls `generate`, and turns
what comes back into events; engines know nothing of APIs, prompting or parsers
(DESIGN rule 7): they import only `conversation`, `events` and `kv_blocks`, and an
engine that needs a tokenizer is handed one (`EngineTokenizer`).

A chunk carries new token ids (the pipeline detokenizes them incrementally, special
tokens kept), or text for engines that only produce text. The last chunk has a
`finish_reason` and the engine's own accounting: how many prompt tokens it found
in its prefix cache.

What the request constrains (tool choice, one call at most, a reasoning budget, a
JSON answer)
travels in `EngineRequest.constraints`. An engine honours what it can — a remote
engine through its guided decoding, the embedded engine by forcing the reasoning
end marker, the scripted engine by answering accordingly — and the pipeline
validates the output whatever the engine did.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..conversation import Conversation

EngineFinish = Literal["stop", "length", "abort"]
ToolChoiceMode = Literal["auto", "none", "required", "named"]


class EngineTokenizer(Protocol):
    """What an engine may ask of the model's tokenizer (handed in; engines never
    build one)."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


@dataclass(frozen=True)
class CallTag:
    """One tool's call syntax, for guided decoding: `begin`, then arguments that match
    `schema` written in `style` (xgrammar's names: "json", "qwen_xml"...), then `end`."""

    begin: str
    schema: dict[str, Any]
    end: str
    style: str = "json"


@dataclass(frozen=True)
class CallGuide:
    """The calls a guided-decoding engine may produce: free text until one of
    `triggers`, then one of `tags`."""

    triggers: tuple[str, ...]
    tags: tuple[CallTag, ...]


@dataclass(frozen=True)
class ReasoningBudget:
    """At most `tokens` reasoning tokens. The output starts inside the reasoning block
    when `inside`; `start_token_ids` open one. When the budget is spent inside a block,
    the engine emits `end_token_ids` (the family's end marker and the separator its
    template expects) as if sampled, and generation goes on after them."""

    tokens: int
    end_token_ids: tuple[int, ...]
    start_token_ids: tuple[int, ...] = ()
    inside: bool = False


@dataclass(frozen=True)
class ReasonFirst:
    """A forced call (a required or named tool) that the model reasons before. The
    output starts inside the reasoning block; the block ends where the model writes
    `end` (the family's end marker), where `budget` reasoning tokens are spent, or
    where the model stops inside it. Then what closes it (`end`, unless the model
    wrote it, and `separator`) and `opener` (the call opener) follow as if sampled,
    and the call is generated from there: after the opener, or under
    `Constraints.guide` (then `opener` is empty). engines/reason_first.py runs it on
    any engine, as two requests: the second continues the first's prompt and output."""

    end: str
    separator: str
    opener: str
    budget: int | None = None


@dataclass(frozen=True)
class OutputGuide:
    """The answer must be JSON: matching `schema`, or any JSON object when it is None
    (`json_object`). Reasoning comes first, unconstrained: the output starts inside a
    reasoning block when `inside`, and the model may open one first (`reasoning_start`,
    the family's start marker, text and token ids) when the markers are given; the
    JSON follows the end marker (`reasoning_end`). When the turn may call tools,
    the answer may instead begin with `call_trigger` (the family's call opener): from
    there nothing is guided, as a turn with calls is not held to the format."""

    schema: dict[str, Any] | None
    reasoning_start: str = ""
    reasoning_end: str = ""
    reasoning_start_ids: tuple[int, ...] = ()
    reasoning_end_ids: tuple[int, ...] = ()
    inside: bool = False
    call_trigger: str = ""
    call_trigger_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Constraints:
    """What the request demands of the output.

    `tool_choice`: "none" (no call), "required" (at least one), "named" (a call to
    `tool_name`), or "auto". `parallel_tool_calls=False`: at most one call.
    `prefill`: text the pipeline put at the end of the prompt (the family's call
    opener, for engines without guided decoding): the output continues it.
    `guide`: the calls' syntax for engines with guided decoding (set instead of a
    prefill). `reasoning_budget`: see `ReasoningBudget`.
    """

    tool_choice: ToolChoiceMode = "auto"
    tool_name: str | None = None
    parallel_tool_calls: bool = True
    prefill: str = ""
    guide: CallGuide | None = None
    reasoning_budget: ReasoningBudget | None = None
    output: OutputGuide | None = None
    reason_first: ReasonFirst | None = None

    @property
    def requires_call(self) -> bool:
        return self.tool_choice in ("required", "named")


@dataclass
class EngineRequest:
    request_id: str
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    # OpenAI's frequency penalty: a token's logit minus this times its count in the
    # answer so far (None: the engine's default, none).
    frequency_penalty: float | None = None
    # OpenAI's presence penalty: a token's logit minus this once it is in the answer.
    presence_penalty: float | None = None
    # Token ids that end generation (the family's end-of-turn tokens, eos).
    stop_token_ids: list[int] = field(default_factory=list)
    # The rendered prompt as text, and the conversation it came from: engines that
    # script their answers (tests, demos, benchmarks) read them; real ones do not.
    prompt_text: str = ""
    conversation: Conversation | None = None
    constraints: Constraints = field(default_factory=Constraints)
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
    # The engine constrains output to `Constraints.guide` (vLLM/SGLang structured
    # outputs); otherwise the pipeline prefills the call opener instead.
    guided_decoding: bool = False


class Engine(Protocol):
    def info(self) -> EngineInfo: ...

    def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        """Stream the generation: chunks of token ids (or text), the last one with a
        finish reason. `aclose()` on the returned generator (the client went away,
        the pipeline ended the turn or timed out) aborts the request in the engine
        and frees what it held; so does cancelling a task blocked on it. Failures
        raise `EngineError`."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


class ReasoningBudgetTracker:
    """Counts generated tokens inside reasoning blocks, by token id (sans-IO): an
    engine that samples token by token checks `exhausted` before each token and, when
    it is, emits `budget.end_token_ids` instead and calls `forced_end()`."""

    def __init__(self, budget: ReasoningBudget):
        self.budget = budget
        self.inside = budget.inside
        self.spent = 0
        self._recent: list[int] = []
        self._window = max(len(budget.start_token_ids), len(budget.end_token_ids), 1)

    @property
    def exhausted(self) -> bool:
        return self.inside and self.spent >= self.budget.tokens

    def push(self, token_id: int) -> None:
        """Record one generated token."""
        self._recent.append(token_id)
        del self._recent[: -self._window]
        if self.inside:
            if self._ends_with(self.budget.end_token_ids):
                self.inside = False
            else:
                self.spent += 1
        elif self._ends_with(self.budget.start_token_ids):
            self.inside = True

    def forced_end(self) -> None:
        """The end marker was emitted in the model's place: the block is closed."""
        self.inside = False
        self._recent.clear()

    def _ends_with(self, ids: tuple[int, ...]) -> bool:
        return bool(ids) and tuple(self._recent[-len(ids) :]) == ids
