"""Prefill and decode tokens/s of a built-in model on the embedded CPU engine, and
the time a cold agent turn would take from them.

Converts the model on first use (README, *Built-in models*). Prints the load
average with every figure: on a shared machine the rates move with it.

    python benchmarks/builtin_throughput.py [--model qwen2.5-coder-1.5b] [--prompt-tokens 2048]
        [--decode-tokens 32] [--threads N] [--agent-prompt-tokens 11600]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from tokenyard.engines.base import EngineRequest
from tokenyard.engines.embedded import EmbeddedEngine
from tokenyard.models.resolve import resolve_model_dir
from tokenyard.prompting.tokenizer import Tokenizer

PROSE = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


async def measure(args: argparse.Namespace) -> None:
    folder = resolve_model_dir(args.model)
    tokenizer = Tokenizer.from_model_dir(folder)
    ids = (tokenizer.encode(PROSE) * (1 + args.prompt_tokens // 1000))[: args.prompt_tokens]
    engine = EmbeddedEngine(folder, threads=args.threads)
    started = time.perf_counter()
    await engine.start()
    print(f"{args.model}: loaded in {time.perf_counter() - started:.1f}s, {engine.threads} thread(s)")
    request = EngineRequest(request_id="bench", prompt_token_ids=ids, max_tokens=args.decode_tokens)
    started = time.perf_counter()
    first = None
    produced = 0
    async for chunk in engine.generate(request):
        if chunk.token_ids:
            first = first or time.perf_counter()
            produced += len(chunk.token_ids)
    done = time.perf_counter()
    await engine.close()
    assert first is not None
    prefill = len(ids) / (first - started)
    decode = (produced - 1) / (done - first) if produced > 1 else float("nan")
    print(f"prefill {len(ids)} tokens: {prefill:.1f} tokens/s   (load average {load_average()})")
    print(f"decode {produced - 1} tokens: {decode:.2f} tokens/s   (load average {load_average()})")
    cold = args.agent_prompt_tokens / prefill + 40 / decode
    print(f"a cold {args.agent_prompt_tokens}-token agent turn with a 40-token call: ~{cold:.0f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--prompt-tokens", type=int, default=2048)
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--agent-prompt-tokens", type=int, default=11600)
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
