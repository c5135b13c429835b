"""The CPU of each step before a streamed request's engine request, in-process.

gateway_overhead.py's body (a 2.2 KB system prompt and one user message, Qwen3
fixture, remote engine that is never called) through the steps `start_generation`
takes: JSON, the Anthropic body → `Conversation`, the chat template, tokenization,
the whole render, and all of `start_generation`. Each step is timed warm (called
back to back) and cold: between two calls 16 MB of memory is touched and a 20K-entry
JSON document written, as a server's other work does between two requests. The
cold figures are what the server's timeline shows (5-10x the warm ones); fewer
calls into compiled extensions, fewer objects and fewer exceptions show there most.
`--turns N` times a later request of a Claude Code session instead
(`common.claude_code_body`: ~190 KB and ~57K tokens after 40 tool turns), what every
turn of a long session pays before its engine request.

`--baseline REF` (e.g. main) runs the same steps for that commit's `src/` (from
`git archive`) in alternating worker processes, and prints both side by side with
the ratio; each figure is the lower of two workers' medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import LATE_TURN_TOKENS, REPO, claude_code_body, fixture_model  # noqa: E402
from gateway_overhead import SYSTEM, baseline_tree  # noqa: E402


def worker(rounds: int, turns: int) -> dict[str, dict[str, float]]:
    from datetime import UTC, datetime

    from tokenyard.apis.anthropic.spoke import SPOKE
    from tokenyard.prompting.prefix_watch import PrefixWatch
    from tokenyard.sealing import ReasoningSeal
    from tokenyard.server.app import ServerConfig, ServerState
    from tokenyard.server.loading import load
    from tokenyard.server.offload import freeze_start_up_objects
    from tokenyard.server.pipeline import Pipeline
    from tokenyard.server.routes import context, start_generation
    from tokenyard.settings import ModelSettings
    from tokenyard.wire_json import loads

    settings = ModelSettings(
        model=str(fixture_model("qwen3")),
        engine="remote",
        engine_url="http://127.0.0.1:9",  # never called
        engine_model="fast",
        served_model_names=("bench-model",),
        max_model_len=131072,
    )
    model, engine = load(settings)
    freeze_start_up_objects()  # as `tokenyard serve` does: a full collection then walks only what requests made
    state = ServerState(Pipeline(model, engine, prefix_watch=PrefixWatch()), ReasoningSeal(bytes(32)), ServerConfig())
    body: dict[str, Any] = {
        "model": "bench-model",
        "stream": True,
        "max_tokens": 205,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "Explain streaming."}],
    }
    headers = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
    if turns:
        body, session = claude_code_body("bench-model", "0", "Fix the failing test.", LATE_TURN_TOKENS, "s1", turns)
        headers |= session
    raw = json.dumps(body, ensure_ascii=False).encode()
    ctx = context(headers, state)
    conversation = SPOKE.parse(loads(raw), ctx).conversation
    renderer = model.renderer
    now = datetime.now(UTC)
    prepared = renderer.template_text(conversation, True, now, renderer.inline_system)[1]
    text = renderer.render(conversation).text
    loop = asyncio.new_event_loop()
    steps: dict[str, Callable[[], Any]] = {
        "JSON": lambda: loads(raw),
        "JSON + body → Conversation": lambda: SPOKE.parse(loads(raw), ctx),
        "chat template": lambda: renderer.template.render(
            prepared.messages, prepared.tools, True, now=now, **prepared.kwargs
        ),
        "tokenization": lambda: model.tokenizer.encode(text),
        "render (template, tokens, checks)": lambda: state.pipeline.render(conversation),
        "start_generation": lambda: loop.run_until_complete(
            start_generation(SPOKE, loads(raw), len(raw), headers, state)
        ),
    }
    memory = bytearray(16 << 20)
    document = {str(i): [i, str(i)] for i in range(20_000)}

    def other_work() -> None:
        for i in range(0, len(memory), 64):
            memory[i] = (memory[i] + 1) & 255
        json.dumps(document)

    out: dict[str, dict[str, float]] = {}
    for name, step in steps.items():
        for _ in range(50):
            step()
        warm, cold = [], []
        for _ in range(rounds * 5):
            start = time.perf_counter_ns()
            step()
            warm.append(time.perf_counter_ns() - start)
        for _ in range(rounds):
            other_work()
            start = time.perf_counter_ns()
            step()
            cold.append(time.perf_counter_ns() - start)
        out[name] = {"warm": statistics.median(warm) / 1000, "cold": statistics.median(cold) / 1000}
    return out


def run_worker(src: Path, rounds: int, turns: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--rounds", str(rounds), "--turns", str(turns)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="a commit whose src/ is timed beside this tree's")
    parser.add_argument("--rounds", type=int, default=200, help="cold calls per step (warm: five times as many)")
    parser.add_argument(
        "--turns", type=int, default=0, help="time a Claude Code request after this many tool turns instead"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.rounds, args.turns)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": REPO / "src"}
        if args.baseline and (tree := baseline_tree(args.baseline, Path(tmp))) is not None:
            trees[args.baseline] = tree
        results: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
        for _ in range(2):  # alternating, so both see the same moments of a shared machine
            for name, src in trees.items():
                results[name].append(run_worker(src, args.rounds, args.turns))
    best = {
        name: {step: {kind: min(run[step][kind] for run in runs) for kind in ("warm", "cold")} for step in runs[0]}
        for name, runs in results.items()
    }
    names = list(trees)
    body = f"a Claude Code request after {args.turns} tool turns" if args.turns else "one message"
    print(f"µs per call, median (lower of two workers), {body}; load average {os.getloadavg()[0]:.1f}")
    header = "".join(f"{name + ' warm':>18}{name + ' cold':>18}" for name in names)
    print(f"  {'step':34}{header}" + ("   ratio warm / cold" if len(names) > 1 else ""))
    for step in best[names[0]]:
        cells = "".join(f"{best[n][step]['warm']:18.1f}{best[n][step]['cold']:18.1f}" for n in names)
        ratio = ""
        if len(names) > 1:
            this, base = best[names[0]][step], best[names[1]][step]
            ratio = f"   {this['warm'] / base['warm']:.2f} / {this['cold'] / base['cold']:.2f}"
        print(f"  {step:34}{cells}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
