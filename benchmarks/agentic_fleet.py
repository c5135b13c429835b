"""llm-d's agentic code-generation workload over 4 simulated workers: round-robin vs
session affinity vs tokenyard's KV-aware router vs a LiteLLM-style frontend.

The workload as llm-d's guide defines it (guides/agentic-serving/
agentic-code-generation.md): 40 concurrent coding-agent sessions; every prompt starts
with one shared ~3K-token prompt, then the session's own long system prompt (its
"dynamic" part: repository context), then the conversation; each turn adds ~1.5K
input tokens (tool results, instructions) and the model answers ~425 tokens; the
tool runs 15 s between turns. llm-d's published result on Qwen3-Coder-480B is TTFT
p50 17,391 → 2,474 ms from precise prefix routing: its round-robin fleet is deep in
queueing, because every cache miss re-prefills a whole context.

The fleet: 4 simulated engines (engines/simulated.py), each publishing vLLM-format KV
events over loopback ZMQ that the router follows. Their cost model is the simulated
engine's, with prefill 10x slower than its B200 default (a worker prefills ~20K
tokens/s: a 480B-A35B model on one node rather than the default's smaller model on
a B200), so that, as in llm-d's run, the fleet's prefill capacity is what cache
misses exhaust; each holds 400K tokens of KV, enough for every session's context
once over the fleet, not four times. The time is simulated (`--time-scale` real
seconds per simulated second).

- round-robin: each turn to the next worker;
- session affinity: a hash of the session to a worker, what a fleet router does
  with `x-session-id` alone (vllm-router's consistent_hash);
- kv-aware: tokenyard's router (cached prefix from the events against load);
- litellm-style: a frontend that keeps Claude Code's per-session billing header at
  the prompt's start (so even the shared 3K prompt is not shared) and rebuilds the
  assistant's earlier turns from their text (so each turn's prefix breaks at the
  previous answer), routing as LiteLLM does by default (simple shuffle: random).

Reported per policy: TTFT p50/p99 over every turn (simulated ms), prefill tokens
computed (prompt tokens not found in the worker's cache), throughput (output tokens
per simulated second) and the cache hit rate; and the floor: each turn alone on an
idle worker that already holds its session, the TTFT no routing can go below.

Run: python benchmarks/agentic_fleet.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, PLOTS  # noqa: E402

from tokenyard.conversation import AgentHints, Conversation  # noqa: E402
from tokenyard.engines.base import EngineRequest  # noqa: E402
from tokenyard.engines.simulated import CostModel, SimulatedEngine  # noqa: E402
from tokenyard.routing.kv_events import KvMirror  # noqa: E402
from tokenyard.routing.kv_index import KvIndex  # noqa: E402
from tokenyard.routing.kv_publisher import ZmqKvPublisher  # noqa: E402
from tokenyard.routing.kv_subscriber import KvEventSubscriber  # noqa: E402
from tokenyard.routing.pool import EnginePool, Worker  # noqa: E402
from tokenyard.routing.router import Candidate, Decision, Router  # noqa: E402

WORKERS = 4
STOP = 0
GENERATED, REBUILT = 97, 98  # the engine's answer tokens; a frontend's rebuilt text of them
POLICIES = ("round-robin", "session-affinity", "kv-aware", "litellm-style")
DEFAULT = CostModel()
FLEET_COST = CostModel(
    prefill_ms_per_token=DEFAULT.prefill_ms_per_token * 10,
    prefill_ms_per_token_per_kctx=DEFAULT.prefill_ms_per_token_per_kctx * 10,
)


class Shape(NamedTuple):
    sessions: int
    turns: int
    shared_tokens: int
    system_tokens: tuple[int, int]  # the session's own system prompt
    input_tokens: tuple[int, int]  # added per turn
    output_tokens: tuple[int, int]
    tool_s: float
    start_spread_s: float
    kv_tokens: int  # per worker
    block_size: int
    time_scale: float


FULL = Shape(40, 8, 3_000, (4_000, 8_000), (1_200, 1_800), (350, 500), 15.0, 15.0, 400_000, 64, 0.4)
QUICK = Shape(8, 3, 3_000, (2_000, 4_000), (1_200, 1_800), (100, 200), 15.0, 5.0, 120_000, 64, 0.01)


class SessionHash(Router):
    """A fleet router's session affinity: the session's hash picks the worker."""

    def choose(
        self, candidates: Sequence[Candidate], prompt: Sequence[int], session: str | None = None, osl: int | None = None
    ) -> Decision:
        worker = candidates[zlib.crc32((session or "").encode()) % len(candidates)]
        return Decision(worker.name, "session-affinity", 0, len(prompt) + (osl or self.default_osl))


class Shuffle(Router):
    """LiteLLM's default `simple-shuffle`: a random deployment per request."""

    rng = random.Random(11)

    def choose(
        self, candidates: Sequence[Candidate], prompt: Sequence[int], session: str | None = None, osl: int | None = None
    ) -> Decision:
        worker = self.rng.choice(list(candidates))
        return Decision(worker.name, "round-robin", 0, len(prompt) + (osl or self.default_osl))


def router_for(policy: str) -> Router:
    if policy == "round-robin":
        return Router(KvIndex(), policy="round-robin")
    if policy == "session-affinity":
        return SessionHash(KvIndex())
    if policy == "litellm-style":
        return Shuffle(KvIndex())
    return Router(KvIndex(), policy="kv")


class Answers:
    """The simulated engines' responder: the planned number of output tokens."""

    def __init__(self) -> None:
        self.lengths: dict[str, int] = {}

    def answer_text(self, request: EngineRequest) -> str:
        return chr(GENERATED) * self.lengths.get(request.request_id, 1)


class CharTokens:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]


def session_plan(shape: Shape, seed: int) -> list[dict]:
    rng = random.Random(seed)
    shared = list(range(10_000, 10_000 + shape.shared_tokens))
    plans = []
    for s in range(shape.sessions):
        base = 1_000_000 + s * 200_000
        system = [base + i for i in range(rng.randint(*shape.system_tokens))]
        turns = []
        for t in range(shape.turns):
            start = base + 100_000 + t * 5_000
            turns.append(
                {
                    "input": list(range(start, start + rng.randint(*shape.input_tokens))),
                    "output": rng.randint(*shape.output_tokens),
                }
            )
        plans.append(
            {
                "session": f"session-{s}",
                "start_s": rng.uniform(0, shape.start_spread_s),
                "billing": [500_000 + s * 16 + i for i in range(16)],
                "prefix": shared + system,
                "turns": turns,
            }
        )
    return plans


def prompt_for(plan: dict, turn: int, policy: str) -> list[int]:
    """Turn `turn`'s prompt as the frontend renders it."""
    prompt = list(plan["prefix"])
    if policy == "litellm-style":
        prompt = plan["billing"] + prompt
    for t, step in enumerate(plan["turns"][: turn + 1]):
        prompt += step["input"]
        if t < turn:
            # tokenyard replays the model's own output; a rebuilding frontend does not.
            answer = REBUILT if policy == "litellm-style" else GENERATED
            prompt += [answer] * step["output"] + [STOP]
    return prompt


async def run_policy(policy: str, shape: Shape, plans: list[dict]) -> dict:
    answers = Answers()
    router = router_for(policy)
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
            cost=FLEET_COST,
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
    totals = {"prompt": 0, "cached": 0, "output": 0}

    async def session(plan: dict) -> None:
        await asyncio.sleep(plan["start_s"] * shape.time_scale)
        for t, turn in enumerate(plan["turns"]):
            request_id = f"{plan['session']}-{t}"
            answers.lengths[request_id] = turn["output"]
            conversation = Conversation(model="m", session_key=plan["session"], hints=AgentHints(osl=turn["output"]))
            prompt = prompt_for(plan, t, policy)
            request = EngineRequest(
                request_id, prompt, turn["output"] + 1, stop_token_ids=[STOP], conversation=conversation
            )
            async for _ in pool.generate(request):
                pass
            timing = next(w.engine.timings[request_id] for w in workers if request_id in w.engine.timings)  # type: ignore[attr-defined]
            ttfts.append(timing.ttft_ms)
            totals["prompt"] += timing.prompt_tokens
            totals["cached"] += timing.cached_tokens or 0
            totals["output"] += timing.output_tokens
            await asyncio.sleep(shape.tool_s * shape.time_scale)

    started = time.perf_counter()
    await asyncio.gather(*(session(p) for p in plans))
    elapsed_sim_s = (time.perf_counter() - started) / shape.time_scale
    await pool.close()
    ttfts.sort()
    return {
        "policy": policy,
        "p50": statistics.median(ttfts),
        "p99": ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))],
        "prefill": totals["prompt"] - totals["cached"],
        "throughput": totals["output"] / elapsed_sim_s,
        "hit": totals["cached"] / totals["prompt"],
    }


async def run_floor(shape: Shape, plans: list[dict]) -> dict:
    """Each turn alone on an idle worker that already holds everything its session sent
    before, the shared prompt included: the TTFT no routing can go below (the prompt's
    own prefill, nothing queued ahead of it) and the least prefill there is."""
    answers = Answers()
    engine = SimulatedEngine(
        CharTokens(),  # type: ignore[arg-type]  # only encode() is used
        answers,  # type: ignore[arg-type]
        block_size=shape.block_size,
        num_blocks=WORKERS * shape.kv_tokens // shape.block_size,
        max_model_len=shape.kv_tokens // 2,
        time_scale=0,
        cost=FLEET_COST,
    )
    ttfts, prefill = [], 0
    for plan in plans:
        for t, turn in enumerate(plan["turns"]):
            request_id = f"{plan['session']}-{t}"
            answers.lengths[request_id] = turn["output"]
            prompt = prompt_for(plan, t, "kv-aware")
            async for _ in engine.generate(
                EngineRequest(request_id, prompt, turn["output"] + 1, stop_token_ids=[STOP])
            ):
                pass
            timing = engine.timings[request_id]
            ttfts.append(timing.ttft_ms)
            prefill += timing.prompt_tokens - (timing.cached_tokens or 0)
    await engine.close()
    ttfts.sort()
    return {
        "p50": statistics.median(ttfts),
        "p99": ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))],
        "prefill": prefill,
    }


def plot(rows: list[dict], quick: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = OUT if quick else PLOTS
    folder.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    names = [r["policy"] for r in rows]
    x = range(len(rows))
    left.bar([i - 0.2 for i in x], [r["p50"] for r in rows], 0.4, label="TTFT p50", color="#4c78a8")
    left.bar([i + 0.2 for i in x], [r["p99"] for r in rows], 0.4, label="TTFT p99", color="#e45756")
    left.set_yscale("log")
    left.set_ylabel("simulated ms (log)")
    left.set_xticks(list(x), names, fontsize=8)
    left.legend(fontsize=8)
    left.set_title("TTFT", fontsize=10)
    right.bar(list(x), [r["prefill"] / 1e6 for r in rows], 0.6, color="#72b7b2")
    right.set_ylabel("million prompt tokens prefilled")
    right.set_xticks(list(x), names, fontsize=8)
    right.set_title("Prefill computed", fontsize=10)
    fig.suptitle(f"llm-d's agentic code-generation workload, {WORKERS} simulated workers", fontsize=10)
    fig.tight_layout()
    path = folder / "agentic_fleet.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small trace, a fast clock (CI smoke run)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--time-scale", type=float, help="real seconds per simulated second")
    args = parser.parse_args(argv)
    shape = QUICK if args.quick else FULL
    if args.time_scale:
        shape = shape._replace(time_scale=args.time_scale)
    plans = session_plan(shape, args.seed)
    print(
        f"{shape.sessions} sessions x {shape.turns} turns, shared prompt {shape.shared_tokens:,} tokens, "
        f"{WORKERS} simulated workers with {shape.kv_tokens:,} KV tokens each"
    )
    rows = [asyncio.run(run_policy(policy, shape, plans)) for policy in POLICIES]
    print(f"{'policy':<18}{'TTFT p50':>12}{'TTFT p99':>12}{'prefilled':>13}{'out tok/s':>11}{'cache hit':>11}")
    for r in rows:
        print(
            f"{r['policy']:<18}{r['p50']:>9,.0f} ms{r['p99']:>9,.0f} ms{r['prefill']:>13,}"
            f"{r['throughput']:>11,.0f}{r['hit']:>10.0%}"
        )
    floor = asyncio.run(run_floor(shape, plans))
    print(
        f"{'(floor)':<18}{floor['p50']:>9,.0f} ms{floor['p99']:>9,.0f} ms{floor['prefill']:>13,}"
        "   each turn alone on an idle worker holding its session"
    )
    by = {r["policy"]: r for r in rows}
    kv, rr, sa, lite = by["kv-aware"], by["round-robin"], by["session-affinity"], by["litellm-style"]
    ratio = rr["p50"] / kv["p50"]
    print(f"kv-aware / round-robin TTFT p50 = {ratio:.2f}x (round-robin p50 / kv-aware p50)")
    print(f"kv-aware / session-affinity TTFT p50 = {sa['p50'] / kv['p50']:.2f}x")
    print(
        f"TTFT p50 above the floor: kv-aware {kv['p50'] - floor['p50']:,.0f} ms, "
        f"session affinity {sa['p50'] - floor['p50']:,.0f} ms (the most any routing can still win)"
    )
    share = kv["prefill"] / lite["prefill"]
    print(f"prefill tokens kv-aware / litellm-style = {share:.2f}")
    met = ratio >= 5 and kv["p50"] < sa["p50"] and share <= 1 / 3
    print(
        "targets (>= 5x round-robin, better than session affinity, <= 1/3 of litellm-style's prefill): "
        + ("met" if met else "NOT met")
    )
    print(f"plot: {plot(rows, args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
