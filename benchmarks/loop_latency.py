"""Does one big request freeze the others? `/health` latency while large requests
are in flight, with the CPU work offloaded (the default) and on the event loop
(`--no-offload`), measured side by side in one run.

Each mode starts `tokenyard serve` (scripted engine, Qwen3's real tokenizer and chat
template) in its own process, then sends, all at once: `--bodies` Messages requests
of a 20 MB user message (parsed, rendered and tokenized, then refused as longer than
the window: the work is the point), and `--renders` count_tokens requests whose
conversation renders to ~50K tokens (many turns through the jinja template). With
`--hostile`, also what a hostile client sends: a 5.6 MB `/v1/tokenize` prompt, a
`/v1/detokenize` of 5M ids and a Chat request with 60,000 tools (refused by the
bounds, but read first). While they run, a client probes `GET /health` every 10 ms
and records how long each answer takes; the table gives its p50, p99 and the worst
single stall (max) per mode and the ratio.

Targets with offload on: /health p99 < 50 ms, and no single stall over 100 ms.
Run: python benchmarks/loop_latency.py [--quick] [--hostile]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, fixture_model, free_port  # noqa: E402

MODEL = "test/model"
PROBE_INTERVAL = 0.01
TARGET_MS = 50.0
MAX_STALL_MS = 100.0


def big_body(megabytes: float) -> dict:
    line = "The service writes its logs to /var/log/app.log and rotates them daily at midnight.\n"
    text = line * max(1, int(megabytes * 1_000_000 / len(line)))
    return {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": text}]}


def hostile_payloads() -> list[tuple[str, bytes]]:
    import json

    line = "The service writes its logs to /var/log/app.log daily.\n"
    tool = {"type": "function", "function": {"name": "t", "parameters": {"type": "object", "properties": {}}}}
    return [
        ("/v1/tokenize", json.dumps({"model": MODEL, "prompt": line * 100_000}).encode()),
        ("/v1/detokenize", json.dumps({"model": MODEL, "tokens": [785] * 5_000_000}).encode()),
        (
            "/v1/chat/completions",
            json.dumps(
                {"model": MODEL, "tools": [tool] * 60_000, "messages": [{"role": "user", "content": "hi"}]}
            ).encode(),
        ),
    ]


def many_turns(tokens: int) -> dict:
    # ~60 tokens a turn pair; the template loops over every message.
    turns = max(1, tokens // 60)
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"Question {i}: which port does service number {i} listen on?"})
        messages.append({"role": "assistant", "content": f"Service {i} listens on port {8000 + i} over plain HTTP."})
    messages.append({"role": "user", "content": "Summarise."})
    return {"model": MODEL, "messages": messages}


class Server:
    def __init__(self, offload: bool):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [
            sys.executable,
            "-m",
            "tokenyard.cli",
            "serve",
            "--engine",
            "scripted",
            "--model",
            str(fixture_model("qwen3")),
            "--served-model-name",
            MODEL,
            "--port",
            str(self.port),
            "--max-concurrency",
            "16",
            "--log-level",
            "warning",
        ]
        if not offload:
            command.append("--no-offload")
        env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"server exited: {self.process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit("server did not start")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


async def measure(url: str, bodies: list[tuple[str, bytes]]) -> tuple[list[float], list[int], float]:
    """Send every body at once; probe /health until they are all answered. Returns the
    probes' latencies (ms), the big requests' statuses, and how long they took."""
    limits = httpx.Limits(max_connections=len(bodies) + 4)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        await client.get("/health")
        started = time.perf_counter()
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "x"}
        tasks = [asyncio.create_task(client.post(path, content=body, headers=headers)) for path, body in bodies]
        latencies: list[float] = []
        while not all(t.done() for t in tasks):
            sent = time.perf_counter()
            await client.get("/health")
            latencies.append((time.perf_counter() - sent) * 1000)
            await asyncio.sleep(PROBE_INTERVAL)
        statuses = [(await t).status_code for t in tasks]
        return latencies, statuses, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small bodies and renders (a smoke run)")
    parser.add_argument("--body-mb", type=float, default=20.0)
    parser.add_argument("--render-tokens", type=int, default=50_000)
    parser.add_argument("--bodies", type=int, default=2)
    parser.add_argument("--renders", type=int, default=2)
    parser.add_argument("--hostile", action="store_true", help="add the hostile payloads (tokenize, detokenize, tools)")
    args = parser.parse_args(argv)
    if args.quick:
        args.body_mb, args.render_tokens, args.bodies, args.renders = 1.0, 5_000, 1, 1
    import json

    payloads = [("/v1/messages", json.dumps(big_body(args.body_mb)).encode())] * args.bodies + [
        ("/v1/messages/count_tokens", json.dumps(many_turns(args.render_tokens)).encode())
    ] * args.renders
    if args.hostile:
        payloads += hostile_payloads()
    print(
        f"/health every {PROBE_INTERVAL * 1000:.0f} ms while {args.bodies} x {args.body_mb:g} MB Messages bodies and "
        f"{args.renders} x ~{args.render_tokens // 1000}K-token count_tokens renders are in flight"
    )
    print(f"{'mode':<12} {'probes':>7} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9} {'load s':>8}  statuses")
    results = {}
    for offload in (True, False):
        server = Server(offload)
        try:
            server.wait_ready()
            latencies, statuses, took = asyncio.run(measure(server.url, payloads))
        finally:
            server.stop()
        name = "offload" if offload else "on-loop"
        results[name] = latencies
        print(
            f"{name:<12} {len(latencies):>7} {statistics.median(latencies):>9.1f} {percentile(latencies, 0.99):>9.1f} "
            f"{max(latencies):>9.1f} {took:>8.1f}  {sorted(set(statuses))}"
        )
    on, off = percentile(results["on-loop"], 0.99), percentile(results["offload"], 0.99)
    verdict = "meets" if off < TARGET_MS else "misses"
    print(f"p99 on-loop / offload: {on / off:.1f}x; offload {verdict} the {TARGET_MS:.0f} ms target")
    worst = max(results["offload"])
    verdict = "meets" if worst <= MAX_STALL_MS else "misses"
    print(f"worst single stall with offload: {worst:.0f} ms; {verdict} the {MAX_STALL_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
