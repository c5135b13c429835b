"""The embedded engine on real SmolLM2-135M weights, converted once per session.

The conversion lands in `<fixtures>/embedded-cache` (the same cache as the other
fixtures), so a developer's later runs skip it; CI converts once per fresh clone.

Nothing here depends on what the model says: a test that needs the generation to run
to `max_tokens` gives no stop token ids (the model then cannot end early), and one
that needs it to stop makes every token a stop token.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from tests.fixtures import fixtures_root

pytest.importorskip(
    "torch", reason="embedded engine deps missing: pip install torch==2.13.0 && pip install -e '.[embedded]'"
)
pytest.importorskip("accelerate", reason="embedded engine deps missing: pip install -e '.[embedded]'")

from tokenyard.engines import embedded
from tokenyard.engines.base import Constraints, EngineChunk, EngineRequest, ReasonFirst, ReasoningBudget
from tokenyard.engines.embedded import BACKGROUND_MAX_TOKENS, EmbeddedEngine, PrefixStore
from tokenyard.engines.reason_first import reason_then_call
from tokenyard.faults import PromptTooLong
from tokenyard.models.resolve import resolve_model_dir
from tokenyard.prompting.template import ChatTemplate
from tokenyard.prompting.tokenizer import Tokenizer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def embedded_cache() -> Path:
    return fixtures_root() / "embedded-cache"


@pytest.fixture(scope="session")
def smollm2_dir(embedded_cache: Path) -> Path:
    started = time.monotonic()
    folder = resolve_model_dir("smollm2", embedded_cache)
    print(f"\nresolve smollm2: {time.monotonic() - started:.1f}s -> {folder}")
    return folder


@pytest.fixture(scope="session")
def tokenizer(smollm2_dir: Path) -> Tokenizer:
    return Tokenizer.from_model_dir(smollm2_dir)


@pytest.fixture(scope="session")
def engine(smollm2_dir: Path):
    engine = EmbeddedEngine(smollm2_dir)
    started = time.monotonic()
    asyncio.run(engine.start())
    print(f"\nload: {time.monotonic() - started:.1f}s")
    yield engine
    asyncio.run(engine.close())


def render(tokenizer: Tokenizer, messages: list[dict]) -> list[int]:
    template = ChatTemplate(tokenizer.chat_template, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token)
    return tokenizer.encode(template.render(messages, add_generation_prompt=True))


def request(
    tokenizer: Tokenizer, prompt: list[int], max_tokens: int = 40, *, stop: bool = True, **sampling
) -> EngineRequest:
    """`stop=False`: no stop token ids, so the generation runs to `max_tokens`."""
    return EngineRequest(
        request_id="test",
        prompt_token_ids=prompt,
        max_tokens=max_tokens,
        stop_token_ids=[tokenizer.token_to_id("<|im_end|>")] if stop else [],
        **sampling,
    )


async def collect(engine: EmbeddedEngine, req: EngineRequest) -> tuple[list[int], list, float]:
    """Generated ids, all chunks, and the time to the first chunk."""
    started = time.monotonic()
    ttft = None
    chunks = []
    async for chunk in engine.generate(req):
        if chunk == EngineChunk():
            continue  # a heartbeat: the worker is busy prefilling
        ttft = ttft if ttft is not None else time.monotonic() - started
        chunks.append(chunk)
    return [t for c in chunks for t in c.token_ids], chunks, ttft


def test_the_converted_model_has_a_32k_window(smollm2_dir: Path):
    assert EmbeddedEngine(smollm2_dir).info().max_model_len >= 32768


def test_generates_one_token_a_chunk_and_never_outputs_the_stop_token(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompt = render(tokenizer, [{"role": "user", "content": "What is the capital of France?"}])
    started = time.monotonic()
    ids, chunks, ttft = asyncio.run(collect(engine, request(tokenizer, prompt, max_tokens=60)))
    decoding = time.monotonic() - started - ttft
    print(
        f"\nanswer: {tokenizer.decode(ids)!r} (TTFT {ttft:.2f}s, then {max(0, len(ids) - 1) / decoding:.1f} tokens/s)"
    )
    assert chunks[-1].finish_reason in ("stop", "length") and chunks[-1].token_ids == []
    assert len(ids) == 60 if chunks[-1].finish_reason == "length" else len(ids) < 60
    assert tokenizer.token_to_id("<|im_end|>") not in ids
    assert chunks[0].cached_tokens is not None
    assert all(len(c.token_ids) == 1 and c.finish_reason is None for c in chunks[:-1])


def test_a_long_prefill_sends_heartbeats(engine: EmbeddedEngine, tokenizer: Tokenizer, monkeypatch):
    monkeypatch.setattr(embedded, "HEARTBEAT_SECONDS", 0.01)
    prompt = tokenizer.encode("The team maintains a Python web service. " * 400)

    async def raw_chunks():
        return [c async for c in engine.generate(EngineRequest("hb", prompt, max_tokens=1))]

    chunks = asyncio.run(raw_chunks())
    assert chunks[0] == EngineChunk(), "an empty chunk while the prefill runs"
    assert [c.finish_reason for c in chunks if c != EngineChunk()][-1] in ("stop", "length")


def test_a_stop_token_ends_the_generation_without_being_output(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompt = render(tokenizer, [{"role": "user", "content": "Say hello."}])
    every_token = EngineRequest("stop", prompt, max_tokens=10, stop_token_ids=list(range(tokenizer.vocab_size)))
    ids, chunks, _ = asyncio.run(collect(engine, every_token))
    assert ids == [] and [c.finish_reason for c in chunks] == ["stop"]


def test_max_tokens_finishes_with_length(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompt = render(tokenizer, [{"role": "user", "content": "Write a long story about a dragon."}])
    ids, chunks, _ = asyncio.run(collect(engine, request(tokenizer, prompt, max_tokens=5, stop=False)))
    assert len(ids) == 5 and chunks[-1].finish_reason == "length"


def test_seeded_sampling_is_reproducible():
    torch = pytest.importorskip("torch")
    logits = torch.linspace(-2.0, 2.0, 500)
    seeded = EngineRequest("s", [1], max_tokens=1, temperature=1.0, top_p=0.9, top_k=50, seed=7)
    first, second = embedded._Sampler(seeded), embedded._Sampler(seeded)
    picks = [first.pick(logits) for _ in range(20)]
    assert picks == [second.pick(logits) for _ in range(20)]
    assert all(p >= 450 for p in picks), "top_k keeps the 50 most likely tokens"
    assert len(set(picks)) > 1, "temperature 1 samples"
    greedy = embedded._Sampler(EngineRequest("g", [1], max_tokens=1))
    assert greedy.pick(logits) == 499


def test_a_frequency_penalty_counts_the_answer_and_keeps_greedy_deterministic():
    torch = pytest.importorskip("torch")
    logits = torch.zeros(10)
    logits[3], logits[7] = 2.0, 1.0  # 3 leads 7 by one logit; 9 (the end token) by two
    logits[9] = 0.0
    plain = embedded._Sampler(EngineRequest("g", [3, 3, 3], max_tokens=1))
    assert [plain.pick(logits) for _ in range(4)] == [3, 3, 3, 3], "greedy repeats itself"
    penalised = EngineRequest("p", [3, 3, 3], max_tokens=1, frequency_penalty=0.6)
    picks = [embedded._Sampler(penalised) for _ in range(2)]
    runs = [[sampler.pick(logits) for _ in range(6)] for sampler in picks]
    assert runs[0] == runs[1], "still greedy: the same picks every time"
    # The prompt's three 3s do not count: the first pick is the plain argmax; then
    # each pick of a token pushes it down until another one leads.
    assert runs[0][0] == 3 and set(runs[0]) >= {3, 7}
    assert runs[0].count(3) < 6


def test_a_presence_penalty_counts_a_token_once():
    torch = pytest.importorskip("torch")
    logits = torch.full((10,), -10.0)
    logits[3], logits[7] = 2.0, 1.5
    # Once a token is in the answer it loses 1.0 whatever its count: 3 (now 1.0) falls
    # behind 7, and once both are present 3 leads again for good.
    presence = embedded._Sampler(EngineRequest("p", [3], max_tokens=1, presence_penalty=1.0))
    assert [presence.pick(logits) for _ in range(6)] == [3, 7, 3, 3, 3, 3]
    # A frequency penalty of the same size counts every occurrence: the two alternate.
    frequency = embedded._Sampler(EngineRequest("f", [3], max_tokens=1, frequency_penalty=1.0))
    assert [frequency.pick(logits) for _ in range(6)] == [3, 7, 3, 7, 3, 7]


def test_seeded_sampling_runs_on_the_model(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompt = render(tokenizer, [{"role": "user", "content": "Name a color."}])
    sampled = request(tokenizer, prompt, max_tokens=8, stop=False, temperature=1.0, top_p=0.9, top_k=50, seed=7)
    ids, chunks, _ = asyncio.run(collect(engine, sampled))
    assert len(ids) == 8 and chunks[-1].finish_reason == "length"


def test_a_spent_reasoning_budget_forces_the_end_marker(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompt = render(tokenizer, [{"role": "user", "content": "Think about the sea."}])
    end = tuple(tokenizer.encode("</think>\n\n"))
    # Longer than the budget: the model can not have closed the block itself in time.
    assert len(end) > 3
    budget = ReasoningBudget(tokens=3, end_token_ids=end, inside=True)
    total = 3 + len(end) + 2
    req = EngineRequest("budget", prompt, max_tokens=total, constraints=Constraints(reasoning_budget=budget))
    ids, chunks, _ = asyncio.run(collect(engine, req))
    assert len(ids) == total and chunks[-1].finish_reason == "length"
    assert ids[3 : 3 + len(end)] == list(end), "three reasoning tokens, then the end marker, then the answer"


def test_shared_prefix_is_reused_and_faster(engine: EmbeddedEngine, tokenizer: Tokenizer):
    manual = " ".join(
        f"Rule {i}: when the user asks about topic number {i}, answer briefly and politely." for i in range(100)
    )
    system = f"You are a careful assistant. Follow these rules.\n{manual}"
    first = render(tokenizer, [{"role": "system", "content": system}, {"role": "user", "content": "Say hello."}])
    second = render(tokenizer, [{"role": "system", "content": system}, {"role": "user", "content": "Say goodbye."}])
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert shared > 2000

    _, cold_chunks, cold_ttft = asyncio.run(collect(engine, request(tokenizer, first, max_tokens=4)))
    _, warm_chunks, warm_ttft = asyncio.run(collect(engine, request(tokenizer, second, max_tokens=4)))
    print(
        f"\nprefix {shared} of {len(second)} tokens: cold TTFT {cold_ttft:.2f}s "
        f"(cached {cold_chunks[0].cached_tokens}), warm TTFT {warm_ttft:.2f}s (cached {warm_chunks[0].cached_tokens})"
    )
    assert warm_chunks[0].cached_tokens == shared

    # The entry the second request copied from is intact: the first prompt again reuses all but its last token.
    _, again, _ = asyncio.run(collect(engine, request(tokenizer, first, max_tokens=1)))
    assert again[0].cached_tokens == len(first) - 1


def test_concurrent_requests_all_complete(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompts = [render(tokenizer, [{"role": "user", "content": f"Say the number {n}."}]) for n in (1, 2, 3)]

    async def together():
        return await asyncio.gather(
            *(collect(engine, request(tokenizer, p, max_tokens=3, stop=False)) for p in prompts)
        )

    for ids, chunks, _ in asyncio.run(together()):
        assert len(ids) == 3 and chunks[-1].finish_reason == "length"


def test_the_users_turn_goes_ahead_of_a_running_background_request(engine: EmbeddedEngine, tokenizer: Tokenizer):
    title = render(tokenizer, [{"role": "user", "content": "Count from one to one thousand."}])
    turn = render(tokenizer, [{"role": "user", "content": "Say hello."}])
    order: list[str] = []

    async def run(name: str, req: EngineRequest, started: asyncio.Event | None = None) -> list:
        chunks = []
        async for chunk in engine.generate(req):
            if not chunk.token_ids and chunk.finish_reason is None:
                continue  # a heartbeat of a waiting request is not progress
            order.append(name)
            chunks.append(chunk)
            if started is not None:
                started.set()
        return chunks

    async def scenario():
        running = asyncio.Event()
        background = request(tokenizer, title, max_tokens=2000, background=True)
        title_task = asyncio.create_task(run("title", background, running))
        await running.wait()
        turn_chunks = await run("turn", request(tokenizer, turn, max_tokens=20))
        return turn_chunks, await title_task

    turn_chunks, title_chunks = asyncio.run(scenario())
    first, last = order.index("turn"), len(order) - 1 - order[::-1].index("turn")
    # Once the turn was queued, the background request made no progress until it was done.
    assert "title" not in order[first : last + 1]
    assert turn_chunks[-1].finish_reason is not None
    # Background output is capped however much the request asked for.
    assert sum(len(c.token_ids) for c in title_chunks) <= BACKGROUND_MAX_TOKENS


def test_prompt_over_the_window_is_refused_before_any_work(engine: EmbeddedEngine):
    too_long = [42] * (engine.info().max_model_len + 1)

    async def first_chunk():
        return await anext(engine.generate(EngineRequest(request_id="long", prompt_token_ids=too_long, max_tokens=1)))

    with pytest.raises(PromptTooLong):
        asyncio.run(first_chunk())


def test_cancelled_stream_frees_the_engine(engine: EmbeddedEngine, tokenizer: Tokenizer):
    prompt = render(tokenizer, [{"role": "user", "content": "Count from one to one thousand."}])

    async def scenario():
        # The consumer closes the stream after two tokens.
        stream = engine.generate(request(tokenizer, prompt, max_tokens=2000, stop=False))
        assert len((await anext(stream)).token_ids) == 1
        await anext(stream)
        await stream.aclose()

        # The consumer's task is cancelled mid-stream (the client disconnected).
        got_one = asyncio.Event()

        async def consume():
            async for _ in engine.generate(request(tokenizer, prompt, max_tokens=2000, stop=False)):
                got_one.set()

        task = asyncio.create_task(consume())
        await got_one.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

        # Both workers stopped: the next request starts at once and completes.
        started = time.monotonic()
        ids, chunks, ttft = await collect(engine, request(tokenizer, prompt, max_tokens=3, stop=False))
        return ids, chunks, ttft, time.monotonic() - started

    ids, chunks, ttft, elapsed = asyncio.run(scenario())
    print(f"\nrequest after two cancellations: TTFT {ttft:.2f}s, total {elapsed:.2f}s")
    assert len(ids) == 3 and chunks[-1].finish_reason == "length"


def test_prefix_store_is_bounded_and_copies_what_it_crops():
    torch = pytest.importorskip("torch")
    from transformers import DynamicCache

    def cache_of(tokens: list[int]) -> DynamicCache:
        cache = DynamicCache()
        cache.update(torch.tensor(tokens, dtype=torch.float32).view(1, 1, -1, 1), torch.zeros(1, 1, len(tokens), 1), 0)
        return cache

    store = PrefixStore(max_tokens=10)
    store.put([1, 2, 3, 4], cache_of([1, 2, 3, 4]))
    cache, length = store.take_prefix([1, 2, 9])  # diverges: a cropped copy
    assert length == 2 and cache.layers[0].keys.flatten().tolist() == [1, 2]
    cache.update(torch.full((1, 1, 1, 1), 99.0), torch.zeros(1, 1, 1, 1), 0)
    again, length = store.take_prefix([1, 2, 3, 4, 5])  # the stored entry was not touched, and is a prefix
    assert length == 4 and again.layers[0].keys.flatten().tolist() == [1, 2, 3, 4] and len(store) == 0

    store.put([1, 2, 3, 4, 5, 6], cache_of([1, 2, 3, 4, 5, 6]))
    store.put([7, 8, 9, 10, 11], cache_of([7, 8, 9, 10, 11]))  # 11 tokens > 10: the oldest goes
    assert len(store) == 1 and store.total_tokens == 5
    store.put(list(range(20)), cache_of(list(range(20))))  # larger than the whole store: not kept
    assert store.total_tokens == 5


def test_the_forward_pass_passes_no_deprecated_transformers_argument(engine: EmbeddedEngine, tokenizer: Tokenizer):
    """transformers deprecates an argument releases before it removes it (5.24 renamed
    the forward's `past_key_values` to `cache`; 5.40 removes the old name): a warning
    here fails before the release that breaks the engine."""
    import warnings

    import torch
    from transformers import DynamicCache

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        with torch.inference_mode():
            logits = engine._forward(tokenizer.encode("Hello"), DynamicCache())
    assert logits.dim() == 1


def test_reasoning_then_a_forced_call_continues_the_same_model(engine: EmbeddedEngine, tokenizer: Tokenizer):
    # SmolLM2 stands in for a reasoning model: its reasoning request ends at the
    # budget (3 tokens), the end marker and the call opener follow as if sampled, and
    # the call request continues from them.
    prompt = render(tokenizer, [{"role": "user", "content": "Weather in Paris?"}])
    opener = '<tool_call>\n{"name": "get_weather", "arguments": '
    plan = ReasonFirst(end="</think>", separator="\n\n", opener=opener, budget=3)
    injected = tokenizer.encode("</think>\n\n" + opener)
    total = 3 + len(injected) + 4
    req = EngineRequest(
        "forced", prompt, max_tokens=total, constraints=Constraints(tool_choice="required", reason_first=plan)
    )

    async def run() -> list[EngineChunk]:
        return [c async for c in reason_then_call(engine, req, tokenizer) if c != EngineChunk()]

    chunks = asyncio.run(run())
    ids = [t for c in chunks for t in c.token_ids]
    assert len(ids) == total and chunks[-1].finish_reason == "length"
    assert ids[3 : 3 + len(injected)] == injected
    assert [c.finish_reason for c in chunks].count("length") == 1
