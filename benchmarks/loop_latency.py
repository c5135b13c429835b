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

`--baseline SRC` compares another tree's `src/` (an older commit, `git archive`d)
with this one instead, both offloaded, in alternating rounds (`--rounds`): other
work on a shared machine then loads both alike. For each mode's worst probe, the
time of the server's event-loop thread during it is split (Linux schedstat) into
on a CPU (the loop's own callbacks), waiting for a core (the machine's load) and
blocked (waiting for the GIL or a lock a worker thread holds, or idle: the probe
not yet sent), beside this client's own thread (on a CPU, waiting for a core), the
loop's own worst lag meanwhile, and every garbage collection of 1 ms or more in
either process meanwhile (gc.callbacks: a full collection holds the GIL while it
walks every tracked container). "gc max" is the server's longest collection;
"blocked" the longest probe time the server's blocking can account for (the probe's
time less the loop's time on a CPU and both threads' waits for a core: on a loaded
machine, where the worst probes are waits for a core, the figure that compares trees).

`--watchdog FILE` finds what a stall waits on: the server's loop re-arms a
`faulthandler` timer every 10 ms, so when it misses 100 ms every thread's Python
stack is written to FILE.<mode> (the frame that called a GIL-holding C function,
for one). `--gil-holds FILE` finds each wait for the GIL over 20 ms, what held it,
and whether the holder was running meanwhile or itself waiting for a core.

Targets with offload on: /health p99 < 50 ms, and no single stall over 100 ms.
Run: python benchmarks/loop_latency.py [--quick] [--hostile] [--baseline SRC [--rounds N]]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, fixture_model, free_port  # noqa: E402

MODEL = "test/model"
PROBE_INTERVAL = 0.01
TARGET_MS = 50.0
MAX_STALL_MS = 100.0
GIL_HOLD_MS = 20.0


def big_body(megabytes: float) -> dict:
    line = "The service writes its logs to /var/log/app.log and rotates them daily at midnight.\n"
    text = line * max(1, int(megabytes * 1_000_000 / len(line)))
    return {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": text}]}


def hostile_payloads() -> list[tuple[str, bytes]]:
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


# `tokenyard serve` whose event loop times its own 10 ms sleeps: when and how late each
# wake-up is, the loop's lag as it sees it (no client or socket in the way), is
# written to $LOOP_LAGS at shutdown. With $LOOP_WATCHDOG, each wake-up also re-arms a
# faulthandler dump of every thread's stack, which fires when the loop misses
# MAX_STALL_MS. With $GIL_HOLDS, a thread wakes every 2 ms: when it waited more than
# GIL_HOLD_MS for the GIL (its wait for a core, from schedstat, taken out), what every
# other thread is running as it gets the GIL (the holder's frame just after the call
# that held it) and its time on a CPU meanwhile (a holder that was itself waiting
# for a core held it for want of CPU, not for a long call) are written there.
SERVE = """
import asyncio, faulthandler, gc, json, os, sys, threading, time, traceback
from tokenyard import cli
from tokenyard.server import graceful

if os.environ.get("GC_PAUSES"):
    gc_out = open(os.environ["GC_PAUSES"], "a")
    gc_started = {}

    def gc_timer(phase, info):
        if phase == "start":
            gc_started[threading.get_ident()] = (time.time(), time.perf_counter(), time.thread_time())
            return
        at, began, cpu = gc_started.pop(threading.get_ident(), (0.0, time.perf_counter(), time.thread_time()))
        ms, cpu_ms = (time.perf_counter() - began) * 1000, (time.thread_time() - cpu) * 1000
        if ms >= 1:
            gc_out.write(json.dumps([at, ms, cpu_ms, info["generation"], threading.current_thread().name]) + "\\n")
            gc_out.flush()

    gc.callbacks.append(gc_timer)


def gil_holds(path, threshold):
    out = open(path, "a")
    me = threading.get_native_id()

    def schedstat():  # every thread's time on a CPU and waiting for one, in ms
        times = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    cpu, queued = f.read().split()[:2]
            except OSError:
                continue
            times[int(tid)] = (int(cpu) / 1e6, int(queued) / 1e6)
        return times

    while True:
        before, slept = schedstat(), time.perf_counter()
        time.sleep(0.002)
        gap = (time.perf_counter() - slept) * 1000 - 2
        after = schedstat()
        waited = after[me][1] - before[me][1]
        if gap - waited > threshold:
            frames = sys._current_frames()
            out.write(f"GIL held {gap - waited:.0f} ms (waiting for a core {waited:.0f} ms)\\n")
            for thread in threading.enumerate():
                frame = frames.get(thread.ident)
                if frame is None or thread.native_id == me:
                    continue
                cpu = after.get(thread.native_id, (0, 0))[0] - before.get(thread.native_id, (0, 0))[0]
                out.write(f"on a CPU {cpu:.0f} ms:\\n" + "".join(traceback.format_stack(frame)[-3:]) + "--\\n")
            out.flush()


if os.environ.get("GIL_HOLDS"):
    threading.Thread(target=gil_holds, args=(os.environ["GIL_HOLDS"], float(os.environ["GIL_HOLD_MS"])), daemon=True).start()

dumps = open(os.environ["LOOP_WATCHDOG"], "a") if os.environ.get("LOOP_WATCHDOG") else None
serve = graceful.GracefulServer.serve

async def watched(self, sockets=None):
    lags = []

    async def watch():
        while True:
            if dumps:
                faulthandler.dump_traceback_later(float(os.environ["MAX_STALL_MS"]) / 1000, file=dumps)
            slept = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append((time.time(), (time.perf_counter() - slept - 0.01) * 1000))

    task = asyncio.get_running_loop().create_task(watch())
    try:
        await serve(self, sockets)
    finally:
        task.cancel()
        with open(os.environ["LOOP_LAGS"], "w") as out:
            json.dump(lags, out)

graceful.GracefulServer.serve = watched
sys.exit(cli.main(sys.argv[1:]))
"""


class Server:
    def __init__(
        self, offload: bool, src: Path = REPO / "src", watchdog: Path | None = None, gil_holds: Path | None = None
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [
            sys.executable,
            "-c",
            SERVE,
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
        env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.lags_file = Path(tempfile.mkstemp(prefix="loop-lags-", suffix=".json")[1])
        self.gc_file = Path(tempfile.mkstemp(prefix="gc-pauses-", suffix=".jsonl")[1])
        env.update(
            LOOP_LAGS=str(self.lags_file),
            GC_PAUSES=str(self.gc_file),
            MAX_STALL_MS=str(MAX_STALL_MS),
            GIL_HOLD_MS=str(GIL_HOLD_MS),
        )
        if watchdog:
            env["LOOP_WATCHDOG"] = str(watchdog)
        if gil_holds:
            env["GIL_HOLDS"] = str(gil_holds)
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

    def stop(self) -> tuple[list[tuple[float, float]], list[GcPause]]:
        """Stop the server; when its loop woke and how late (ms; none if it had to be
        killed), and its garbage collections of 1 ms or more."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        text = self.lags_file.read_text()
        self.lags_file.unlink()
        pauses = [GcPause(*json.loads(line)) for line in self.gc_file.read_text().splitlines()]
        self.gc_file.unlink()
        return (json.loads(text) if text else []), pauses


class GcPause(NamedTuple):
    at: float  # time.time() at its start
    ms: float
    cpu_ms: float  # of it on a CPU (the rest: its thread waiting for a core)
    generation: int
    thread: str


class GcTimer:
    """This process's garbage collections of 1 ms or more (gc.callbacks)."""

    def __init__(self) -> None:
        self.pauses: list[GcPause] = []
        self._started = (0.0, 0.0, 0.0)

    def __enter__(self) -> GcTimer:
        gc.callbacks.append(self._on_gc)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = (time.time(), time.perf_counter(), time.thread_time())
            return
        at, began, cpu = self._started
        ms = (time.perf_counter() - began) * 1000
        if ms >= 1:
            self.pauses.append(GcPause(at, ms, (time.thread_time() - cpu) * 1000, info["generation"], "client"))


class LoopThread:
    """An event-loop thread (the server's: uvicorn runs the loop on the main thread;
    or this client's): its time on a CPU and waiting for one so far, in ns, from
    Linux's schedstat."""

    def __init__(self, pid: int, tid: int | None = None):
        self.path = Path(f"/proc/{pid}/task/{tid or pid}/schedstat")

    def read(self) -> tuple[int, int]:
        try:
            on_cpu, waiting, _ = self.path.read_text().split()
        except (OSError, ValueError):
            return 0, 0
        return int(on_cpu), int(waiting)


class Probe:
    """One /health answer: when it was sent (time.time()), its latency, and the
    server's loop thread's time on a CPU and waiting for one while it was awaited,
    and this client's (ms; 0 without schedstat)."""

    def __init__(self, at: float, ms: float, server: tuple[float, float], client: tuple[float, float]):
        self.at, self.ms = at, ms
        (self.cpu_ms, self.runqueue_ms), (self.client_cpu_ms, self.client_runqueue_ms) = server, client

    def blocked_ms(self) -> float:
        """Its time with neither the server's loop nor this client on a CPU or waiting
        for a core: what the server's own blocking (the GIL, a collection) cost it. A
        lower bound: the two threads' waits may overlap."""
        return max(0.0, self.ms - self.cpu_ms - self.runqueue_ms - self.client_runqueue_ms)

    def breakdown(self, lags: list[tuple[float, float]], gc_pauses: list[GcPause]) -> str:
        """Where its time went: the server loop's thread (schedstat), the loop's own
        worst lag meanwhile, this client's thread, and garbage collections meanwhile."""
        blocked = max(0.0, self.ms - self.cpu_ms - self.runqueue_ms)
        end = self.at + self.ms / 1000
        # A lag is recorded when the loop wakes: one that overlaps the probe ends after it started.
        lag = max((ms for woke, ms in lags if self.at <= woke <= end + ms / 1000 + 0.01), default=0.0)
        lag = max(lag, 0.0)  # a sleep may wake a hair early
        pauses = [p for p in gc_pauses if p.at <= end and p.at + p.ms / 1000 >= self.at]
        collected = (
            ", ".join(f"{p.thread} gen {p.generation} {p.ms:.0f} ms ({p.cpu_ms:.0f} on a CPU)" for p in pauses)
            or "none over 1 ms"
        )
        return (
            f"server loop on a CPU {self.cpu_ms:.0f} ms, waiting for a core {self.runqueue_ms:.0f} ms, "
            f"blocked {blocked:.0f} ms; its own worst lag meanwhile {lag:.0f} ms; client on a CPU "
            f"{self.client_cpu_ms:.0f} ms, waiting for a core {self.client_runqueue_ms:.0f} ms; gc: {collected}"
        )


async def measure(
    url: str, bodies: list[tuple[str, bytes]], loop_thread: LoopThread
) -> tuple[list[Probe], list[int], tuple[float, float]]:
    """Send every body at once; probe /health until they are all answered. Returns the
    probes, the big requests' statuses, and when (time.time()) they were sent and answered."""
    limits = httpx.Limits(max_connections=len(bodies) + 4)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        await client.get("/health")
        started = time.time()
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "x"}
        tasks = [asyncio.create_task(client.post(path, content=body, headers=headers)) for path, body in bodies]
        probes: list[Probe] = []
        me = LoopThread(os.getpid(), threading.get_native_id())
        while not all(t.done() for t in tasks):
            server_before, client_before = loop_thread.read(), me.read()
            at, sent = time.time(), time.perf_counter()
            await client.get("/health")
            took = (time.perf_counter() - sent) * 1000
            server_after, client_after = loop_thread.read(), me.read()
            probes.append(
                Probe(
                    at,
                    took,
                    ((server_after[0] - server_before[0]) / 1e6, (server_after[1] - server_before[1]) / 1e6),
                    ((client_after[0] - client_before[0]) / 1e6, (client_after[1] - client_before[1]) / 1e6),
                )
            )
            await asyncio.sleep(PROBE_INTERVAL)
        statuses = [(await t).status_code for t in tasks]
        return probes, statuses, (started, time.time())


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
    parser.add_argument("--baseline", type=Path, help="another tree's src/ to compare with this one, both offloaded")
    parser.add_argument("--rounds", type=int, default=1, help="with --baseline: alternating rounds of the two")
    parser.add_argument("--watchdog", type=Path, help="write every thread's stack at each stall to FILE.<mode>")
    parser.add_argument(
        "--gil-holds", type=Path, help=f"write what held the GIL over {GIL_HOLD_MS:.0f} ms to FILE.<mode>"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.body_mb, args.render_tokens, args.bodies, args.renders = 1.0, 5_000, 1, 1
    payloads = [("/v1/messages", json.dumps(big_body(args.body_mb)).encode())] * args.bodies + [
        ("/v1/messages/count_tokens", json.dumps(many_turns(args.render_tokens)).encode())
    ] * args.renders
    if args.hostile:
        payloads += hostile_payloads()
    print(
        f"/health every {PROBE_INTERVAL * 1000:.0f} ms while {args.bodies} x {args.body_mb:g} MB Messages bodies and "
        f"{args.renders} x ~{args.render_tokens // 1000}K-token count_tokens renders are in flight"
    )
    if args.baseline:
        modes = [("baseline", args.baseline, True), ("this tree", REPO / "src", True)] * args.rounds
    else:
        modes = [("offload", REPO / "src", True), ("on-loop", REPO / "src", False)]
    print(
        f"{'mode':<12} {'probes':>7} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9} {'blocked':>8} {'loop max':>9} "
        f"{'gc max':>7} {'load s':>8} {'loadavg':>8}  statuses"
    )
    results: dict[str, list[float]] = {}
    worst: list[tuple[str, str]] = []
    with GcTimer() as client_gc:
        for name, src, offload in modes:
            suffix = name.replace(" ", "-")
            dumps = args.watchdog.with_name(f"{args.watchdog.name}.{suffix}") if args.watchdog else None
            holds = args.gil_holds.with_name(f"{args.gil_holds.name}.{suffix}") if args.gil_holds else None
            server = Server(offload, src, dumps, holds)
            try:
                server.wait_ready()
                probes, statuses, (started, ended) = asyncio.run(
                    measure(server.url, payloads, LoopThread(server.process.pid))
                )
            finally:
                lags, server_gc = server.stop()
            latencies = [p.ms for p in probes]
            loop_max = max((lag for at, lag in lags if started <= at <= ended), default=0.0)
            gc_max = max((p.ms for p in server_gc if started <= p.at <= ended), default=0.0)
            results.setdefault(name, []).extend(latencies)
            probe = max(probes, key=lambda p: p.ms)
            worst.append((name, f"{probe.ms:.0f} ms: {probe.breakdown(lags, server_gc + client_gc.pauses)}"))
            client_gc.pauses.clear()
            blocked = max(p.blocked_ms() for p in probes)
            print(
                f"{name:<12} {len(latencies):>7} {statistics.median(latencies):>9.1f} {percentile(latencies, 0.99):>9.1f} "
                f"{max(latencies):>9.1f} {blocked:>8.1f} {loop_max:>9.1f} {gc_max:>7.1f} {ended - started:>8.1f} "
                f"{os.getloadavg()[0]:>8.1f}  {sorted(set(statuses))}"
            )
    for name, line in worst:
        print(f"{name}: worst probe {line}")
    if args.baseline:
        for name, latencies in results.items():
            print(
                f"{name}, all rounds: p50 {statistics.median(latencies):.1f} ms, p99 "
                f"{percentile(latencies, 0.99):.1f} ms, worst {max(latencies):.0f} ms"
            )
        stall = max(results["this tree"])
    else:
        on, off = percentile(results["on-loop"], 0.99), percentile(results["offload"], 0.99)
        verdict = "meets" if off < TARGET_MS else "misses"
        print(f"p99 on-loop / offload: {on / off:.1f}x; offload {verdict} the {TARGET_MS:.0f} ms target")
        stall = max(results["offload"])
    verdict = "meets" if stall <= MAX_STALL_MS else "misses"
    print(f"worst single stall with offload: {stall:.0f} ms; {verdict} the {MAX_STALL_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    # The client's own full collections would stall its probes (one of 156 ms was
    # seen): what its start-up built is kept out of the collector's sight, as the
    # server does.
    gc.collect()
    gc.freeze()
    sys.exit(main())
