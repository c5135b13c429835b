"""What a gateway adds: tokenyard vs the LiteLLM proxy in front of the same fast engine.

Three processes on loopback: a fast stand-in inference server (benchmarks/fast_engine.py:
streams a fixed answer at once), tokenyard serving the Anthropic Messages API through
its remote engine (it renders the prompt with the model's chat template, tokenizes,
sends token ids, parses the output, encodes Anthropic events), and the LiteLLM proxy
(`litellm[proxy]`, in its own venv) serving the Anthropic Messages API in front of the
same server's chat completions. The client measures, per path, time to the first
content event and to the last one (the whole answer; a gateway may send several
tokens in one event when the engine is ahead of it); the direct path (the client
calling the engine's chat completions itself) is the baseline, measured in the same
run, interleaved.

Throughput: requests per second with 32 streams at once (each a kept-alive
connection sending its next request as soon as its answer has ended), for this
tree and for an older commit (`--baseline`, default b262c43: the last figure
before the request path got slower) served side by side from `git archive` of
that commit, in alternating rounds, so both see the same machine load.

Targets: tokenyard's added TTFT <= 1/5 of LiteLLM's and <= 1 ms; >= 88 requests/s
at 32 streams (b262c43's figure on the 2-core VM). The bare hop (bare_gateway.py:
the same HTTP stack passing tokens straight on) is measured beside them: the part of
the added time no gateway on this stack avoids. `--turns N` sends every path a later
request of a Claude Code session instead (common.claude_code_body: its system prompt
and tools, then N tool turns), what each turn of a long session adds.
LiteLLM is looked for in $TOKENYARD_LITELLM_VENV, else $TOKENYARD_CACHE/litellm-venv
(~/.cache/tokenyard/litellm-venv). Install it once (its own venv: its pins clash
with ours): python3 -m venv ~/.cache/tokenyard/litellm-venv &&
  ~/.cache/tokenyard/litellm-venv/bin/pip install 'litellm[proxy]'
Run: python benchmarks/gateway_overhead.py [--quick] [--baseline REF|none] [--engine-pause MS] [--turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import LATE_TURN_TOKENS, REPO, claude_code_body, fixture_model, free_port, save_bar_plot  # noqa: E402

LITELLM_VENV = Path(
    os.environ.get("TOKENYARD_LITELLM_VENV")
    or Path(os.environ.get("TOKENYARD_CACHE") or Path.home() / ".cache" / "tokenyard") / "litellm-venv"
)
BASELINE = "b262c43"
STREAMS = 32
ANSWER = (
    "The gateway forwards each streamed token to the client as soon as the engine produces it, "
    "so the time it adds per token is what decides how fast a long answer feels. "
) * 6
SYSTEM = "You are a coding agent working in a large repository. " * 40
MASTER_KEY = "sk-tokenyard-bench-" + "0" * 32  # LiteLLM refuses to start without one


@contextlib.contextmanager
def process(argv: list[str], ready_url: str, env: dict | None = None, timeout: float = 120):
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    deadline = time.time() + timeout
    try:
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{argv[0]} exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(ready_url, timeout=1).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"{argv[0]} did not become ready")
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def timed_stream(client: httpx.Client, url: str, body: dict, headers: dict) -> tuple[float, float]:
    """(seconds to the first content event, seconds to the last)."""
    start = time.perf_counter()
    stamps: list[float] = []
    with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            data = json.loads(line[6:])
            if data.get("type") == "content_block_delta" or any(
                c.get("delta", {}).get("content") for c in data.get("choices") or []
            ):
                stamps.append(time.perf_counter())
    if not stamps:
        raise RuntimeError(f"{url}: no content events")
    return stamps[0] - start, stamps[-1] - start


def chat_body(anthropic: dict, max_tokens: int) -> dict:
    """The direct path's request: the Anthropic body's system prompt and messages as
    chat messages of about the same size (the stand-in reads none of it)."""
    system = anthropic["system"]
    if not isinstance(system, str):
        system = "\n".join(block["text"] for block in system)
    messages = [{"role": "system", "content": system}]
    for message in anthropic["messages"]:
        content = message["content"]
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        messages.append({"role": message["role"], "content": text})
    return {"model": "fast", "stream": True, "max_tokens": max_tokens, "messages": messages}


def baseline_tree(ref: str, into: Path) -> Path | None:
    """`ref`'s src/ unpacked under `into` (None when this clone lacks the commit)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], capture_output=True)
    if archive.returncode != 0:
        print(f"baseline {ref} not in this clone: {archive.stderr.decode(errors='replace').strip()}")
        return None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


async def _stream_loop(port: int, request: bytes, deadline: float, done: list[int]) -> None:
    """One kept-alive connection sending `request` again as soon as each chunked
    answer has ended; a raw client, so the client's own cost stays small. `done`:
    [answers complete, answers that ended with an error event]."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < deadline:
            writer.write(request)
            status = await reader.readline()
            if b" 200 " not in status:
                raise RuntimeError(f"port {port}: {status!r}")
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            last = b""
            while size := int((await reader.readline()).strip() or b"0", 16):
                last = (await reader.readexactly(size + 2))[:-2] or last
            await reader.readline()
            if b"message_stop" in last:
                done[0] += 1
            else:  # an error event: counted, shown once
                if not done[1]:
                    print(f"  port {port}: an answer ended with {last[-300:].decode(errors='replace')}")
                done[1] += 1
    finally:
        writer.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def requests_per_second(port: int, body: dict, headers: dict, streams: int, seconds: float) -> tuple[float, int, int]:
    """(complete answers per second, answers complete, answers that ended with an error)."""
    payload = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = (
        f"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"{head}content-length: {len(payload)}\r\n\r\n"
    ).encode() + payload

    async def run() -> tuple[float, int, int]:
        done = [0, 0]
        start = time.perf_counter()
        deadline = start + seconds
        await asyncio.gather(*(_stream_loop(port, request, deadline, done) for _ in range(streams)))
        return done[0] / (time.perf_counter() - start), done[0], done[1]

    return asyncio.run(run())


def tokenyard_server(model_dir: Path, engine: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tokenyard.cli",
        "serve",
        "--model",
        str(model_dir),
        "--engine",
        "remote",
        "--engine-url",
        engine,
        "--engine-model",
        "fast",
        "--served-model-name",
        "bench-model",
        "--port",
        str(port),
        "--max-model-len",
        "131072",
        "--max-concurrency",
        str(STREAMS),
        "--log-level",
        "error",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--quick", action="store_true", help="few rounds; LiteLLM only if already installed (CI smoke run)"
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help=f"the commit served beside this tree (default {BASELINE}; quick runs: none); 'none' to skip",
    )
    parser.add_argument(
        "--turns",
        type=int,
        default=0,
        metavar="N",
        help="a Claude Code request after N tool turns instead of one message (targets are for one message)",
    )
    parser.add_argument(
        "--engine-pause",
        type=float,
        default=0.0,
        metavar="MS",
        help="the stand-in pauses this long after each answer's first token (a GPU engine's pace; "
        "without it the rest of the answer's burst competes with the hop for the CPU)",
    )
    args = parser.parse_args(argv)
    from tokenyard.prompting.tokenizer import Tokenizer

    rounds = 3 if args.quick else 100
    # Throughput: alternating rounds of this many seconds per server.
    tput_rounds, tput_seconds = (1, 1.0) if args.quick else (5, 4.0)
    baseline = args.baseline or (None if args.quick else BASELINE)
    if baseline == "none":
        baseline = None
    model_dir = fixture_model("qwen3")
    tokenizer = Tokenizer.from_model_dir(model_dir)
    ids = tokenizer.encode(ANSWER)
    texts = [tokenizer.decode([i]) for i in ids]
    anthropic: dict = {
        "model": "bench-model",
        "stream": True,
        "max_tokens": len(ids),
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "Explain streaming."}],
    }
    if args.turns:
        anthropic = claude_code_body("bench-model", "0", "Fix the failing test.", LATE_TURN_TOKENS, "s1", args.turns)[0]
        anthropic["max_tokens"] = len(ids)
    litellm = LITELLM_VENV / "bin" / "litellm"
    with tempfile.TemporaryDirectory() as tmp:
        answer_file = Path(tmp) / "answer.json"
        answer_file.write_text(json.dumps({"token_ids": ids, "texts": texts}))
        engine_port, litellm_port = free_port(), free_port()
        engine = f"http://127.0.0.1:{engine_port}"
        paths = {"direct": (f"{engine}/v1/chat/completions", "chat")}
        servers = {"tokenyard": REPO / "src"}
        if baseline is not None and (tree := baseline_tree(baseline, Path(tmp))) is not None:
            servers[baseline] = tree
        ports: dict[str, int] = {}
        pids: dict[str, int] = {}
        with contextlib.ExitStack() as stack:
            stack.enter_context(
                process(
                    [
                        sys.executable,
                        str(REPO / "benchmarks" / "fast_engine.py"),
                        "--port",
                        str(engine_port),
                        "--answer-file",
                        str(answer_file),
                        "--pause-after-first",
                        str(args.engine_pause),
                    ],
                    f"{engine}/v1/models",
                )
            )
            for name, src in servers.items():
                ports[name] = free_port()
                server = stack.enter_context(
                    process(
                        tokenyard_server(model_dir, engine, ports[name]),
                        f"http://127.0.0.1:{ports[name]}/health",
                        env={"PYTHONPATH": str(src)},
                    )
                )
                pids[name] = server.pid
                paths[name] = (f"http://127.0.0.1:{ports[name]}/v1/messages", "anthropic")
            bare_port = free_port()
            stack.enter_context(
                process(
                    [
                        sys.executable,
                        str(REPO / "benchmarks" / "bare_gateway.py"),
                        "--port",
                        str(bare_port),
                        "--engine-url",
                        engine,
                        "--prompt-tokens",
                        str(len(tokenizer.encode(SYSTEM if not args.turns else json.dumps(anthropic)))),
                    ],
                    f"http://127.0.0.1:{bare_port}/health",
                )
            )
            paths["bare hop"] = (f"http://127.0.0.1:{bare_port}/v1/messages", "anthropic")
            if litellm.exists():
                # hosted_vllm: LiteLLM's provider for an OpenAI-compatible inference server
                # (it sends `openai/` models' Anthropic requests to the Responses API).
                config = Path(tmp) / "litellm.yaml"
                config.write_text(
                    "model_list:\n  - model_name: bench-model\n    litellm_params:\n      model: hosted_vllm/fast\n"
                    f"      api_base: {engine}/v1\n      api_key: x\n"
                )
                stack.enter_context(
                    process(
                        [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(litellm_port)],
                        f"http://127.0.0.1:{litellm_port}/health/liveliness",
                        timeout=180,
                        env={
                            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                            "LITELLM_TELEMETRY": "False",
                            "LITELLM_MASTER_KEY": MASTER_KEY,
                            "LITELLM_DISABLE_LAZY_ROUTES": "true",
                        },
                    )
                )
                paths["litellm"] = (f"http://127.0.0.1:{litellm_port}/v1/messages", "anthropic")
            else:
                print(f"LiteLLM not installed at {LITELLM_VENV}: comparing tokenyard with the direct path only")
            bodies = {"chat": chat_body(anthropic, len(ids)), "anthropic": anthropic}
            headers = {
                "anthropic-version": "2023-06-01",
                "x-api-key": MASTER_KEY,
                "authorization": f"Bearer {MASTER_KEY}",
            }
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
            with httpx.Client(timeout=60) as client:
                for url, shape in paths.values():  # warm up connections and caches
                    for _ in range(3):
                        timed_stream(client, url, bodies[shape], headers)
                # Each round in its own order: whatever one path leaves running after its
                # answer (LiteLLM's logging, a server's tail work) or evicts from the caches
                # then slows every path equally often, not always the one after it (a
                # rotated fixed order kept each path's neighbours: the direct path followed
                # LiteLLM in four rounds of five).
                order = list(paths.items())
                shuffler = random.Random(0)
                for _ in range(rounds):
                    shuffler.shuffle(order)
                    for name, (url, shape) in order:
                        samples[name].append(timed_stream(client, url, bodies[shape], headers))
            throughput: dict[str, list[float]] = {name: [] for name in servers}
            failed = dict.fromkeys(servers, 0)
            # The server's own CPU per answer: what the machine's other load moves least.
            cpu = dict.fromkeys(servers, 0.0)
            answers = dict.fromkeys(servers, 0)
            headers = {"anthropic-version": "2023-06-01"}
            for _ in range(tput_rounds):
                for name in servers:
                    before = cpu_seconds(pids[name])
                    rate, complete, errors = requests_per_second(
                        ports[name], bodies["anthropic"], headers, STREAMS, tput_seconds
                    )
                    cpu[name] += cpu_seconds(pids[name]) - before
                    answers[name] += complete
                    throughput[name].append(rate)
                    failed[name] += errors
    direct_ttft = statistics.median(t for t, _ in samples["direct"])
    direct_last = statistics.median(e for _, e in samples["direct"])
    pause = f", the rest {args.engine_pause:g} ms after the first token" if args.engine_pause else ""
    request = f"a Claude Code request after {args.turns} tool turns" if args.turns else "one message"
    print(f"fast stand-in engine, {request}, {len(ids)}-token answer{pause}, {rounds} interleaved rounds; medians")
    print(f"  {'path':<11}{'TTFT':>11}{'added':>11}{'last token':>13}{'added':>11}")
    added: dict[str, tuple[float, float]] = {}
    for name, rows in samples.items():
        ttft = statistics.median(t for t, _ in rows)
        last = statistics.median(e for _, e in rows)
        added[name] = ((ttft - direct_ttft) * 1000, (last - direct_last) * 1000)
        print(
            f"  {name:<11}{ttft * 1000:>8.2f} ms{added[name][0]:>8.2f} ms{last * 1000:>10.2f} ms{added[name][1]:>8.2f} ms"
        )
    print(
        f"  the bare hop (uvicorn + aiohttp, nothing else: bare_gateway.py) adds {added['bare hop'][0]:.2f} ms; "
        f"tokenyard's own work: {added['tokenyard'][0] - added['bare hop'][0]:.2f} ms"
    )
    labels, values = ["tokenyard"], [added["tokenyard"][0]]
    if "litellm" in added:
        request_ratio = added["tokenyard"][0] / added["litellm"][0]
        answer_ratio = added["tokenyard"][1] / added["litellm"][1]
        met = request_ratio <= 0.2 and added["tokenyard"][0] <= 1.0
        verdict = f"target <= 0.20 and <= 1 ms added to the first: {'met' if met else 'NOT met'}"
        print(
            f"  tokenyard / LiteLLM added time: {request_ratio:.2f} to the first token, {answer_ratio:.2f} to the last"
            + ("" if args.turns else f" ({verdict})")
        )
        labels.append("litellm")
        values.append(added["litellm"][0])
    load = os.getloadavg()[0]
    print(
        f"{STREAMS} streams at once, {tput_rounds} alternating rounds of {tput_seconds:.0f} s; "
        f"median requests/s, and the server's CPU per answer (load average {load:.1f})"
    )
    for name, rates in throughput.items():
        spread = f" (rounds {min(rates):.1f}–{max(rates):.1f})" if len(rates) > 1 else ""
        per_answer = cpu[name] * 1000 / max(1, answers[name])
        errors = f"; {failed[name]} answers ended with an error" if failed[name] else ""
        print(f"  {name:<11}{statistics.median(rates):>8.1f}{spread}, {per_answer:.2f} ms CPU per answer{errors}")
    if len(throughput) > 1:
        ours, theirs = (statistics.median(r) for r in throughput.values())
        print(
            f"  tokenyard / {baseline}: {ours / theirs:.2f}"
            + ("" if args.turns else f" (target >= 88 requests/s: {'met' if ours >= 88 else 'NOT met'})")
        )
    print(
        f"plot: {save_bar_plot('gateway_overhead', 'Added TTFT over calling the engine directly', labels, values, quick=args.quick or args.turns > 0)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
