"""THE generation path (DESIGN rule 1). Every API request arrives here as a
`Conversation` and leaves as `Event`s:

Conversation → preamble strip + replay + chat template (+ call prefill) → tokens →
engine → incremental detokenize (control tokens dropped) → stop sequences →
OutputSplitter → tool-choice policy → events, with usage.

A control token the model writes mid-answer that is not a stop token (Qwen2.5's
`<|im_start|>`) never becomes text (parsing/control_tokens.py): token ids are
dropped by id; a text-only engine's output has the control texts cut out.

`Pipeline.prepare` (async: the rendering runs off the event loop) or `Pipeline.start`
(the same, on the calling thread) renders and validates, so a bad request fails with
a clean API error before any byte is streamed; `Generation.events()` then streams.
Closing that iterator early (the client went away) closes the engine's stream,
which aborts the request there.

What the request demands of the output is enforced here, whatever the engine:
- `tool_choice: none`: the tools stay in the prompt (the prefix is unchanged) and
  the output is parsed without a tool parser, so call syntax stays text;
- `required` / a named tool: engines with guided decoding get the calls' syntax
  (`Constraints.guide`); others get the family's call opener appended to the prompt
  (the prefill), which is fed to the parsers first so the event stream is whole.
  Either way the output is checked: a call to another tool is never passed on, and
  a turn that ends without a call ends with a `ToolChoiceViolation` error;
- `parallel_tool_calls: false`: the turn ends after the first complete call;
- `thinking.budget_tokens`: a `ReasoningBudget` for the engine, which ends the
  reasoning block with the family's end marker when the budget is spent;
- an output format (`json_object`, `json_schema`): an `OutputGuide` (engines with
  guided decoding hold the answer to it; one that may call tools may begin a call
  instead); on every engine, an answer without calls is validated at the end, and
  one that breaks the format ends with an `OutputFormatViolation` error, never a
  finish.
An engine that stays silent for `engine_timeout` seconds is aborted (`EngineTimeout`).

A client that asks for verdicts on the turn's tool calls (Claude Code's auto mode)
gets a `CallReview` on the generation: each call is handed to it the moment it is
complete, and the turn's `Finish` carries the verdicts (server/safeguards.py).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..apis.call_hold import CallHold
from ..conversation import Conversation, Message, Reasoning, Text, ToolCall
from ..engines.base import (
    CallGuide,
    CallTag,
    Constraints,
    Engine,
    EngineChunk,
    EngineFinish,
    EngineRequest,
    OutputGuide,
    ReasonFirst,
    ReasoningBudget,
)
from ..engines.reason_first import reason_then_call
from ..events import (
    CallVerdict,
    Event,
    EventGrammar,
    EventGrammarError,
    Finish,
    FinishReason,
    ParseEvent,
    PromptProcessed,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallReady,
    ToolCallStart,
    Usage,
)
from ..families.call_syntax import CallSyntax, call_syntax
from ..faults import (
    ENGINE_FAILED_MESSAGE,
    EngineError,
    EngineTimeout,
    InvalidToolChoice,
    OutputFormatViolation,
    PromptTooLong,
    TemplateError,
    ToolChoiceViolation,
)
from ..parsing.control_tokens import ControlTexts, ControlTokenFilter, control_texts, syntax_texts
from ..parsing.harmony import CHANNEL, END, MESSAGE, START
from ..parsing.reasoning.parser import HARMONY_REASONING_NAMES, reasoning_format
from ..parsing.registry import HARMONY_TOOL_NAMES, tool_parser_class
from ..parsing.splitter import OutputSplitter
from ..parsing.tools.base import CallIds
from ..prompting.prefix_watch import PrefixReport, PrefixWatch
from ..prompting.profiles import ModelProfile
from ..prompting.render import Prefill, PromptRenderer, RenderedPrompt
from ..prompting.streams import is_side_query, prompt_stream
from ..prompting.tokenizer import Tokenizer
from ..settings import DEFAULT_ENGINE_TIMEOUT, DEFAULT_MAX_TOKENS
from ..structured_output import output_violation
from .offload import SMALL_RENDER_BYTES, Offload, free_in_pieces

log = logging.getLogger("tokenyard.pipeline")

# What follows an injected reasoning end marker (the templates' own separator).
REASONING_END_SEPARATOR = "\n\n"
SHUTTING_DOWN = "tokenyard is shutting down; the generation was stopped"


@dataclass
class ServedModel:
    """One model as the server offers it: its ids, profile, tokenizer and renderer."""

    name: str
    profile: ModelProfile
    tokenizer: Tokenizer
    renderer: PromptRenderer
    aliases: tuple[str, ...] = ()
    created: int = 0
    # Applied to every request that sets none of its own (a built-in model's record
    # declares it; Chat requests may set their own).
    frequency_penalty: float | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def stop_texts(self) -> list[str]:
        """The stop tokens as text: where a text-only engine's turn ends."""
        eos = self.tokenizer.eos_token
        return sorted({*self.profile.stop, *([eos] if eos else [])})

    def stop_token_ids(self) -> list[int]:
        ids = [self.tokenizer.token_to_id(t) for t in self.profile.stop]
        if self.tokenizer.eos_token_id is not None:
            ids.append(self.tokenizer.eos_token_id)
        return sorted({i for i in ids if i is not None})

    def control_tokens(self) -> dict[int, str]:
        """The special tokens that are no part of the family's output syntax (id ->
        text): written mid-answer, they are dropped, never shown."""
        special = self.tokenizer.special_tokens
        profile = self.profile
        controls = control_texts(special.values(), syntax_texts(profile.reasoning_parser, profile.tool_parser))
        return {i: t for i, t in special.items() if t in controls}


class CallReview(Protocol):
    """Judges the turn's tool calls while it goes on (server/safeguards.py): each
    call is handed over the moment it is complete, the verdicts are collected
    before the turn's `Finish`."""

    def call_ready(self, call: ToolCallReady) -> None: ...

    async def verdicts(self) -> dict[str, CallVerdict]: ...

    def cancel(self) -> None: ...


@dataclass
class Generation:
    """A validated request, ready to stream: `events()` runs it (once)."""

    pipeline: Pipeline
    conversation: Conversation
    prompt: RenderedPrompt
    request_id: str
    max_tokens: int
    prefix: PrefixReport | None
    call_ids: CallIds = field(default_factory=CallIds)
    constraints: Constraints = field(default_factory=Constraints)
    # Set when the client asked for verdicts on the turn's calls (Claude Code's auto mode).
    review: CallReview | None = None

    def events(self) -> AsyncGenerator[Event]:
        """The generation's events: `PromptProcessed`, then parse events, then
        `Finish` (or a `StreamError`). Closing the iterator aborts the engine."""
        return _Turn(self).events()


class Pipeline:
    def __init__(
        self,
        model: ServedModel,
        engine: Engine,
        *,
        prefix_watch: PrefixWatch | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        engine_timeout: float | None = DEFAULT_ENGINE_TIMEOUT,
        offload: Offload | None = None,
        log_prompt_excerpts: bool = False,
        check_events: bool = False,
    ):
        self.model = model
        self.engine = engine
        self.prefix_watch = prefix_watch if prefix_watch is not None else PrefixWatch()
        self.default_max_tokens = default_max_tokens
        self.engine_timeout = engine_timeout
        # Diagnostics quote prompt text only when the operator asks (--log-prompt-excerpts).
        self.log_prompt_excerpts = log_prompt_excerpts
        # Debug mode (--check-events): every stream is checked against the event grammar.
        self.check_events = check_events
        # Shared with the routes (body parsing of large requests): one pool per server.
        self.offload = offload if offload is not None else Offload()
        self.stop_ids = model.stop_token_ids()
        controls = model.control_tokens()
        self.control_ids = frozenset(controls)
        # For text-only engines (their stop texts already end the turn): compiled on first use.
        self._control_texts = frozenset(controls.values()) - set(model.stop_texts())
        self._compiled_controls: ControlTexts | None = None
        # Graceful shutdown: once draining, every running generation ends with a
        # StreamError; those waiting on the engine are woken by cancelling their task.
        self._draining = False
        self._awaiting_engine: set[asyncio.Task[object]] = set()
        # Speculative prefills in flight (held so they are not garbage-collected).
        self._prefills: set[asyncio.Task[None]] = set()
        profile = model.profile
        self._tool_parser = _canonical_tool_parser(profile.tool_parser)
        self._syntax = call_syntax(self._tool_parser)
        reasoning = (profile.reasoning_parser or "").lower()
        syntax = reasoning_format(reasoning) if reasoning and reasoning not in HARMONY_REASONING_NAMES else None
        self._reasoning_forced = bool(syntax and syntax.force)
        # What opens and closes reasoning: the replay markers, or the syntax's own
        # where the template reads reasoning from a field (Kimi K3, Muse Glimmer), so
        # a thinking budget or a forced call can still end a block.
        self._thinking_markers = profile.reasoning_markers or ((syntax.start[0], syntax.end[0]) if syntax else None)
        # What follows a reasoning block the pipeline closes (a budget, a forced call).
        self._after_reasoning = REASONING_END_SEPARATOR
        if reasoning in HARMONY_REASONING_NAMES:
            # gpt-oss reasons in analysis messages, which a budget or a forced call
            # can close like a block; the next message follows.
            self._thinking_markers = (f"{CHANNEL}analysis{MESSAGE}", END)
            self._after_reasoning = f"{START}assistant"

    def control_text_matcher(self) -> ControlTexts | None:
        """The control tokens' texts, for a text-only engine's output."""
        if self._compiled_controls is None and self._control_texts:
            self._compiled_controls = ControlTexts(self._control_texts)
        return self._compiled_controls

    def drain(self) -> None:
        """The server is stopping: end every running stream with the API's error
        event now (its engine work is aborted when its stream closes)."""
        self._draining = True
        for task in list(self._awaiting_engine):
            task.cancel(SHUTTING_DOWN)

    def awaiting_engine(self, task: asyncio.Task[object] | None, waiting: bool) -> None:
        """`task` is (or is no longer) waiting on the engine: `drain` wakes it."""
        if task is None:
            return
        if waiting:
            self._awaiting_engine.add(task)
        else:
            self._awaiting_engine.discard(task)

    @property
    def draining(self) -> bool:
        return self._draining

    # ------------------------------------------------------------------ rendering

    def render(self, conversation: Conversation, *, add_generation_prompt: bool = True) -> RenderedPrompt:
        """The exact prompt generation would use (count_tokens and tokenize use it).
        CPU work: from the event loop, `await prepare_prompt(...)` instead."""
        return self.model.renderer.render(
            conversation,
            add_generation_prompt=add_generation_prompt,
            prefill=self._prefill_for(conversation) if add_generation_prompt else None,
        )

    async def prepare_prompt(self, conversation: Conversation, *, add_generation_prompt: bool = True) -> RenderedPrompt:
        """`render`, off the event loop."""
        return await self.offload.run(self.render, conversation, add_generation_prompt=add_generation_prompt)

    async def count_prompt_tokens(self, conversation: Conversation) -> int:
        """The length of `render`'s prompt, off the event loop; the prompt is freed
        there too (see `render_within_window`)."""

        def count() -> int:
            ids = self.render(conversation).token_ids
            count = len(ids)
            free_in_pieces(ids)
            return count

        return await self.offload.run(count)

    def render_within_window(self, conversation: Conversation) -> RenderedPrompt:
        """`render`, refusing a prompt the engine's window cannot hold. Such a prompt
        (a 20 MB body: ~4M ids) is freed here, a slice at a time: freed at once, on
        any thread, it would hold the GIL and stall the event loop (~0.1 s per 4M ids)."""
        prompt = self.render(conversation)
        count, window = len(prompt.token_ids), self.engine.info().max_model_len
        if count >= window:
            free_in_pieces(prompt.token_ids)
            del prompt
            raise PromptTooLong(count, window)
        return prompt

    # ------------------------------------------------------------------ starting

    def start(
        self, conversation: Conversation, *, request_id: str | None = None, call_id_prefix: str = "call_"
    ) -> Generation:
        """Render and validate on the calling thread (tests, scripts)."""
        self.check_tool_choice(conversation)
        return self._begin(conversation, self.render(conversation), request_id, call_id_prefix)

    async def prepare(
        self,
        conversation: Conversation,
        *,
        request_id: str | None = None,
        call_id_prefix: str = "call_",
        body_bytes: int | None = None,
    ) -> Generation:
        """Render (off the event loop, unless the request's body is under
        `SMALL_RENDER_BYTES`) and validate: the `Generation` to stream.
        Raises `PromptTooLong`, `InvalidToolChoice`, `TemplateError` for the API
        layer to map to a 400."""
        self.check_tool_choice(conversation)
        if body_bytes is not None and body_bytes < SMALL_RENDER_BYTES:
            prompt = self.render_within_window(conversation)
        else:
            prompt = await self.offload.run(self.render_within_window, conversation)
        return self._begin(conversation, prompt, request_id, call_id_prefix)

    def check_tool_choice(self, conversation: Conversation) -> None:
        choice = conversation.tool_choice
        names = {t.name for t in conversation.model_tools()}
        if choice.mode == "required" and not names:
            raise InvalidToolChoice("tool_choice requires a tool call, but the request offers no tools")
        if choice.mode == "named" and choice.name not in names:
            offered = ", ".join(sorted(names)) or "none"
            raise InvalidToolChoice(f"tool_choice names {choice.name!r}, which is not among the tools ({offered})")

    def _begin(
        self, conversation: Conversation, prompt: RenderedPrompt, request_id: str | None, call_id_prefix: str
    ) -> Generation:
        window = self.engine.info().max_model_len
        if len(prompt.token_ids) >= window:
            raise PromptTooLong(len(prompt.token_ids), window)
        wanted = conversation.sampling.max_tokens or self.default_max_tokens
        # A client's max_tokens may exceed what is left of the window (Claude Code
        # asks for 32000); generation stops at the window instead of failing.
        max_tokens = max(1, min(wanted, window - len(prompt.token_ids)))
        prefix = None
        stream = prompt_stream(conversation)
        if stream is not None:
            prefix = self.prefix_watch.observe(
                stream.key,
                prompt.token_ids,
                lambda ids: self.model.tokenizer.decode(list(ids)),
                prompt.facts,
                kind=stream.kind,
                parent=stream.parent,
            )
            for level, line in prefix.diagnostics(excerpts=self.log_prompt_excerpts):
                log.log(level, "%s", line)
        call_ids = CallIds(prefix=call_id_prefix)
        call_ids.reserve(p.id for m in conversation.messages for p in m.parts if isinstance(p, ToolCall))
        constraints = self._constraints_for(conversation, prompt)
        return Generation(
            self,
            conversation,
            prompt,
            request_id or uuid.uuid4().hex,
            max_tokens,
            prefix,
            call_ids,
            constraints,
        )

    # ------------------------------------------------------------------ constraints

    def _guided(self, conversation: Conversation) -> bool:
        """The engine enforces the calls' syntax itself (no prefill needed)."""
        return (
            self.engine.info().guided_decoding
            and self._syntax is not None
            and self._syntax.arguments_end is not None
            and bool(conversation.tools)
        )

    def _reasons_first(self, thinking_enabled: bool) -> bool:
        """A forced call comes after a reasoning block: the family reasons (with
        markers the pipeline can close a block with; harmony's channels have none)
        and thinking is on. A budget of 0 still closes the block at once."""
        return thinking_enabled and self._thinking_markers is not None and self._syntax is not None

    def _prefill_for(self, conversation: Conversation) -> Prefill | None:
        """What ends the prompt for a forced tool choice: the reasoning block's start
        marker (where the template did not open one) when the model reasons first;
        else, on an engine without guided decoding, the call opener."""
        choice = conversation.tool_choice
        syntax = self._syntax
        if choice.mode not in ("required", "named") or syntax is None:
            return None
        opener = (
            ""
            if self._guided(conversation)
            else syntax.opener(self._forced_name(conversation), _calls_before(conversation))
        )
        markers = self._thinking_markers

        def prefill(opened_reasoning: bool, thinking_enabled: bool) -> str:
            # With thinking off no block is open (the renderer and the forced
            # formats only open one when it is on): the call comes first.
            if markers is None or not self._reasons_first(thinking_enabled):
                return opener
            inside = opened_reasoning or self._reasoning_forced
            return "" if inside else markers[0]

        return prefill

    @staticmethod
    def _forced_name(conversation: Conversation) -> str | None:
        choice = conversation.tool_choice
        return choice.name if choice.mode == "named" else None

    def _reason_first(self, conversation: Conversation, prompt: RenderedPrompt) -> ReasonFirst | None:
        if conversation.tool_choice.mode not in ("required", "named") or not self._reasons_first(
            prompt.thinking_enabled
        ):
            return None
        assert self._syntax is not None and self._thinking_markers is not None  # _reasons_first checked them
        guided = self._guided(conversation)
        return ReasonFirst(
            end=self._thinking_markers[1],
            separator=self._after_reasoning,
            opener="" if guided else self._syntax.opener(self._forced_name(conversation), _calls_before(conversation)),
            budget=conversation.thinking.budget_tokens,
        )

    def _constraints_for(self, conversation: Conversation, prompt: RenderedPrompt) -> Constraints:
        choice = conversation.tool_choice
        guide = None
        if self._guided(conversation) and (
            choice.mode in ("required", "named") or not conversation.parallel_tool_calls
        ):
            guide = _call_guide(self._syntax, conversation, _calls_before(conversation))  # type: ignore[arg-type]  # _guided checked it
        reason_first = self._reason_first(conversation, prompt)
        return Constraints(
            tool_choice=choice.mode,
            tool_name=choice.name if choice.mode == "named" else None,
            parallel_tool_calls=conversation.parallel_tool_calls,
            prefill=prompt.prefill,
            guide=guide,
            # With reasoning first, the budget is the first request's length.
            reasoning_budget=None if reason_first else self._reasoning_budget(conversation, prompt),
            output=self._output_guide(conversation, prompt),
            reason_first=reason_first,
        )

    def _output_guide(self, conversation: Conversation, prompt: RenderedPrompt) -> OutputGuide | None:
        """The JSON answer to guide; None for a turn that must call a tool, and for
        families whose answer sits inside channel syntax a JSON grammar would rule
        out (harmony, Kimi K3...): those answers are only validated."""
        form = conversation.output_format
        if form is None or prompt.prefill or conversation.tool_choice.mode in ("required", "named"):
            return None
        profile = self.model.profile
        reasoning = (profile.reasoning_parser or "").lower()
        if reasoning and (reasoning in HARMONY_REASONING_NAMES or reasoning_format(reasoning).syntax):
            return None
        encode = self.model.tokenizer.encode
        fields: dict[str, Any] = {}
        if conversation.tools and conversation.tool_choice.mode != "none" and self._syntax is not None:
            fields.update(call_trigger=self._syntax.trigger, call_trigger_ids=tuple(encode(self._syntax.trigger)))
        markers = profile.reasoning_markers
        if prompt.thinking_enabled and markers and reasoning:
            fields.update(
                reasoning_start=markers[0],
                reasoning_end=markers[1],
                reasoning_start_ids=tuple(encode(markers[0])),
                reasoning_end_ids=tuple(encode(markers[1])),
                inside=prompt.opened_reasoning or self._reasoning_forced,
            )
        schema = form.json_schema if form.type == "json_schema" else None
        return OutputGuide(schema if isinstance(schema, dict) else None, **fields)

    def _reasoning_budget(self, conversation: Conversation, prompt: RenderedPrompt) -> ReasoningBudget | None:
        budget = conversation.thinking.budget_tokens
        markers = self._thinking_markers
        reasoning = (self.model.profile.reasoning_parser or "").lower()
        if budget is None or not prompt.thinking_enabled or markers is None or not reasoning:
            return None
        if prompt.prefill:
            return None  # a call prefill already closed reasoning
        encode = self.model.tokenizer.encode
        return ReasoningBudget(
            tokens=max(0, budget),
            end_token_ids=tuple(encode(markers[1] + self._after_reasoning)),
            start_token_ids=tuple(encode(markers[0])),
            inside=prompt.opened_reasoning or self._reasoning_forced,
        )

    def prefill_next_turn(self, generation: Generation, answer: Message) -> None:
        """The turn ended in tool calls: while they run, prefill the next turn's prefix
        (this conversation and its answer, rendered as the next request will render
        them, token for token) on the worker the session's next turn goes to, so that
        turn only prefills the tool results."""
        conversation = generation.conversation
        following = conversation.model_copy(update={"messages": [*conversation.messages, answer]})

        async def prefill() -> None:
            try:
                prompt = await self.offload.run(self.render, following, add_generation_prompt=False)
                if len(prompt.token_ids) >= self.engine.info().max_model_len:
                    return
                request = EngineRequest(
                    request_id=f"{generation.request_id}-prefill",
                    prompt_token_ids=prompt.token_ids,
                    max_tokens=1,
                    stop_token_ids=self.stop_ids,
                    conversation=conversation,
                )
                async for _ in self.engine.generate(request):
                    pass
            except (EngineError, TemplateError) as error:
                log.info("speculative prefill failed: %s", error)

        task = asyncio.get_running_loop().create_task(prefill())
        self._prefills.add(task)
        task.add_done_callback(self._prefills.discard)


# ---------------------------------------------------------------------- one turn


class _Turn:
    """One generation's stream, in named steps: open the engine, read its chunks
    (with the inactivity timeout), detokenize, cut at stop sequences, parse, apply
    the tool-choice policy, then account usage and the finish reason."""

    def __init__(self, generation: Generation):
        self.generation = generation
        pipeline = generation.pipeline
        self.pipeline = pipeline
        self.constraints = generation.constraints
        self.prompt_tokens = len(generation.prompt.token_ids)
        self.tokenizer = pipeline.model.tokenizer
        self.splitter = _splitter(pipeline, generation)
        self.detokenizer = self.tokenizer.detokenizer()
        self.stops = _StopScanner(generation.conversation.sampling.stop)
        self.end_marks = _StopScanner(pipeline.model.stop_texts())
        self.controls = pipeline.control_ids
        self.control_filter: ControlTokenFilter | None = None  # for a text-only engine
        # Accounting
        self.completion_tokens = 0
        self.text_only_output: list[str] = []
        self.reasoning: list[str] = []
        self.calls = 0
        self.turn = _TurnParts()
        self.cached = 0
        self.written = 0
        self.engine_finish: EngineFinish = "stop"
        self.stop_sequence: str | None = None
        # Policy: the turn was ended after the first call, or broke the tool choice.
        self.ended = False
        self.violation: ToolChoiceViolation | None = None
        self.review = generation.review

    def events(self) -> AsyncGenerator[Event]:
        # Each layer of generators costs every event a resumption: the plain turn has none.
        if self.review is None and not self.pipeline.check_events:
            return self._events()
        return self._watched_events()

    async def _watched_events(self) -> AsyncGenerator[Event]:
        """The turn's events checked against the event grammar (`check_events`), and
        its tool-call review cancelled when the turn ends early."""
        grammar = EventGrammar() if self.pipeline.check_events else None
        try:
            async for event in self._events():
                if grammar is not None:
                    try:
                        grammar.feed(event)
                    except EventGrammarError as error:
                        # A bug of ours: the stream ends with an error the client sees.
                        log.error("event grammar broken, model %s: %s", self.pipeline.model.name, error)
                        yield StreamError(f"internal error: {error}", error)
                        return
                yield event
        finally:
            if self.review is not None:  # the turn ended early: its classifications are moot
                self.review.cancel()

    async def _events(self) -> AsyncGenerator[Event]:
        request, engine = self._engine_request(), self.pipeline.engine
        if self.constraints.reason_first is not None:
            stream = reason_then_call(engine, request, self.tokenizer)
        else:
            stream = engine.generate(request)
        chunks = self._chunks(stream)
        announced = False
        try:
            async for chunk in chunks:
                if not announced:
                    announced = True
                    self.cached = chunk.cached_tokens or 0
                    self.written = chunk.cache_written_tokens or 0
                    yield PromptProcessed(self.prompt_tokens, self.cached, self.written)
                    for event in self._police(self.splitter.feed(self.constraints.prefill)):
                        yield event
                elif chunk.cached_tokens is not None:
                    # Remote engines (vLLM, SGLang) count the cache hit only at the end.
                    self.cached = chunk.cached_tokens
                text = self._text_of(chunk)
                final = chunk.finish_reason is not None
                if chunk.text is not None:
                    # A text-only engine's end of turn is the stop token's text: a marker.
                    text, stop_token = self.end_marks.feed(text, final=final)
                    if stop_token is not None:
                        self.engine_finish, final = "stop", True
                    if self.control_filter is None:
                        self.control_filter = ControlTokenFilter(self.pipeline.control_text_matcher())
                    text = self.control_filter.feed(text, final=final)
                released, self.stop_sequence = self.stops.feed(text, final=final)
                for event in self._police(self.splitter.feed(released) if released else []):
                    yield event
                if self.ended or self.stop_sequence is not None or final:
                    break
            else:
                raise EngineError("the engine ended the stream without a finish reason")
        except EngineError as error:
            if not announced:
                yield PromptProcessed(self.prompt_tokens, 0)
            log.warning("engine failed: %s", error)  # its URL and upstream text stay here
            shown = isinstance(error, (EngineTimeout, PromptTooLong)) or str(error) == SHUTTING_DOWN
            message = str(error) if shown else ENGINE_FAILED_MESSAGE
            yield StreamError(message, error)
            return
        finally:
            await chunks.aclose()
            await stream.aclose()
        if self.violation is None:
            for event in self._police(self.splitter.finish(cut=self.engine_finish == "length")):
                yield event
        if self.splitter.released_holds:
            log.warning(
                "model %s: the output parser held text back past its bound %d time(s); released as text",
                self.pipeline.model.name,
                self.splitter.released_holds,
            )
        if self.violation is None:
            self.violation = self._unmet_choice()
        if self.violation is not None:
            yield StreamError(str(self.violation), self.violation)
            return
        broken = self._broken_format()
        if broken is not None:
            yield StreamError(str(broken), broken)
            return
        reason = self._finish_reason()
        if reason == "tool_calls" and self.generation.conversation.hints.speculative_prefill:
            self.pipeline.prefill_next_turn(self.generation, self.turn.message())
        verdicts = await self.review.verdicts() if self.review is not None else None
        yield Finish(reason, self.stop_sequence, self._usage(), verdicts)

    # ---- steps

    def _engine_request(self) -> EngineRequest:
        generation = self.generation
        sampling = generation.conversation.sampling
        return EngineRequest(
            request_id=generation.request_id,
            prompt_token_ids=generation.prompt.token_ids,
            max_tokens=generation.max_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            seed=sampling.seed,
            # The request's own penalty, else the model's declared one (SmolLM2 repeats itself without).
            frequency_penalty=(
                sampling.frequency_penalty
                if sampling.frequency_penalty is not None
                else self.pipeline.model.frequency_penalty
            ),
            presence_penalty=sampling.presence_penalty,
            stop_token_ids=self.pipeline.stop_ids,
            prompt_text=generation.prompt.text,
            conversation=generation.conversation,
            constraints=self.constraints,
            background=is_side_query(generation.conversation),
        )

    async def _chunks(self, stream: AsyncGenerator[EngineChunk, None]) -> AsyncGenerator[EngineChunk, None]:
        """The engine's chunks, heartbeats dropped; `EngineTimeout` after
        `engine_timeout` seconds of silence (the engine's stream is then closed by
        the caller, which aborts the request there)."""
        pipeline = self.pipeline
        timeout = pipeline.engine_timeout
        task = asyncio.current_task()
        silence = _SilenceWatch(task, timeout) if timeout is not None and task is not None else None
        try:
            while True:
                if pipeline.draining:
                    raise EngineError(SHUTTING_DOWN)
                pipeline.awaiting_engine(task, True)
                if silence is not None:
                    silence.waiting()
                try:
                    chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    # The watch's own cancellation, unless another came too (as asyncio.timeout decides).
                    if silence is not None and silence.fired and task is not None and task.uncancel() == 0:
                        raise EngineTimeout(silence.seconds) from None
                    if not pipeline.draining or task is None:
                        raise
                    task.uncancel()
                    raise EngineError(SHUTTING_DOWN) from None
                finally:
                    pipeline.awaiting_engine(task, False)
                    if silence is not None:
                        silence.since = None  # between waits: no silence of the engine's
                if chunk.token_ids or chunk.text is not None or chunk.finish_reason or chunk.cached_tokens is not None:
                    yield chunk
        finally:
            if silence is not None:
                silence.stop()

    def _text_of(self, chunk: EngineChunk) -> str:
        """The chunk's new text: its token ids detokenized (counted), or its text."""
        if chunk.text is not None:
            text = chunk.text
            self.text_only_output.append(text)
        else:
            ids = chunk.token_ids
            self.completion_tokens += len(ids)
            push = self.detokenizer.push
            if self.controls.isdisjoint(ids):
                text = "".join(push(t) for t in ids)
            else:
                controls = self.controls
                text = "".join(push(t) for t in ids if t not in controls)
        if chunk.finish_reason is not None:
            self.engine_finish = chunk.finish_reason
            text += self.detokenizer.flush()
        return text

    def _police(self, events: list[ParseEvent]) -> list[ParseEvent]:
        """Parse events as the request allows them: nothing after the one call
        `parallel_tool_calls: false` permits, no call to another tool than the one
        `tool_choice` names (the turn ends there with a violation)."""
        if self.ended:
            return []
        constraints = self.constraints
        out: list[ParseEvent] = []
        for event in events:
            if type(event) is ToolCallStart:
                self._check_call(event)
                if self.violation is not None:
                    self.ended = True
                    return out
            elif type(event) is ToolCallReady:
                self.calls += 1
                if self.review is not None:
                    self.review.call_ready(event)
                if not constraints.parallel_tool_calls:
                    self.turn.add(event)
                    out.append(event)
                    self.ended = True
                    return out
            elif type(event) is ReasoningDelta:
                self.reasoning.append(event.text)
            self.turn.add(event)
            out.append(event)
        return out

    def _check_call(self, start: ToolCallStart) -> None:
        constraints = self.constraints
        if constraints.tool_choice == "named" and start.name != constraints.tool_name:
            self.violation = ToolChoiceViolation(
                f"the model called {start.name!r} although tool_choice requires {constraints.tool_name!r}"
            )
        elif constraints.tool_choice == "required" and not start.declared:
            self.violation = ToolChoiceViolation(
                f"the model called {start.name!r}, which is not among the request's tools, "
                "although tool_choice requires a call to one of them"
            )

    def _unmet_choice(self) -> ToolChoiceViolation | None:
        """A turn that had to call a tool and ended on its own without one. (One cut
        at max_tokens is a `length` finish, not a violation.)"""
        if not self.constraints.requires_call or self.calls or self.engine_finish == "length":
            return None
        wanted = "a tool call" if self.constraints.tool_name is None else f"a call to {self.constraints.tool_name!r}"
        return ToolChoiceViolation(f"tool_choice requires {wanted}, but the model ended its turn without one")

    def _broken_format(self) -> OutputFormatViolation | None:
        """An answer without calls that breaks the requested output format. (One cut
        at max_tokens is a `length` finish: its JSON is unfinished, as the client
        is told.)"""
        form = self.generation.conversation.output_format
        if form is None or self.calls or self.engine_finish == "length" or self.stop_sequence is not None:
            return None
        text = "".join(p.text for p in self.turn.message().parts if isinstance(p, Text))
        problem = output_violation(form, text)
        return OutputFormatViolation(problem) if problem is not None else None

    def _usage(self) -> Usage:
        completion = self.completion_tokens
        if self.text_only_output:
            completion += len(self.tokenizer.encode("".join(self.text_only_output)))
        return Usage(
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached,
            cache_written_tokens=self.written,
            completion_tokens=completion,
            reasoning_tokens=len(self.tokenizer.encode("".join(self.reasoning))) if self.reasoning else 0,
        )

    def _finish_reason(self) -> FinishReason:
        if self.calls:
            return "tool_calls"
        if self.stop_sequence is not None:
            return "stop_sequence"
        if self.engine_finish == "length":
            return "length"
        return "stop"


class _SilenceWatch:
    """Cancels `task` once it has waited `seconds` for one engine chunk (the caller
    turns that into `EngineTimeout`). One timer, re-armed only when it comes due
    while a wait is younger than `seconds`: an `asyncio.timeout` around each chunk's
    wait made and cancelled a timer per chunk (~3 µs each on uvloop)."""

    # uvloop's timers have millisecond resolution: one may come due this much early.
    EARLY = 0.002

    def __init__(self, task: asyncio.Task[Any], seconds: float):
        self.loop = asyncio.get_running_loop()
        self.task = task
        self.seconds = seconds
        self.since: float | None = None  # when the current wait began; None between waits
        self.fired = False
        self._timer: asyncio.TimerHandle | None = None

    def waiting(self) -> None:
        """A wait for the engine's next chunk begins."""
        self.since = self.loop.time()
        self._arm()

    def _arm(self) -> None:
        if self._timer is None and self.since is not None:
            self._timer = self.loop.call_at(self.since + self.seconds, self._check)

    def _check(self) -> None:
        self._timer = None
        if self.since is None:
            return  # between waits: the next wait arms it again
        if self.loop.time() >= self.since + self.seconds - self.EARLY:
            self.fired = True
            self.task.cancel()
        else:
            self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _TurnParts:
    """The answer as the next request will carry it: its parts in the order produced,
    as every API delivers them (apis/call_hold.py: a call that never completed is
    its text, with the whitespace at its edges)."""

    def __init__(self) -> None:
        self._parts: list[Reasoning | Text | ToolCall] = []
        self._hold = CallHold()

    def add(self, event: ParseEvent) -> None:
        for one in self._hold.feed(event):
            last = self._parts[-1] if self._parts else None
            if type(one) is ReasoningDelta:
                if isinstance(last, Reasoning):
                    last.text += one.text
                else:
                    self._parts.append(Reasoning(text=one.text))
            elif type(one) is TextDelta:
                if isinstance(last, Text):
                    last.text += one.text
                elif one.text:
                    self._parts.append(Text(text=one.text))
            elif type(one) is ToolCallReady:
                self._parts.append(ToolCall(id=one.id, name=one.name, arguments=one.arguments))

    def message(self) -> Message:
        return Message(role="assistant", parts=list(self._parts))


def _splitter(pipeline: Pipeline, generation: Generation) -> OutputSplitter:
    profile, prompt = pipeline.model.profile, generation.prompt
    # tool_choice none: no tool parser, so whatever call syntax the model writes stays text.
    suppress = generation.constraints.tool_choice == "none"
    tool_parser = profile.tool_parser
    if suppress and (tool_parser or "").lower() in HARMONY_TOOL_NAMES:
        tool_parser = None  # harmony: the splitter then parses channels without calls
    return OutputSplitter(
        profile.reasoning_parser,
        None if suppress else tool_parser,
        tools=generation.conversation.model_tools(),
        thinking_enabled=prompt.thinking_enabled,
        prompt_opened_reasoning=prompt.opened_reasoning,
        call_ids=generation.call_ids,
        recover_fenced_calls=profile.recover_fenced_calls and not suppress,
    )


def _canonical_tool_parser(name: str | None) -> str | None:
    if not name:
        return None
    key = name.strip().lower()
    if key in HARMONY_TOOL_NAMES:
        return "harmony"
    return tool_parser_class(key).name


def _calls_before(conversation: Conversation) -> int:
    return sum(1 for m in conversation.messages for p in m.parts if isinstance(p, ToolCall))


def _call_guide(syntax: CallSyntax, conversation: Conversation, index: int) -> CallGuide:
    choice = conversation.tool_choice
    tools = [t for t in conversation.model_tools() if choice.mode != "named" or t.name == choice.name]
    end = syntax.arguments_end or ""
    return CallGuide(
        triggers=(syntax.trigger,),
        tags=tuple(CallTag(syntax.opener(t.name, index), t.parameters, end) for t in tools),
    )


class _StopScanner:
    """Client stop sequences over streamed text: releases what can no longer be the
    start of a stop sequence, and cuts at the first one found."""

    def __init__(self, stops: list[str]):
        self._stops = [s for s in stops if s]
        self._hold = max((len(s) for s in self._stops), default=1) - 1
        self._buf = ""

    def feed(self, text: str, final: bool) -> tuple[str, str | None]:
        if not self._stops:
            return text, None
        buf = self._buf + text
        found = min(((buf.find(s), s) for s in self._stops if s in buf), default=None)
        if found is not None:
            self._buf = ""
            return buf[: found[0]], found[1]
        if final:
            self._buf = ""
            return buf, None
        cut = max(0, len(buf) - self._hold)
        self._buf = buf[cut:]
        return buf[:cut], None
