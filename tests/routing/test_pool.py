"""The engine pool: simulated workers publishing KV events over loopback ZMQ, a
session's next turn landing on the worker holding its prefix; failed workers taken
out, requests retried elsewhere before their first chunk, a mid-stream failure
surfacing as an engine error; load counted from dispatch: the prefill to the first
chunk, the expected output to the end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tokenyard.conversation import AgentHints, Conversation
from tokenyard.engines.base import EngineChunk, EngineInfo, EngineRequest
from tokenyard.engines.remote import RemoteEngine
from tokenyard.faults import EngineError
from tokenyard.kv_blocks import block_hashes
from tokenyard.routing.kv_events import KvMirror
from tokenyard.routing.kv_index import KvIndex
from tokenyard.routing.kv_publisher import ZmqKvPublisher
from tokenyard.routing.kv_subscriber import KvEventSubscriber
from tokenyard.routing.pool import EnginePool, Worker
from tokenyard.routing.router import Router

from ..engines.test_simulated import make_engine
from ..server.serving import free_port
from .test_kv_subscriber import until


def simulated_pool(tmp_path, count: int) -> EnginePool:
    router = Router(KvIndex())
    workers = []
    for n in range(count):
        name = f"w{n}"
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", replay_endpoint="tcp://127.0.0.1:0")
        publisher.bind()
        events = KvEventSubscriber(
            KvMirror(name, router.index), publisher.endpoint, replay_endpoint=publisher.replay_endpoint
        )
        engine = make_engine(tmp_path, answer="fine", block_size=4, max_model_len=4096, kv_events=publisher)
        workers.append(Worker(name, engine, events=events, publisher=publisher))
    return EnginePool(workers, router)


def turn(session: str, prompt: list[int], **hints) -> EngineRequest:
    conversation = Conversation(model="m", session_key=session, hints=AgentHints(**hints))
    return EngineRequest(f"{session}-{len(prompt)}", prompt, 50, stop_token_ids=[0], conversation=conversation)


async def drain(pool: EnginePool, request: EngineRequest) -> list[EngineChunk]:
    return [chunk async for chunk in pool.generate(request)]


def test_each_sessions_next_turn_lands_on_the_worker_holding_its_prefix(tmp_path):
    async def scenario():
        pool = simulated_pool(tmp_path, 3)
        await pool.start()
        try:
            prompts = {f"s{n}": [n + 1] * 64 for n in range(6)}
            for session, prompt in prompts.items():
                await drain(pool, turn(session, prompt))
            first = {s: pool.router._sessions[s].worker for s in prompts}
            assert len(set(first.values())) == 3, "an idle pool spreads new sessions (least loaded)"
            for session, prompt in prompts.items():
                worker = pool.workers[first[session]]
                await until(
                    lambda w=worker, p=prompt: pool.router.index.overlaps(block_hashes(p, 4)).get(w.name, 0) > 0
                )
            for session, prompt in prompts.items():
                chunks = await drain(pool, turn(session, prompt + [7] * 20))
                assert pool.router._sessions[session].worker == first[session]
                assert chunks[0].cached_tokens >= 64
            assert sum(n for (_, reason), n in pool.stats.decisions.items() if reason == "kv-overlap") == 6
            assert all(w.load.requests == 0 and w.load.tokens == 0 for w in pool.workers.values())
        finally:
            await pool.close()

    asyncio.run(scenario())


class BreaksMidStream:
    """An engine that sends one chunk, then fails (a server crashing mid-answer)."""

    def info(self) -> EngineInfo:
        return EngineInfo("breaks", 4096)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def generate(self, request: EngineRequest) -> AsyncIterator[EngineChunk]:
        yield EngineChunk(token_ids=[1])
        raise EngineError("the connection broke mid-stream")


def test_a_requests_prefill_counts_as_load_until_its_first_chunk_its_output_until_the_end(tmp_path):
    # A worker whose requests were prefilled is not still loaded by that prefill: a
    # session's next turn is not pushed off its worker by work already done there.
    async def scenario():
        pool = simulated_pool(tmp_path, 1)
        await pool.start()
        try:
            load = pool.workers["w0"].load
            stream = pool.generate(turn("s", [5] * 40, osl=30))
            await anext(stream)
            assert (load.requests, load.tokens) == (1, 30)
            async for _ in stream:
                pass
            assert (load.requests, load.tokens) == (0, 0)
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_a_dead_worker_is_taken_out_and_the_request_goes_elsewhere(tmp_path):
    async def scenario():
        dead = RemoteEngine(f"http://127.0.0.1:{free_port()}", max_model_len=4096, connect_timeout=1)
        alive = make_engine(tmp_path, answer="fine", block_size=4, max_model_len=4096)
        router = Router(KvIndex(), policy="round-robin")
        pool = EnginePool([Worker("dead", dead), Worker("alive", alive)], router, retry_after=3600)
        await pool.start()
        try:
            for n in range(3):
                chunks = await drain(pool, turn(f"s{n}", [5] * 10))
                assert chunks[-1].finish_reason == "stop"
            assert not pool.workers["dead"].healthy and pool.stats.retries == 1
            assert pool.stats.decisions[("alive", "round-robin")] == 3
            # The failed attempt (no first chunk) released its prefill and output load.
            assert all(w.load.requests == w.load.tokens == 0 for w in pool.workers.values())
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_a_worker_failing_mid_stream_ends_the_stream_with_its_error_and_is_taken_out():
    async def scenario():
        pool = EnginePool([Worker("breaks", BreaksMidStream())], Router(KvIndex()), retry_after=3600)
        await pool.start()
        received = []
        with pytest.raises(EngineError, match="mid-stream"):
            async for chunk in pool.generate(turn("s", [5] * 10)):
                received.append(chunk)
        assert len(received) == 1 and not pool.workers["breaks"].healthy
        with pytest.raises(EngineError, match="every worker is down"):
            await drain(pool, turn("s", [5] * 10))
        await pool.close()

    asyncio.run(scenario())
