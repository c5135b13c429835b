"""KV-aware routing vs round-robin vs least-loaded, over 4 simulated workers.

A multi-session agent trace: many concurrent sessions shaped like Claude Code's and
Codex's (two harnesses, each with its own long shared system prompt + tools), taken
mid-way (each has a history of its own already), each running several tool-calling
turns: the model answers (thinking + a tool call), the
tool runs for a while, its result is appended, and the next turn sends the whole
conversation again. Sessions start staggered and overlap.

Each policy gets a fresh pool of 4 simulated engines (B200-like cost model,
engines/simulated.py) with a bounded KV pool each; every engine publishes its block
stores and evictions as vLLM-format KV events over loopback ZMQ, and the router
(routing/router.py, behind routing/pool.py as the server uses it) follows them with
its subscribers — the same path a fleet of vLLM servers takes:
- round-robin: turn after turn, a session visits every worker; each one holds at
  best the prefix of the session's turn 4 turns back;
- least-loaded: the worker with the fewest load tokens in flight;
- kv-aware: cached prefix (from the events) against load.

TTFT is the engines' simulated time (their queueing included) of every turn but a
session's first (which brings its history in: nobody holds it yet), throughput the
turns completed per simulated second of the whole run.

Run: python benchmarks/kv_routing.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, PLOTS  # noqa: E402

from tokenyard.conversation import AgentHints, Conversation  # noqa: E402
from tokenyard.engines.base import EngineRequest  # noqa: E402
from tokenyard.engines.simulated import SimulatedEngine  # noqa: E402
from tokenyard.routing.kv_events import KvMirror  # noqa: E402
from tokenyard.routing.kv_index import KvIndex  # noqa: E402
from tokenyard.routing.kv_publisher import ZmqKvPublisher  # noqa: E402
from tokenyard.routing.kv_subscriber import KvEventSubscriber  # noqa: E402
from tokenyard.routing.pool import EnginePool, Worker  # noqa: E402
from tokenyard.routing.router import Router  # noqa: E402

WORKERS = 4
STOP = 0
POLICIES = {"round-robin": "round-robin", "least-loaded": "least-loaded", "kv-aware": "kv"}


class Shape(NamedTuple):
    sessions: int
    turns: int
    system_tokens: tuple[int, int]  # Claude Code-like, Codex-like
    # A session's history before the trace starts (long agent sessions are mid-way).
    history_tokens: tuple[int, int]
    start_spread_ms: float
    tool_ms: tuple[float, float]
    result_tokens: tuple[int, int]
    answer_tokens: tuple[int, int]
    # Per worker: KV capacity in tokens (a B200 serving a large MoE holds a few hundred thousand).
    kv_tokens: int
    block_size: int
    time_scale: float


FULL = Shape(
    32, 6, (14_000, 9_000), (30_000, 90_000), 8_000, (500, 3_000), (500, 4_000), (120, 400), 1_000_000, 64, 1.0
)
QUICK = Shape(12, 3, (8_000, 6_000), (10_000, 30_000), 2_000, (300, 1_000), (300, 2_000), (100, 300), 200_000, 64, 0.5)


class Answers:
    """The simulated engines' responder: a planned number of output tokens per turn
    (thinking + a tool call's worth), all one character."""

    def __init__(self) -> None:
        self.lengths: dict[str, int] = {}

    def answer_text(self, request: EngineRequest) -> str:
        return "a" * self.lengths.get(request.request_id, 1)


class CharTokens:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]


def session_plan(shape: Shape, seed: int) -> list[dict]:
    rng = random.Random(seed)
    systems = [list(range(10_000 + k * 100_000, 10_000 + k * 100_000 + n)) for k, n in enumerate(shape.system_tokens)]
    plans = []
    for s in range(shape.sessions):
        base = 1_000_000 + s * 100_000
        history = [base + i for i in range(rng.randint(*shape.history_tokens))]
        turns = []
        for t in range(shape.turns):
            result = [base + 50_000 + t * 5_000 + i for i in range(rng.randint(*shape.result_tokens))]
            turns.append(
                {"answer": rng.randint(*shape.answer_tokens), "tool_ms": rng.uniform(*shape.tool_ms), "result": result}
            )
        plans.append(
            {
                "session": f"session-{s}",
                "start_ms": rng.uniform(0, shape.start_spread_ms),
                "prompt": systems[s % 2] + history,
                "turns": turns,
            }
        )
    return plans


async def run_policy(policy: str, shape: Shape, plans: list[dict]) -> dict:
    answers = Answers()
    router = Router(KvIndex(), policy=POLICIES[policy])  # type: ignore[arg-type]
    workers = []
    for n in range(WORKERS):
        name = f"w{n}"
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", replay_endpoint="tcp://127.0.0.1:0")
        publisher.bind()
        engine = SimulatedEngine(
            CharTokens(),  # type: ignore[arg-type]  # only encode() is used
            answers,  # type: ignore[arg-type]
            block_size=shape.block_size,
            num_blocks=shape.kv_tokens // shape.block_size,
            max_model_len=shape.kv_tokens // 2,
            time_scale=shape.time_scale,
            kv_events=publisher,
        )
        events = KvEventSubscriber(
            KvMirror(name, router.index), publisher.endpoint, replay_endpoint=publisher.replay_endpoint
        )
        workers.append(Worker(name, engine, events=events, publisher=publisher))
    pool = EnginePool(workers, router)
    await pool.start()
    await asyncio.sleep(0.2)  # let the subscriptions settle before the first event
    ttfts: list[float] = []
    prompt_tokens = cached_tokens = 0

    async def session(plan: dict) -> None:
        nonlocal prompt_tokens, cached_tokens
        await asyncio.sleep(plan["start_ms"] * shape.time_scale / 1000)
        prompt = list(plan["prompt"])
        for t, turn in enumerate(plan["turns"]):
            request_id = f"{plan['session']}-{t}"
            answers.lengths[request_id] = turn["answer"]
            conversation = Conversation(model="m", session_key=plan["session"], hints=AgentHints(osl=turn["answer"]))
            request = EngineRequest(
                request_id, prompt, turn["answer"] + 1, stop_token_ids=[STOP], conversation=conversation
            )
            output: list[int] = []
            async for chunk in pool.generate(request):
                output += chunk.token_ids
            worker = pool.router._sessions[plan["session"]].worker
            timing = pool.workers[worker].engine.timings[request_id]  # type: ignore[attr-defined]
            if t > 0:  # the first turn warms the session's history in (nobody had it cached)
                ttfts.append(timing.ttft_ms)
                prompt_tokens += timing.prompt_tokens
                cached_tokens += timing.cached_tokens or 0
            prompt = prompt + output + [STOP] + turn["result"]
            await asyncio.sleep(turn["tool_ms"] * shape.time_scale / 1000)

    started = time.perf_counter()
    await asyncio.gather(*(session(p) for p in plans))
    elapsed_sim_s = (time.perf_counter() - started) / shape.time_scale
    completed = len(plans) * shape.turns
    decisions = dict(pool.stats.decisions)
    await pool.close()
    ttfts.sort()
    return {
        "policy": policy,
        "p50": statistics.median(ttfts),
        "p99": ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))],
        "turns_per_s": completed / elapsed_sim_s,
        "hit": cached_tokens / prompt_tokens,
        "decisions": decisions,
    }


def plot(rows: list[dict], quick: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = OUT if quick else PLOTS
    folder.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    names = [r["policy"] for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["p50"] for r in rows], 0.4, label="TTFT p50", color="#4c78a8")
    ax.bar([i + 0.2 for i in x], [r["p99"] for r in rows], 0.4, label="TTFT p99", color="#e45756")
    for i, r in enumerate(rows):
        ax.annotate(f"{r['p50']:,.0f}", (i - 0.2, r["p50"]), ha="center", va="bottom", fontsize=8)
        ax.annotate(f"{r['p99']:,.0f}", (i + 0.2, r["p99"]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x), names)
    ax.set_ylabel("simulated ms")
    ax.set_title(f"Agent sessions over {WORKERS} simulated workers: TTFT by routing policy", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = folder / "kv_routing.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small trace, a fast clock (CI smoke run)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, help="override the trace's session count")
    parser.add_argument("--time-scale", type=float, help="real seconds per simulated second")
    args = parser.parse_args(argv)
    shape = QUICK if args.quick else FULL
    if args.sessions:
        shape = shape._replace(sessions=args.sessions)
    if args.time_scale:
        shape = shape._replace(time_scale=args.time_scale)
    plans = session_plan(shape, args.seed)
    turns = shape.sessions * shape.turns
    print(
        f"{shape.sessions} sessions x {shape.turns} turns ({turns} requests), {WORKERS} simulated workers, "
        f"{shape.kv_tokens:,} KV tokens each, block size {shape.block_size}"
    )
    rows = [asyncio.run(run_policy(policy, shape, plans)) for policy in POLICIES]
    print(f"{'policy':<14}{'TTFT p50':>12}{'TTFT p99':>12}{'turns/s':>10}{'cache hit':>11}")
    for r in rows:
        print(f"{r['policy']:<14}{r['p50']:>9,.0f} ms{r['p99']:>9,.0f} ms{r['turns_per_s']:>10.2f}{r['hit']:>10.0%}")
    by = {r["policy"]: r for r in rows}
    kv, rr, ll = by["kv-aware"], by["round-robin"], by["least-loaded"]
    ratio = rr["p50"] / kv["p50"]
    print(f"kv-aware / round-robin TTFT p50 = {ratio:.2f}x (round-robin p50 / kv-aware p50)")
    print(f"kv-aware / least-loaded TTFT p50 = {ll['p50'] / kv['p50']:.2f}x")
    met = ratio >= 3 and kv["p50"] < ll["p50"]
    print(f"target (>= 3x round-robin, better than least-loaded): {'met' if met else 'NOT met'}")
    print(f"kv-aware routing reasons: {sorted(kv['decisions'].items())}")
    print(f"plot: {plot(rows, args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
