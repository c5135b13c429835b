"""The generation path's own contract: an engine that stalls is aborted after the
inactivity timeout with a typed error every API maps; heartbeats are not output;
the stream is a public async iterator that closes the engine's stream."""

from __future__ import annotations

import asyncio
import threading

import anthropic
import openai
import pytest

from tokenyard.conversation import Conversation, Message, Text
from tokenyard.engines.base import EngineChunk
from tokenyard.events import Finish, PromptProcessed, ReasoningDelta, StreamError, TextDelta
from tokenyard.faults import EngineTimeout
from tokenyard.server.offload import SMALL_RENDER_BYTES
from tokenyard.server.pipeline import Pipeline

from .serving import WrappedEngine, running_server

TIMEOUT = 0.3


class StallingEngine(WrappedEngine):
    """The scripted engine's first `after` chunks, then silence (a hung engine)."""

    def __init__(self, inner, after: int = 3, heartbeats: int = 0):
        super().__init__(inner)
        self.after = after
        self.heartbeats = heartbeats
        self.closed = asyncio.Event()
        self.closed_count = 0

    async def generate(self, request):
        try:
            for _ in range(self.heartbeats):
                yield EngineChunk()  # nothing to say yet: a heartbeat
            sent = 0
            async for chunk in self.inner.generate(request):
                if sent == self.after:
                    await asyncio.sleep(3600)
                yield chunk
                sent += 1
        finally:
            self.closed_count += 1


def conversation(text: str = "hello there, how are you?") -> Conversation:
    return Conversation(model="m", messages=[Message(role="user", parts=[Text(text=text)])])


def collect(pipeline: Pipeline, conv: Conversation) -> list:
    async def run():
        return [e async for e in pipeline.start(conv).events()]

    return asyncio.run(asyncio.wait_for(run(), 30))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("p")) as (url, state):
        yield url, state


def test_a_stalled_engine_ends_the_generation_with_a_typed_timeout(served):
    _, state = served
    engine = StallingEngine(state.pipeline.engine, after=8)  # the announcement, then 7 tokens
    pipeline = Pipeline(state.pipeline.model, engine, engine_timeout=TIMEOUT)
    events = collect(pipeline, conversation())
    assert isinstance(events[0], PromptProcessed)
    assert any(isinstance(e, (ReasoningDelta, TextDelta)) for e in events), "what came before the stall is delivered"
    assert isinstance(events[-1], StreamError) and isinstance(events[-1].cause, EngineTimeout)
    assert events[-1].cause.seconds == TIMEOUT and "sent nothing" in events[-1].message
    assert not any(isinstance(e, Finish) for e in events)
    assert engine.closed_count == 1, "the stalled engine stream was closed (aborted)"


def test_heartbeats_are_not_output_and_reset_the_timer(served):
    _, state = served
    engine = StallingEngine(state.pipeline.engine, after=10_000, heartbeats=5)
    pipeline = Pipeline(state.pipeline.model, engine, engine_timeout=TIMEOUT)
    events = collect(pipeline, conversation())
    assert isinstance(events[0], PromptProcessed) and events[0].cached_tokens == 0
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"


class PacedEngine(WrappedEngine):
    """The scripted engine's chunks, each `pause` seconds after the last."""

    def __init__(self, inner, pause: float):
        super().__init__(inner)
        self.pause = pause

    async def generate(self, request):
        async for chunk in self.inner.generate(request):
            await asyncio.sleep(self.pause)
            yield chunk


def test_only_one_wait_for_the_engine_counts_toward_the_timeout(served):
    # Chunks 0.6 timeouts apart (the whole answer takes many), and a reader that takes
    # longer than the timeout over each event: neither is a silence of the engine.
    _, state = served
    pipeline = Pipeline(state.pipeline.model, PacedEngine(state.pipeline.engine, TIMEOUT * 0.6), engine_timeout=TIMEOUT)
    events = collect(pipeline, conversation())
    assert isinstance(events[-1], Finish) and len(events) > 4, events[-1]

    async def slow_reader():
        pipeline = Pipeline(state.pipeline.model, state.pipeline.engine, engine_timeout=TIMEOUT)
        out = []
        async for event in pipeline.start(conversation()).events():
            out.append(event)
            if len(out) < 4:
                await asyncio.sleep(TIMEOUT * 1.5)
        return out

    events = asyncio.run(asyncio.wait_for(slow_reader(), 30))
    assert isinstance(events[-1], Finish), events[-1]


def test_a_stall_reaches_every_api_as_its_error(served):
    url, state = served
    original, timeout = state.pipeline.engine, state.pipeline.engine_timeout
    state.pipeline.engine = StallingEngine(original, after=4)  # the announcement, then 3 tokens
    state.pipeline.engine_timeout = TIMEOUT
    try:
        a = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        params = {"model": "test/model", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        with pytest.raises(anthropic.APIStatusError) as caught:
            a.messages.create(**params)
        assert caught.value.status_code >= 500 and "sent nothing" in str(caught.value)
        with pytest.raises(anthropic.APIError), a.messages.stream(**params) as s:
            list(s)
        o = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.APIStatusError) as status:
            o.chat.completions.create(model="test/model", messages=[{"role": "user", "content": "hi"}])
        assert status.value.status_code >= 500
        with pytest.raises(openai.APIError):
            list(
                o.chat.completions.create(model="test/model", messages=[{"role": "user", "content": "hi"}], stream=True)
            )
        with o.responses.stream(model="test/model", input="hi", store=False) as s:
            assert [e.type for e in s if e.type in ("response.failed", "error", "response.completed")] in (
                ["response.failed"],
                ["error"],
            )
    finally:
        state.pipeline.engine, state.pipeline.engine_timeout = original, timeout


def test_closing_the_stream_early_closes_the_engine(served):
    _, state = served
    engine = StallingEngine(state.pipeline.engine, after=10_000)
    pipeline = Pipeline(state.pipeline.model, engine)

    async def first_two():
        stream = pipeline.start(conversation()).events()
        got = [await anext(stream), await anext(stream)]
        await stream.aclose()
        return got

    got = asyncio.run(first_two())
    assert isinstance(got[0], PromptProcessed) and engine.closed_count == 1


def test_a_prompt_over_the_window_is_refused_without_keeping_it(served):
    """The prompt of a refused request (millions of ids for a 20 MB body) is freed on
    the thread that rendered it: nothing in the raised error's frames holds it, so
    freeing it never falls to the event loop."""
    from tokenyard.faults import PromptTooLong
    from tokenyard.prompting.render import RenderedPrompt

    _, state = served
    window = state.pipeline.engine.info().max_model_len
    with pytest.raises(PromptTooLong) as refused:
        state.pipeline.render_within_window(conversation("word " * window))
    frame, held = refused.value.__traceback__, []
    while frame is not None:
        held += [v for v in frame.tb_frame.f_locals.values() if isinstance(v, RenderedPrompt)]
        frame = frame.tb_next
    assert held == []
    assert state.pipeline.render_within_window(conversation()).token_ids  # one that fits is returned


def test_check_events_passes_a_good_stream_and_ends_a_broken_one_with_an_error(served, monkeypatch):
    """--check-events: every stream runs through the event grammar (events.py); a
    parser bug ends the stream with an error instead of reaching the client."""
    from tokenyard.events import EventGrammarError, ToolCallDelta
    from tokenyard.server import pipeline as pipeline_module

    _, state = served
    checked = Pipeline(state.pipeline.model, state.pipeline.engine, check_events=True)
    events = collect(checked, conversation())
    assert isinstance(events[0], PromptProcessed) and isinstance(events[-1], Finish)

    real = pipeline_module._splitter

    def broken(pipeline, generation):
        splitter = real(pipeline, generation)
        feed = splitter.feed
        splitter.feed = lambda text: [*feed(text), ToolCallDelta(7, "{")]  # arguments outside any call
        return splitter

    monkeypatch.setattr(pipeline_module, "_splitter", broken)
    events = collect(checked, conversation())
    assert isinstance(events[-1], StreamError) and isinstance(events[-1].cause, EventGrammarError)
    assert not any(isinstance(e, ToolCallDelta) for e in events), "the broken event never reaches the client"
    unchecked = Pipeline(state.pipeline.model, state.pipeline.engine)
    assert any(isinstance(e, ToolCallDelta) for e in collect(unchecked, conversation())), "off by default"


def test_a_small_body_is_rendered_on_the_loop_and_a_larger_one_off_it(served, monkeypatch):
    """A thread hand-off would cost a small body's prompt more than rendering it
    (time to first token); anything larger renders on a worker thread."""
    pipeline = served[1].pipeline
    render, threads = pipeline.render_within_window, []

    def recorded(conv):
        threads.append(threading.get_ident())
        return render(conv)

    monkeypatch.setattr(pipeline, "render_within_window", recorded)

    async def loop_thread(body_bytes: int | None) -> int:
        await pipeline.prepare(conversation(), body_bytes=body_bytes)
        return threading.get_ident()

    for size, on_loop in ((SMALL_RENDER_BYTES - 1, True), (SMALL_RENDER_BYTES, False), (None, False)):
        assert (asyncio.run(loop_thread(size)) == threads.pop()) is on_loop
