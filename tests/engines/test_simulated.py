"""The simulated engine: block-pool bookkeeping on crafted traces, the cost model and
its calibration to the seed's B200 figures, continuous batching, and the prefix cache
seen through the real pipeline and server. Every time asserted is simulated (the
engine's virtual clock, `time_scale=0`), never wall-clock."""

from __future__ import annotations

import asyncio
import json
import uuid

import anthropic
import pytest

from tokenyard.conversation import Conversation, Message, Text
from tokenyard.engines.base import EngineChunk, EngineRequest
from tokenyard.engines.scripted import ScriptedEngine
from tokenyard.engines.simulated import BlockPool, CostModel, SimulatedEngine
from tokenyard.events import Finish, PromptProcessed
from tokenyard.faults import PromptTooLong
from tokenyard.kv_blocks import block_hashes, extend_block_hashes
from tokenyard.routing.kv_index import KvIndex
from tokenyard.server.loading import load
from tokenyard.server.pipeline import Pipeline
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir
from ..server import serving

STOP = 0


class CharTokenizer:
    """Test double: one token per character, so answer lengths are exact."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]


class IndexSink:
    """Test double: the engine's stores and evictions entered straight into an index
    under worker "w0" (a router follows them as KV events; tests/routing)."""

    def __init__(self) -> None:
        self.index = KvIndex()

    def stored(self, hashes, *, parent, token_ids):
        self.index.stored("w0", hashes)

    def removed(self, hashes):
        self.index.removed("w0", hashes)


def make_engine(tmp_path, answer: str = "ok", **options) -> SimulatedEngine:
    script = tmp_path / f"script-{uuid.uuid4().hex}.json"
    script.write_text(json.dumps([[{"raw": answer}]]))
    tokenizer = CharTokenizer()
    responder = ScriptedEngine(tokenizer, tool_format=None, reasoning_format=None, script=script)
    return SimulatedEngine(tokenizer, responder, time_scale=0, **options)


def request(request_id: str, prompt, max_tokens: int = 1000) -> EngineRequest:
    return EngineRequest(request_id, list(prompt), max_tokens, stop_token_ids=[STOP])


async def collect(engine: SimulatedEngine, req: EngineRequest) -> list[EngineChunk]:
    return [chunk async for chunk in engine.generate(req)]


def run_in_turn(engine: SimulatedEngine, *requests: EngineRequest) -> list[list[EngineChunk]]:
    """Each request to completion, one after the other."""

    async def scenario():
        return [await collect(engine, r) for r in requests]

    return asyncio.run(scenario())


def output(chunks: list[EngineChunk]) -> str:
    return "".join(chr(t) for c in chunks for t in c.token_ids)


def assert_pool_idle(engine: SimulatedEngine) -> None:
    assert all(block.ref_count == 0 for block in engine.pool.blocks)
    assert engine.pool.num_free == engine.pool.num_blocks


# ---- block hashes and the per-worker index ------------------------------------------------


def test_block_hashes_chain_over_the_whole_prefix():
    tokens = list(range(100, 140))  # ten blocks of four
    hashes = block_hashes(tokens, 4)
    assert len(hashes) == 10
    assert block_hashes(tokens + [1, 2, 3], 4) == hashes, "a partial block is not hashed"
    first_changed = block_hashes([999] + tokens[1:], 4)
    assert all(a != b for a, b in zip(hashes, first_changed, strict=False)), (
        "a change in block 0 changes every later hash"
    )
    third_changed = block_hashes(tokens[:9] + [999] + tokens[10:], 4)
    assert third_changed[:2] == hashes[:2] and all(a != b for a, b in zip(hashes[2:], third_changed[2:], strict=False))
    repeated = block_hashes([1, 2, 3, 4] * 2, 4)
    assert repeated[0] != repeated[1], "equal tokens at another position are another prefix"
    assert extend_block_hashes(block_hashes(tokens[:13], 4), tokens, 4) == hashes


def test_kv_index_reports_each_workers_leading_overlap():
    hashes = block_hashes(list(range(40)), 4)
    index = KvIndex()
    index.stored("a", hashes[:6])
    index.stored("b", hashes[:2] + hashes[3:])  # b lost block 2: what follows is useless
    index.stored("c", hashes[5:])
    assert index.overlaps(hashes) == {"a": 6, "b": 2}
    index.removed("a", hashes[4:6])
    assert index.overlaps(hashes) == {"a": 4, "b": 2}
    assert index.overlaps(block_hashes([7] + list(range(1, 40)), 4)) == {}


# ---- the block pool ---------------------------------------------------------------------------


def test_pool_evicts_the_least_recently_used_free_block_never_one_in_use():
    evicted: list[int] = []
    pool = BlockPool(3, on_evict=evicted.append)
    a, b, c = (pool.take((), 1) for _ in range(3))
    for blocks, block_hash in ((a, 1), (b, 2), (c, 3)):
        pool.register(blocks[0], block_hash)
    for blocks in (a, b, c):
        pool.release(blocks)
    pool.release(pool.take(pool.cached_prefix([1]), 0))  # block 1 used again: now the most recent
    first = pool.take((), 1)
    assert evicted == [2] and pool.is_cached(1) and pool.is_cached(3)

    in_use = pool.take(pool.cached_prefix([1]), 0)
    assert in_use[0].ref_count == 1
    second = pool.take((), 1)
    assert evicted == [2, 3], "the only free block is evicted; block 1 is in use"
    assert not pool.can_take((), 1), "no free block: blocks in use are never evicted"
    assert pool.is_cached(1)
    for blocks in (first, second, in_use):
        pool.release(blocks)
    assert all(block.ref_count == 0 for block in pool.blocks) and pool.num_free == 3


def test_pool_frees_a_sequence_tail_first_and_hands_out_empty_blocks_first():
    evicted: list[int] = []
    pool = BlockPool(5, on_evict=evicted.append)
    sequence = pool.take((), 4)
    for block, block_hash in zip(sequence[:3], (10, 11, 12), strict=False):
        pool.register(block, block_hash)  # the fourth block was never full
    pool.release(sequence)
    pool.take((), 2)  # the never-used block and the unfilled one: nothing evicted
    assert evicted == []
    pool.take((), 2)
    assert evicted == [12, 11], "the tail goes before the prefix other requests share"
    assert pool.is_cached(10)


# ---- the engine's prefix cache ------------------------------------------------------------------


def test_two_requests_share_three_blocks_then_diverge(tmp_path):
    engine = make_engine(tmp_path, block_size=4, num_blocks=64, max_model_len=256)
    common = list(range(1000, 1012))
    first, second = run_in_turn(
        engine, request("a", common + list(range(2000, 2008))), request("b", common + list(range(3000, 3008)))
    )
    assert first[0].cached_tokens == 0 and second[0].cached_tokens == 12
    assert engine.timings["b"].cached_tokens == 12
    # Each 20-token prompt looks up the 4 full blocks before its last token.
    assert (engine.stats.queried_blocks, engine.stats.hit_blocks, engine.stats.missed_blocks) == (8, 3, 5)
    assert output(first) == output(second) == "ok"
    assert_pool_idle(engine)


def test_a_change_in_block_zero_misses_every_later_block(tmp_path):
    engine = make_engine(tmp_path, block_size=4, num_blocks=64, max_model_len=256)
    prompt = list(range(1000, 1020))
    _, changed, same = run_in_turn(engine, request("a", prompt), request("b", [7] + prompt[1:]), request("c", prompt))
    assert changed[0].cached_tokens == 0
    assert same[0].cached_tokens == 16, "all but the block holding the last prompt token"
    assert engine.stats.hit_blocks == 4


def test_the_answer_is_cached_for_the_next_turn(tmp_path):
    engine = make_engine(tmp_path, answer="abcdefgh", block_size=4, num_blocks=64, max_model_len=256)
    prompt = list(range(1000, 1008))
    (first,) = run_in_turn(engine, request("a", prompt))
    answer = [t for c in first for t in c.token_ids]
    (second,) = run_in_turn(engine, request("b", prompt + answer + [5, 6, 7, 8, 9]))
    # The answer's KV was computed while decoding (all but the last token's, whose
    # sample was the stop token), so its full blocks hit.
    assert second[0].cached_tokens == 16


def test_a_small_pool_evicts_the_least_recently_used_free_blocks_never_those_in_use(tmp_path):
    sink = IndexSink()
    index = sink.index
    engine = make_engine(tmp_path, answer="ok", block_size=4, num_blocks=12, max_model_len=48, kv_events=sink)
    a, b, c = (list(range(start, start + 16)) for start in (1000, 2000, 3000))
    run_in_turn(engine, request("a", a), request("b", b))
    assert index.overlaps(block_hashes(a, 4)) == {"w0": 4} and index.overlaps(block_hashes(b, 4)) == {"w0": 4}
    assert engine.stats.evicted_blocks == 0
    run_in_turn(engine, request("c", c))
    # c's 5 blocks: the 4 never filled come first, then a's tail block, the least recently used cached one.
    assert engine.stats.evicted_blocks == 1
    assert [engine.pool.is_cached(h) for h in block_hashes(a, 4)] == [True, True, True, False]
    assert all(engine.pool.is_cached(h) for h in block_hashes(b, 4))
    assert index.overlaps(block_hashes(a, 4)) == {"w0": 3}

    # A long answer holds its blocks while other requests churn through the rest.
    long_prompt = list(range(5000, 5016))
    still_cached_at_finish: list[bool] = []

    def on_finish(timing):
        if timing.request_id == "long":
            still_cached_at_finish.extend(engine.pool.is_cached(h) for h in block_hashes(long_prompt, 4))

    engine = make_engine(tmp_path, answer="x" * 20, block_size=4, num_blocks=12, max_model_len=48, on_finish=on_finish)

    async def scenario():
        long_stream = engine.generate(request("long", long_prompt))
        first = await anext(long_stream)
        others = [
            collect(engine, request(f"other-{i}", range(6000 + 100 * i, 6016 + 100 * i), max_tokens=2))
            for i in range(3)
        ]
        rest = [chunk async for chunk in long_stream]
        return [first, *rest], await asyncio.gather(*others)

    long_chunks, _ = asyncio.run(scenario())
    assert output(long_chunks) == "x" * 20 and long_chunks[-1].finish_reason == "stop"
    assert still_cached_at_finish == [True] * 4, "a block in use is never evicted"
    assert engine.stats.evicted_blocks > 0
    assert engine.timings["long"].preemptions == 0, "the earliest admitted request is never the one preempted"
    assert_pool_idle(engine)


def test_refcounts_return_to_zero_after_completion_and_after_abort(tmp_path):
    engine = make_engine(tmp_path, answer="y" * 200, block_size=4, num_blocks=256, max_model_len=1024)
    prompt = list(range(1000, 1030))
    (chunks,) = run_in_turn(engine, request("done", prompt))
    assert output(chunks) == "y" * 200
    assert_pool_idle(engine)

    async def abort_after_first_token():
        stream = engine.generate(request("aborted", prompt + [1]))
        first = await anext(stream)
        referenced = sum(block.ref_count for block in engine.pool.blocks)
        await stream.aclose()  # what the pipeline does when the client goes away
        return first, referenced

    first, referenced = asyncio.run(abort_after_first_token())
    assert first.cached_tokens == 28 and referenced > 0
    timing = engine.timings["aborted"]
    assert timing.finish_reason == "abort" and 0 < timing.output_tokens < 200
    assert_pool_idle(engine)


def test_a_request_waits_for_blocks_and_can_be_aborted_while_waiting(tmp_path):
    engine = make_engine(
        tmp_path,
        answer="abc",
        block_size=4,
        num_blocks=6,
        max_model_len=24,
        cost=CostModel(frontend_ms_per_prompt_token=0),
    )

    async def scenario():
        running = asyncio.ensure_future(collect(engine, request("running", range(1000, 1020))))
        waiting = asyncio.ensure_future(collect(engine, request("waiting", range(2000, 2016))))
        abandoned = engine.generate(request("abandoned", range(3000, 3016)))
        abandoned_first = asyncio.ensure_future(anext(abandoned))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert engine.timings["abandoned"].cached_tokens is None, "still waiting: never admitted"
        abandoned_first.cancel()
        await asyncio.gather(abandoned_first, return_exceptions=True)
        return await running, await waiting

    running, waiting = asyncio.run(scenario())
    assert output(running) == output(waiting) == "abc"
    timings = engine.timings
    assert timings["waiting"].first_token_ms > timings["running"].finish_ms, (
        "it waited for the first to free its blocks"
    )
    assert timings["abandoned"].finish_reason == "abort" and timings["abandoned"].first_token_ms is None
    assert engine.stats.preemptions == 0
    assert_pool_idle(engine)


def test_a_running_request_short_of_blocks_preempts_the_latest_admitted(tmp_path):
    engine = make_engine(
        tmp_path,
        answer="0123456789",
        block_size=4,
        num_blocks=6,
        max_model_len=24,
        cost=CostModel(frontend_ms_per_prompt_token=0),
    )

    async def scenario():
        return await asyncio.gather(
            collect(engine, request("early", range(1000, 1008))), collect(engine, request("late", range(2000, 2008)))
        )

    early, late = asyncio.run(scenario())
    assert output(early) == output(late) == "0123456789"
    assert engine.timings["early"].preemptions == 0 and engine.timings["late"].preemptions >= 1
    assert engine.stats.preemptions == engine.timings["late"].preemptions
    assert_pool_idle(engine)


# ---- output -----------------------------------------------------------------------------------


def test_output_honours_max_tokens_and_stop_tokens(tmp_path):
    engine = make_engine(tmp_path, answer="hello world", block_size=4, num_blocks=64, max_model_len=256)
    (chunks,) = run_in_turn(engine, request("a", range(1000, 1010), max_tokens=5))
    assert output(chunks) == "hello" and chunks[-1].finish_reason == "length"

    stop_at_space = EngineRequest("b", list(range(1000, 1010)), 100, stop_token_ids=[ord(" ")])
    (chunks,) = run_in_turn(engine, stop_at_space)
    assert output(chunks) == "hello" and chunks[-1].finish_reason == "stop", "the stop token is not emitted"
    assert [c.cached_tokens is not None for c in chunks] == [True] + [False] * (len(chunks) - 1)


def test_prompts_are_checked_against_the_window_and_the_pool_against_the_window(tmp_path):
    engine = make_engine(tmp_path, block_size=4, num_blocks=8, max_model_len=32)
    with pytest.raises(PromptTooLong):
        run_in_turn(engine, request("a", range(32)))
    with pytest.raises(ValueError, match="can not hold"):
        make_engine(tmp_path, block_size=4, num_blocks=7, max_model_len=32)


# ---- the cost model ---------------------------------------------------------------------------


def test_cost_model_is_monotonic():
    cost = CostModel()
    by_uncached = [cost.step_cost_ms([(0, n)], []) for n in (1, 16, 512, 4096, 8192)]
    assert by_uncached == sorted(set(by_uncached)), "more uncached tokens, longer prefill"
    by_context = [cost.prefill_ms(start, 512) for start in (0, 1000, 10_000, 50_000)]
    assert by_context == sorted(set(by_context)), "the same chunk later in the context costs more"
    by_batch = [cost.step_cost_ms([], [4000] * batch) for batch in (1, 2, 8, 64)]
    assert by_batch == sorted(set(by_batch)), "a bigger batch makes a slower decode step"
    by_length = [cost.step_cost_ms([], [length]) for length in (100, 10_000, 100_000)]
    assert by_length == sorted(set(by_length)), "a longer context makes a slower decode step"


SEED_PROMPT = 52_000
NEW_TURN = 300


def seed_ttft(cached_history: list[int] | None, prompt: list[int]) -> float:
    """Simulated TTFT of `prompt` on a default engine that last served `cached_history`."""
    tokenizer = CharTokenizer()
    # The default cost model; a pool smaller than the default (still never full here) builds faster.
    engine = SimulatedEngine(
        tokenizer,
        ScriptedEngine(tokenizer, tool_format=None, reasoning_format=None),
        num_blocks=8192,
        max_model_len=131_072,
        time_scale=0,
    )
    requests = ([request("history", cached_history, max_tokens=1)] if cached_history else []) + [
        request("turn", prompt, 1)
    ]
    run_in_turn(engine, *requests)
    return engine.timings["turn"].ttft_ms


def test_default_constants_reproduce_the_seed_b200_figures():
    history = list(range(100_000, 100_000 + SEED_PROMPT - NEW_TURN))
    turn = list(range(300_000, 300_000 + NEW_TURN))
    cold = seed_ttft(None, history + turn)
    cached = seed_ttft(history, history + turn)
    assert cold == pytest.approx(912, rel=0.01)
    assert cached == pytest.approx(168, rel=0.01)

    # Mutated prior thinking: everything from the first changed token on is
    # recomputed. 322 ms is a recomputed tail of ~7.6K tokens (the ~500-token
    # thinking block and the turns after it), see the engine's module docstring.
    tail = 7_600
    thinking = list(range(400_000, 400_500))
    head = history[: SEED_PROMPT - tail]
    later = history[SEED_PROMPT - tail + len(thinking) :]
    previous = head + thinking + later
    unchanged = seed_ttft(previous, previous + turn)
    mutated = seed_ttft(previous, head + [t + 1 for t in thinking] + later + turn)
    assert unchanged == pytest.approx(167, rel=0.01)
    assert mutated == pytest.approx(322, rel=0.01)


# ---- continuous batching ----------------------------------------------------------------------


def test_concurrent_requests_share_steps_and_the_second_waits_for_the_chunk_in_flight(tmp_path):
    cost = CostModel(frontend_ms_per_prompt_token=0)
    engine = make_engine(
        tmp_path, answer="z" * 30, block_size=16, num_blocks=64, max_model_len=1024, max_batched_tokens=64, cost=cost
    )
    long_prompt, short_prompt = list(range(1000, 1100)), list(range(2000, 2020))

    async def scenario():
        return await asyncio.gather(
            collect(engine, request("long", long_prompt)), collect(engine, request("short", short_prompt))
        )

    long_chunks, short_chunks = asyncio.run(scenario())
    assert output(long_chunks) == output(short_chunks) == "z" * 30
    long_t, short_t = engine.timings["long"], engine.timings["short"]
    # Step 1 is the long prompt's first 64-token chunk (the whole budget); step 2
    # carries its remaining 36 tokens and the short prompt's 20.
    step1 = cost.step_cost_ms([(0, 64)], [])
    step2 = cost.step_cost_ms([(64, 36), (0, 20)], [])
    assert short_t.ttft_ms == pytest.approx(step1 + step2)
    assert short_t.ttft_ms > cost.step_cost_ms([(0, 20)], []), "slower than the same prompt alone"
    assert long_t.first_token_ms == short_t.first_token_ms
    # 30 more samples (29 letters and the stop token), each step decoding both.
    decoding = short_t.finish_ms - short_t.first_token_ms
    alone = sum(cost.step_cost_ms([], [20 + i]) for i in range(1, 31))
    assert alone < decoding < 2 * alone, "batched: slower per step than alone, far faster than one after the other"
    assert long_t.finish_ms == short_t.finish_ms


def test_a_request_arriving_mid_decode_joins_the_running_batch(tmp_path):
    engine = make_engine(tmp_path, answer="w" * 40, block_size=16, num_blocks=64, max_model_len=1024)

    async def scenario():
        first_stream = engine.generate(request("first", range(1000, 1100)))
        head = [await anext(first_stream) for _ in range(5)]
        late = asyncio.ensure_future(collect(engine, request("late", range(2000, 2050), max_tokens=5)))
        rest = [chunk async for chunk in first_stream]
        return head + rest, await late

    first, late = asyncio.run(scenario())
    assert output(first) == "w" * 40 and output(late) == "w" * 5
    first_t, late_t = engine.timings["first"], engine.timings["late"]
    assert first_t.first_token_ms <= late_t.arrival_ms
    assert late_t.finish_ms < first_t.finish_ms, "it was served beside the first, not after it"


# ---- through the real pipeline and server -----------------------------------------------------


@pytest.fixture(scope="module")
def qwen3():
    """The qwen3 fixture as the test server loads it (loading takes seconds: once)."""
    return load(ModelSettings(model=str(model_dir("qwen3")), engine="scripted", served_model_names=("test/model",)))


def test_second_turn_reports_cached_tokens_through_the_pipeline(qwen3):
    model, scripted = qwen3
    pipeline = Pipeline(model, SimulatedEngine(model.tokenizer, scripted, time_scale=0))
    system = [Text(text="You are a coding agent. " * 40)]
    first_turn = [Message(role="user", parts=[Text(text="Say hello.")])]

    async def turn(messages):
        generation = pipeline.start(Conversation(model="m", system=system, messages=messages))
        return [event async for event in generation.events()]

    first = asyncio.run(turn(first_turn))
    second = asyncio.run(
        turn(
            first_turn
            + [
                Message(role="assistant", parts=[Text(text="Hello.")]),
                Message(role="user", parts=[Text(text="Again.")]),
            ]
        )
    )
    assert next(e for e in first if isinstance(e, PromptProcessed)).cached_tokens == 0
    processed = next(e for e in second if isinstance(e, PromptProcessed))
    finish = next(e for e in second if isinstance(e, Finish))
    assert 0 < processed.cached_tokens < processed.prompt_tokens
    assert finish.usage.cached_tokens == processed.cached_tokens


def test_second_turn_reports_cache_read_tokens_through_the_anthropic_api(qwen3, tmp_path, monkeypatch):
    model, scripted = qwen3
    # The test server, with the simulated engine in place of the scripted one it loads.
    monkeypatch.setattr(
        serving, "load", lambda settings: (model, SimulatedEngine(model.tokenizer, scripted, time_scale=0))
    )
    bash = {
        "name": "Bash",
        "description": "Run a shell command",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
    with serving.running_server("qwen3", tmp_path=tmp_path) as (url, state):
        assert isinstance(state.pipeline.engine, SimulatedEngine)
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        history = [{"role": "user", "content": "List the files."}]
        first = client.messages.create(
            model="test/model", max_tokens=512, system="You are a coding agent.", tools=[bash], messages=history
        )
        call = next(block for block in first.content if block.type == "tool_use")
        history += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "README.md"}]},
        ]
        second = client.messages.create(
            model="test/model", max_tokens=512, system="You are a coding agent.", tools=[bash], messages=history
        )
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens > 0
    assert "README.md" in second.content[-1].text
