"""Dynamo's selection service (`python -m dynamo.select_service`, ai-dynamo-runtime)
as the pool's routing oracle: the real service, registered the pool's simulated
workers, follows their vLLM-format KV events itself and sends a session's next turn
to the worker holding its prefix; every booking is released when its stream ends,
aborted ones too. When the service is down the pool routes by itself, with one
warning, and goes back to the service once it answers again (registering the workers
anew, as a restarted service knows none)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from pathlib import Path

import httpx
import pytest

from tokenyard.routing.dynamo import DynamoSelector, worker_id
from tokenyard.routing.kv_events import KvMirror
from tokenyard.routing.kv_subscriber import KvEventSubscriber
from tokenyard.routing.pool import EnginePool, Worker
from tokenyard.server.loading import ModelSettings, _pool, _router

from ..engines.test_simulated import make_engine
from ..server.serving import free_port
from .test_dynamo_indexer import dynamo_python
from .test_kv_subscriber import until
from .test_pool import drain, simulated_pool, turn

MODEL = "m"


def start_select_service(port: int, log: Path) -> subprocess.Popen:
    command = [str(dynamo_python()), "-m", "dynamo.select_service", "--port", str(port), "--threads", "1"]
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


async def wait_healthy(url: str, service: subprocess.Popen, log: Path) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        for _ in range(600):
            assert service.poll() is None, f"the selection service exited: {log.read_text()[-2000:]}"
            try:
                if (await client.get(f"{url}/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError(f"the selection service did not start: {log.read_text()[-2000:]}")


async def dynamo_overlap(url: str, pool: EnginePool, worker: str, prompt: list[int]) -> int:
    """The prompt tokens the service's index says `worker` holds (a query: nothing booked)."""
    assert pool.oracle is not None
    view = pool._oracle_view(pool.workers[worker], 4)
    body = {"model_name": MODEL, "token_ids": prompt, "allowed_worker_ids": [worker_id(MODEL, view)]}
    async with httpx.AsyncClient(timeout=2) as client:
        answer = (await client.post(f"{url}/select", json=body)).json()
    assert "overlap" in answer, answer
    return int(answer["overlap"]["gpu"])


async def tell_block_sizes(pool: EnginePool) -> None:
    """A request on each worker, so that its events tell the pool its block size."""
    for name, worker in pool.workers.items():
        async for _ in worker.engine.generate(turn(f"size-{name}", [8] * 8)):
            pass
    await until(lambda: all(w.block_size == 4 for w in pool.workers.values()))


async def active_requests(url: str) -> int:
    async with httpx.AsyncClient(timeout=2) as client:
        loads = (await client.get(f"{url}/loads")).json()
    return sum(load["active_requests"] for group in loads for load in group["loads"])


async def settled(url: str, pool: EnginePool) -> None:
    """Every booking freed at the service: no selection call in flight, no active request."""
    await until(lambda: not pool.oracle._tasks)  # type: ignore[union-attr]
    assert await active_requests(url) == 0


@pytest.mark.slow  # a real program: Dynamo's selection service
def test_dynamo_sends_each_sessions_next_turn_to_the_worker_holding_its_prefix(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "select.log"
    service = start_select_service(port, log)

    async def scenario() -> None:
        await wait_healthy(url, service, log)
        pool = simulated_pool(tmp_path, 2)
        pool.oracle = DynamoSelector(url, MODEL)
        await pool.start()
        try:
            # Until a worker's events have told the model's block size, the pool's
            # router decides (the service indexes a model at one block size).
            await drain(pool, turn("probe", [9] * 8))
            assert not any(reason == "dynamo" for _, reason in pool.stats.decisions)
            await until(lambda: any(w.block_size == 4 for w in pool.workers.values()))
            # The first selection registers every worker; the service then subscribes to
            # their events, and what is published before its SUB socket has joined is
            # lost to it. Publish a probe on each worker until the service has heard it.
            await drain(pool, turn("probe", [9] * 8))
            assert sum(n for (_, reason), n in pool.stats.decisions.items() if reason == "dynamo") == 1
            for name, worker in pool.workers.items():
                for n in range(200):
                    probe = [n + 500, int(name == "w0"), 1, 2, 3, 4, 5, 6]
                    async for _ in worker.engine.generate(turn(f"probe-{name}", probe)):
                        pass
                    if await dynamo_overlap(url, pool, name, probe) >= 8:
                        break
                    await asyncio.sleep(0.02)
                else:
                    raise AssertionError(f"the service heard nothing from {name}: {log.read_text()[-2000:]}")

            prompts = {f"s{n}": [n + 1] * 64 for n in range(4)}
            for session, prompt in prompts.items():
                await drain(pool, turn(session, prompt))
            first = {s: pool.router._sessions[s].worker for s in prompts}
            for session, prompt in prompts.items():
                for _ in range(200):
                    if await dynamo_overlap(url, pool, first[session], prompt) == 64:
                        break
                    await asyncio.sleep(0.02)
                else:
                    raise AssertionError(f"the service never indexed {session}'s first turn")
            before = sum(n for (_, reason), n in pool.stats.decisions.items() if reason == "dynamo")
            for session, prompt in prompts.items():
                # A booking is freed by a background call after its stream ends; until the
                # service has it, the worker looks busy and a fair router may go elsewhere.
                await settled(url, pool)
                decided = dict(pool.stats.decisions)
                chunks = await drain(pool, turn(session, prompt + [7] * 20))
                if pool.router._sessions[session].worker != first[session]:
                    overlaps = {name: await dynamo_overlap(url, pool, name, prompt) for name in pool.workers}
                    new = {key: n - decided.get(key, 0) for key, n in pool.stats.decisions.items()}
                    raise AssertionError(
                        f"{session} went to {pool.router._sessions[session].worker}, not {first[session]}: "
                        f"decisions {new}, the service's overlaps {overlaps}; {log.read_text()[-2000:]}"
                    )
                assert chunks[0].cached_tokens >= 64
            decisions = pool.stats.decisions
            assert sum(n for (_, reason), n in decisions.items() if reason == "dynamo") == before + len(prompts)
            assert sum(pool.stats.overlap_tokens.values()) >= 64 * len(prompts)  # as the service reported it

            # An aborted stream frees its booking too.
            stream = pool.generate(turn("aborted", [3] * 40))
            await anext(stream)
            assert await active_requests(url) == 1
            await stream.aclose()
            await settled(url, pool)
            assert all(w.load.requests == w.load.tokens == 0 for w in pool.workers.values())
        finally:
            await pool.close()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        service.terminate()
        service.wait(timeout=10)


@pytest.mark.slow  # a real program: Dynamo's selection service
def test_the_pool_routes_itself_while_dynamo_is_down_and_returns_to_it(tmp_path, caplog):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "select.log"

    async def scenario() -> None:
        pool = simulated_pool(tmp_path, 2)
        pool.oracle = DynamoSelector(url, MODEL, retry_after=0.0)
        await pool.start()
        try:
            await tell_block_sizes(pool)
            for n in range(3):
                chunks = await drain(pool, turn(f"down-{n}", [n + 1] * 16))
                assert chunks[-1].finish_reason is not None
            assert not any(reason == "dynamo" for _, reason in pool.stats.decisions)
            warnings = [r for r in caplog.records if r.name == "tokenyard.dynamo" and r.levelno == logging.WARNING]
            assert len(warnings) == 1, "one warning per outage"
            assert url in warnings[0].getMessage() and "own router" in warnings[0].getMessage()

            service = start_select_service(port, log)
            try:
                await wait_healthy(url, service, log)
                await drain(pool, turn("up", [5] * 16))
                assert sum(n for (_, reason), n in pool.stats.decisions.items() if reason == "dynamo") == 1
                async with httpx.AsyncClient(timeout=2) as client:
                    registered = (await client.get(f"{url}/workers")).json()
                assert sorted(w["worker_id"] for w in registered) == sorted(
                    worker_id(MODEL, pool._oracle_view(w, 4)) for w in pool.workers.values()
                )
            finally:
                service.terminate()
                service.wait(timeout=10)
            # Gone again (a restart loses the catalog): routed here, then registered anew.
            chunks = await drain(pool, turn("down-again", [6] * 16))
            assert chunks[-1].finish_reason is not None
            assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2
        finally:
            await pool.close()

    with caplog.at_level(logging.INFO, logger="tokenyard.dynamo"):
        asyncio.run(asyncio.wait_for(scenario(), 60))


def test_router_policy_dynamo_makes_a_pool_asking_the_service(tmp_path):
    router = _router(ModelSettings(router_policy="dynamo=http://127.0.0.1:8092"))
    assert router.policy == "kv"  # what routes while the service does not answer
    events = KvEventSubscriber(KvMirror("w0", router.index), "tcp://127.0.0.1:5557")
    workers = [Worker("w0", make_engine(tmp_path), events=events), Worker("w1", make_engine(tmp_path))]
    pool = _pool(ModelSettings(router_policy="dynamo=http://127.0.0.1:8092/"), workers, router)
    assert pool.oracle is not None and pool.oracle.url == "http://127.0.0.1:8092"
    with pytest.raises(ValueError, match="not an http"):
        _pool(ModelSettings(router_policy="dynamo=127.0.0.1:8092"), workers, router)
    with pytest.raises(ValueError, match="publish KV events"):
        _pool(ModelSettings(router_policy="dynamo=http://127.0.0.1:8092"), workers[1:], router)
    with pytest.raises(ValueError, match="dynamo=URL"):
        _router(ModelSettings(router_policy="nearest"))
