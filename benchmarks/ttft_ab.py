"""Added time to the first token, tree against tree: the fast stand-in engine
(benchmarks/fast_engine.py) called directly and through tokenyard servers of several
trees at once, one request each per round, the order shuffled every round.

Every tree is served from a copy of its own (`src`: this checkout's src/; anything
else: `git archive` of that ref), so no tree is favoured by where it is served from
(gateway_overhead.py serves this tree from src/ and the baseline from an archive,
which its bursting mode is known to favour). Name a ref twice for an A/A check.
Only the time to the first content event is measured, over more rounds than
gateway_overhead.py takes, so differences of ~0.1 ms show. Under load from other
processes, whether a change helps can depend on whether a core is free while the
engine works; `chrt -f 5 python benchmarks/ttft_ab.py ...` runs all of it ahead of
the other processes, the nearest a shared machine gets to an idle one.

Run: python benchmarks/ttft_ab.py [--rounds 300] [--engine-pause 5] [REF ...]   (default: main src)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, fixture_model, free_port  # noqa: E402
from gateway_overhead import ANSWER, SYSTEM, baseline_tree, process, timed_stream, tokenyard_server  # noqa: E402


def tree(ref: str, into: Path) -> Path | None:
    into.mkdir()
    if ref == "src":
        shutil.copytree(REPO / "src", into / "src")
        return into / "src"
    return baseline_tree(ref, into)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("refs", nargs="*", default=["main", "src"], help="git refs, or src for this checkout")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--engine-pause", type=float, default=0.0, metavar="MS", help="pause after the first token")
    args = parser.parse_args(argv)
    from tokenyard.prompting.tokenizer import Tokenizer

    model_dir = fixture_model("qwen3")
    tokenizer = Tokenizer.from_model_dir(model_dir)
    ids = tokenizer.encode(ANSWER)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        answer = Path(tmp) / "answer.json"
        answer.write_text(json.dumps({"token_ids": ids, "texts": [tokenizer.decode([i]) for i in ids]}))
        port = free_port()
        engine = f"http://127.0.0.1:{port}"
        argv_engine = [sys.executable, str(REPO / "benchmarks/fast_engine.py"), "--port", str(port)]
        argv_engine += ["--answer-file", str(answer), "--pause-after-first", str(args.engine_pause)]
        stack.enter_context(process(argv_engine, f"{engine}/v1/models"))
        urls = {"direct": f"{engine}/v1/chat/completions"}
        for n, ref in enumerate(args.refs):
            name = ref if ref not in urls else f"{ref} ({n + 1})"
            src = tree(ref, Path(tmp) / f"tree{n}")
            if src is None:
                return 1
            served = free_port()
            stack.enter_context(
                process(
                    tokenyard_server(model_dir, engine, served),
                    f"http://127.0.0.1:{served}/health",
                    env={"PYTHONPATH": str(src)},
                )
            )
            urls[name] = f"http://127.0.0.1:{served}/v1/messages"
        messages = [{"role": "user", "content": "Explain streaming."}]
        anthropic = {"model": "bench-model", "stream": True, "max_tokens": len(ids), "system": SYSTEM}
        anthropic["messages"] = messages
        chat = {"model": "fast", "stream": True, "max_tokens": len(ids)}
        chat["messages"] = [{"role": "system", "content": SYSTEM}, *messages]
        headers = {"anthropic-version": "2023-06-01"}
        clients = {name: stack.enter_context(httpx.Client(timeout=60)) for name in urls}
        ttft: dict[str, list[float]] = {name: [] for name in urls}

        def one(name: str) -> float:
            body = chat if name == "direct" else anthropic
            return timed_stream(clients[name], urls[name], body, headers)[0] * 1000

        for _ in range(20):  # warm-up: connections, caches
            for name in urls:
                one(name)
        for _ in range(args.rounds):
            order = list(urls)
            random.shuffle(order)
            for name in order:
                ttft[name].append(one(name))
    pace = f"the rest {args.engine_pause:g} ms after the first token" if args.engine_pause else "bursting"
    print(f"time to the first token, {args.rounds} shuffled rounds, stand-in {pace}, load {os.getloadavg()[0]:.2f}")
    print(f"  {'path':20} {'median':>8} {'added':>8} {'p25':>8} {'p75':>8}")
    direct = statistics.median(ttft["direct"])
    for name, values in ttft.items():
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        median = statistics.median(values)
        print(f"  {name:20} {median:8.3f} {median - direct:8.3f} {quartiles[0]:8.3f} {quartiles[2]:8.3f}  ms")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
