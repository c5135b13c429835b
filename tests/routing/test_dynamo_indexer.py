"""The simulated engine's KV events read by Dynamo's own indexer (`python -m
dynamo.indexer` from the ai-dynamo-runtime wheel, runtime-free): in both encodings
vLLM has used, with integer block hashes (the default, as vLLM publishes) its index
matches the engine's prefix cache block for block; byte hashes are refused there
(why integers are the default)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import httpx
import pytest

from tokenyard.models.cache import cache_root
from tokenyard.routing.kv_publisher import ZmqKvPublisher

from ..engines.test_simulated import collect, make_engine, request
from ..server.serving import free_port
from .test_kv_subscriber import engine_prefix

DYNAMO_RUNTIME = "ai-dynamo-runtime-1.6.1"
BLOCK = 4
MODEL = "m"

pytestmark = pytest.mark.slow  # a real program: Dynamo's indexer


def dynamo_python() -> Path:
    venv = cache_root() / "dynamo-venv"
    if not (venv / f".tokenyard-{DYNAMO_RUNTIME}").exists():
        pytest.skip(f"{DYNAMO_RUNTIME} is not installed in {venv}; run `bash scripts/install_fleet_routers.sh`")
    return venv / "bin" / "python"


async def matched(client: httpx.AsyncClient, url: str, prompt: list[int]) -> int:
    """Prompt tokens Dynamo's indexer says worker 1 holds."""
    response = await client.post(f"{url}/query", json={"model_name": MODEL, "token_ids": prompt})
    response.raise_for_status()
    return int(response.json()["scores"].get("1", {}).get("0", 0))


@pytest.mark.parametrize("encoding", ["tagged", "array"])
@pytest.mark.parametrize("hash_format", ["int", "bytes"])
def test_dynamos_indexer_follows_the_simulated_engine(tmp_path, encoding, hash_format):
    python = dynamo_python()
    publisher = ZmqKvPublisher("tcp://127.0.0.1:0", encoding=encoding, hash_format=hash_format)
    publisher.bind()
    port = free_port()
    log = tmp_path / "indexer.log"
    command = [
        str(python), "-m", "dynamo.indexer", "--port", str(port), "--block-size", str(BLOCK), "--threads", "1",
        "--model-name", MODEL, "--workers", f"1={publisher.endpoint}",
    ]  # fmt: skip
    with open(log, "wb") as out:
        indexer = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    async def scenario() -> None:
        engine = make_engine(
            tmp_path, answer="ok", block_size=BLOCK, num_blocks=12, max_model_len=48, kv_events=publisher
        )
        prompts = [list(range(start, start + 16)) for start in (1000, 2000, 3000)]
        async with httpx.AsyncClient(timeout=5) as client:
            try:
                for _ in range(200):
                    if indexer.poll() is not None:
                        raise AssertionError(f"the indexer exited: {log.read_text()[-2000:]}")
                    try:
                        if (await client.get(f"{url}/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.05)
                # A SUB socket's subscription lands a while after it connects: publish
                # (a new one-block prompt each time) until the indexer has heard one.
                for turn in range(200):
                    warm = [1, 2, 3, turn + 4]
                    await collect(engine, request(f"warm-{turn}", warm))
                    await asyncio.sleep(0.02)
                    if hash_format == "bytes":
                        if "did not match any variant of untagged enum BlockHashValue" in log.read_text():
                            break
                    elif await matched(client, url, warm) == BLOCK:
                        break
                else:
                    raise AssertionError(f"the indexer heard nothing: {log.read_text()[-2000:]}")
                for n, prompt in enumerate(prompts):
                    await collect(engine, request(str(n), prompt))
                assert engine.stats.evicted_blocks > 0
                for prompt in prompts:
                    expected = engine_prefix(engine, prompt) * BLOCK if hash_format == "int" else 0
                    for _ in range(200):
                        if await matched(client, url, prompt) == expected:
                            break
                        await asyncio.sleep(0.02)
                    assert await matched(client, url, prompt) == expected, log.read_text()[-2000:]
                assert engine_prefix(engine, prompts[2]) == 4
            finally:
                await engine.close()
                await publisher.close()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        indexer.terminate()
        indexer.wait(timeout=10)
