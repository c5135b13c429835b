"""THE generation path (DESIGN rule 1). Every API request arrives here as a
`Conversation` and leaves as `Event`s:

Conversation → preamble strip + replay + chat template → tokens → engine →
incremental detokenize → stop sequences → OutputSplitter → events, with usage.

`Pipeline.start` renders and validates synchronously, so a bad request fails with a
clean API error before any byte is streamed; `Generation.events()` then streams.
Closing that iterator early (the client went away) closes the engine's stream,
which aborts the request there.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from ..apis.errors import ENGINE_FAILED_MESSAGE
from ..conversation import Conversation, Message, Reasoning, Text, ToolCall
from ..engines.base import Engine, EngineError, EngineRequest, PromptTooLong
from ..events import (
    Event,
    Finish,
    PromptProcessed,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallReady,
    Usage,
)
from ..parsing.splitter import OutputSplitter
from ..parsing.tools.base import CallIds
from ..prompting.prefix_watch import PrefixReport, PrefixWatch
from ..prompting.profiles import ModelProfile
from ..prompting.render import PromptRenderer, RenderedPrompt
from ..prompting.streams import prompt_stream
from ..prompting.template import TemplateError
from ..prompting.tokenizer import Tokenizer

log = logging.getLogger("tokenyard.pipeline")

DEFAULT_MAX_TOKENS = 4096
SHUTTING_DOWN = "tokenyard is shutting down; the generation was stopped"


def is_background(conversation: Conversation) -> bool:
    """A request the user is not waiting on: an agent client (one that names its
    session) sending no tools. Its turns always carry tools, compaction requests
    included; what it sends without them is a title, a summary or a topic check
    (Claude Code sends those to its small/fast model)."""
    if conversation.request_kind == "compaction":  # a summary the next turn waits for
        return False
    return conversation.session_key is not None and not conversation.tools


@dataclass
class ServedModel:
    """One model as the server offers it: its ids, profile, tokenizer and renderer."""

    name: str
    profile: ModelProfile
    tokenizer: Tokenizer
    renderer: PromptRenderer
    aliases: tuple[str, ...] = ()
    created: int = 0

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def stop_token_ids(self) -> list[int]:
        ids = [self.tokenizer.token_to_id(t) for t in self.profile.stop]
        if self.tokenizer.eos_token_id is not None:
            ids.append(self.tokenizer.eos_token_id)
        return sorted({i for i in ids if i is not None})


@dataclass
class Generation:
    pipeline: Pipeline
    conversation: Conversation
    prompt: RenderedPrompt
    request_id: str
    max_tokens: int
    prefix: PrefixReport | None
    call_ids: CallIds = field(default_factory=CallIds)

    def events(self) -> AsyncIterator[Event]:
        return self.pipeline._stream(self)


class Pipeline:
    def __init__(
        self,
        model: ServedModel,
        engine: Engine,
        *,
        prefix_watch: PrefixWatch | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        log_prompt_excerpts: bool = False,
    ):
        self.model = model
        self.engine = engine
        self.prefix_watch = prefix_watch if prefix_watch is not None else PrefixWatch()
        self.default_max_tokens = default_max_tokens
        # Diagnostics quote prompt text only when the operator asks (--log-prompt-excerpts).
        self.log_prompt_excerpts = log_prompt_excerpts
        self._stop_ids = model.stop_token_ids()
        # Graceful shutdown: once draining, every running generation ends with a
        # StreamError; those waiting on the engine are woken by cancelling their task.
        self._draining = False
        self._awaiting_engine: set[asyncio.Task[object]] = set()
        # Speculative prefills in flight (held so they are not garbage-collected).
        self._prefills: set[asyncio.Task[None]] = set()

    def drain(self) -> None:
        """The server is stopping: end every running stream with the API's error
        event now (its engine work is aborted when its stream closes)."""
        self._draining = True
        for task in list(self._awaiting_engine):
            task.cancel(SHUTTING_DOWN)

    def render(self, conversation: Conversation, *, add_generation_prompt: bool = True) -> RenderedPrompt:
        """The exact prompt generation would use (count_tokens and tokenize use it)."""
        return self.model.renderer.render(conversation, add_generation_prompt=add_generation_prompt)

    def start(
        self, conversation: Conversation, *, request_id: str | None = None, call_id_prefix: str = "call_"
    ) -> Generation:
        prompt = self.render(conversation)
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
                self.model.tokenizer.decode,
                prompt.facts,
                kind=stream.kind,
                parent=stream.parent,
            )
            for level, line in prefix.diagnostics(excerpts=self.log_prompt_excerpts):
                log.log(level, "%s", line)
        call_ids = CallIds(prefix=call_id_prefix)
        call_ids.reserve(p.id for m in conversation.messages for p in m.parts if isinstance(p, ToolCall))
        return Generation(self, conversation, prompt, request_id or uuid.uuid4().hex, max_tokens, prefix, call_ids)

    async def _stream(self, generation: Generation) -> AsyncIterator[Event]:
        conversation, prompt = generation.conversation, generation.prompt
        profile = self.model.profile
        splitter = OutputSplitter(
            profile.reasoning_parser,
            profile.tool_parser,
            tools=conversation.model_tools(),
            thinking_enabled=prompt.thinking_enabled,
            prompt_opened_reasoning=prompt.opened_reasoning,
            call_ids=generation.call_ids,
        )
        sampling = conversation.sampling
        request = EngineRequest(
            request_id=generation.request_id,
            prompt_token_ids=prompt.token_ids,
            max_tokens=generation.max_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            seed=sampling.seed,
            stop_token_ids=self._stop_ids,
            prompt_text=prompt.text,
            conversation=conversation,
            background=is_background(conversation),
        )
        detokenizer = self.model.tokenizer.detokenizer()
        stops = _StopScanner(sampling.stop)
        completion_tokens = 0
        turn = _TurnParts()
        text_only_output: list[str] = []
        reasoning: list[str] = []
        calls = 0
        announced = False
        cached = written = 0
        engine_finish = "stop"
        stop_sequence: str | None = None
        stream = self.engine.generate(request)
        task = asyncio.current_task()
        try:
            while True:
                if self._draining:
                    raise EngineError(SHUTTING_DOWN)
                if task is not None:
                    self._awaiting_engine.add(task)
                try:
                    chunk = await anext(stream)
                except StopAsyncIteration:
                    raise EngineError("the engine ended the stream without a finish reason") from None
                except asyncio.CancelledError:
                    if not self._draining or task is None:
                        raise
                    task.uncancel()
                    raise EngineError(SHUTTING_DOWN) from None
                finally:
                    if task is not None:
                        self._awaiting_engine.discard(task)
                if not announced:
                    announced = True
                    cached = chunk.cached_tokens or 0
                    written = chunk.cache_written_tokens or 0
                    yield PromptProcessed(len(prompt.token_ids), cached, written)
                elif chunk.cached_tokens is not None:
                    # Remote engines (vLLM, SGLang) count the cache hit only at the end.
                    cached = chunk.cached_tokens
                if chunk.text is not None:
                    text = chunk.text
                    text_only_output.append(text)
                else:
                    completion_tokens += len(chunk.token_ids)
                    text = "".join(detokenizer.push(t) for t in chunk.token_ids)
                if chunk.finish_reason is not None:
                    engine_finish = chunk.finish_reason
                    text += detokenizer.flush()
                released, stop_sequence = stops.feed(text, final=chunk.finish_reason is not None)
                for event in splitter.feed(released) if released else ():
                    if type(event) is ReasoningDelta:
                        reasoning.append(event.text)
                    elif type(event) is ToolCallReady:
                        calls += 1
                    turn.add(event)
                    yield event
                if stop_sequence is not None or chunk.finish_reason is not None:
                    break
        except EngineError as error:
            if not announced:
                yield PromptProcessed(len(prompt.token_ids), 0)
            log.warning("engine failed: %s", error)  # its URL and upstream text stay here
            yield StreamError(ENGINE_FAILED_MESSAGE, "api_error")
            return
        finally:
            await stream.aclose()
        for event in splitter.finish():
            if type(event) is ReasoningDelta:
                reasoning.append(event.text)
            elif type(event) is ToolCallReady:
                calls += 1
            turn.add(event)
            yield event
        if text_only_output:
            completion_tokens += len(self.model.tokenizer.encode("".join(text_only_output)))
        usage = Usage(
            prompt_tokens=len(prompt.token_ids),
            cached_tokens=cached,
            cache_written_tokens=written,
            completion_tokens=completion_tokens,
            reasoning_tokens=len(self.model.tokenizer.encode("".join(reasoning))) if reasoning else 0,
        )
        if calls:
            reason = "tool_calls"
            if conversation.hints.speculative_prefill:
                self._prefill_next_turn(generation, turn.message())
        elif stop_sequence is not None:
            reason = "stop_sequence"
        elif engine_finish == "length":
            reason = "length"
        else:
            reason = "stop"
        yield Finish(reason, stop_sequence, usage)  # type: ignore[arg-type]

    def _prefill_next_turn(self, generation: Generation, answer: Message) -> None:
        """The turn ended in tool calls: while they run, prefill the next turn's prefix
        (this conversation and its answer, rendered as the next request will render
        them, token for token) on the worker the session's next turn goes to, so that
        turn only prefills the tool results."""
        conversation = generation.conversation
        following = conversation.model_copy(update={"messages": [*conversation.messages, answer]})

        async def prefill() -> None:
            try:
                prompt = await asyncio.to_thread(self.render, following, add_generation_prompt=False)
                if len(prompt.token_ids) >= self.engine.info().max_model_len:
                    return
                request = EngineRequest(
                    request_id=f"{generation.request_id}-prefill",
                    prompt_token_ids=prompt.token_ids,
                    max_tokens=1,
                    stop_token_ids=self._stop_ids,
                    conversation=conversation,
                )
                async for _ in self.engine.generate(request):
                    pass
            except (EngineError, TemplateError) as error:
                log.info("speculative prefill failed: %s", error)

        task = asyncio.get_running_loop().create_task(prefill())
        self._prefills.add(task)
        task.add_done_callback(self._prefills.discard)


class _TurnParts:
    """The answer as the next request will carry it: its parts in the order produced."""

    def __init__(self) -> None:
        self._parts: list[Reasoning | Text | ToolCall] = []

    def add(self, event: Event) -> None:
        last = self._parts[-1] if self._parts else None
        if type(event) is ReasoningDelta:
            if isinstance(last, Reasoning):
                last.text += event.text
            else:
                self._parts.append(Reasoning(text=event.text))
        elif type(event) is TextDelta:
            if isinstance(last, Text):
                last.text += event.text
            else:
                self._parts.append(Text(text=event.text))
        elif type(event) is ToolCallReady:
            self._parts.append(ToolCall(id=event.id, name=event.name, arguments=event.arguments))

    def message(self) -> Message:
        return Message(role="assistant", parts=list(self._parts))


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
