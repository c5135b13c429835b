"""The two CPU engines side by side in one run: the embedded engine (transformers,
bf16, in process) and llama.cpp (`llama-server`, the GGUF as shipped, driven as
`--engine llama.cpp` drives it), same model, same prompt tokens, at 1 and 2 threads.

Prefill tok/s: a prompt of `--prompt-tokens` with one token out (each run's prompt
starts differently, so no prefix cache helps). Decode tok/s: `--decode-tokens` out
after a short prompt, from the first token to the last. Both measured the same way,
end to end through each engine's `generate`, and printed with the load average: on a
shared machine the rates move with it, so compare the two columns of one run, not
runs.

    python benchmarks/cpu_engines.py [--model smollm2|qwen2.5-coder-1.5b] [--quick]
        [--threads 1,2] [--prompt-tokens 512] [--decode-tokens 64]

llama-server comes from PATH or scripts/install_llama_cpp.sh's build.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from tokenyard.engines.base import Engine, EngineRequest
from tokenyard.engines.embedded import EmbeddedEngine
from tokenyard.engines.llama_server import LlamaServerEngine, find_llama_server
from tokenyard.models.builtin import builtin_gguf
from tokenyard.models.cache import cache_root
from tokenyard.models.resolve import resolve_model_dir
from tokenyard.prompting.tokenizer import Tokenizer

PROSE = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


async def _timed(engine: Engine, ids: list[int], out: int, tag: str) -> tuple[float, float, int]:
    """(seconds to the first token, seconds from it to the last, tokens out)."""
    request = EngineRequest(request_id=tag, prompt_token_ids=ids, max_tokens=out, temperature=0.0)
    started = time.perf_counter()
    first: float | None = None
    count = 0
    async for chunk in engine.generate(request):
        if chunk.token_ids and first is None:
            first = time.perf_counter()
        count += len(chunk.token_ids)
    ended = time.perf_counter()
    first = first if first is not None else ended
    return first - started, ended - first, count


async def measure(engine: Engine, ids: list[int], prompt_tokens: int, decode_tokens: int) -> tuple[float, float]:
    """(prefill tok/s, decode tok/s) of one started engine."""
    await _timed(engine, ids[1:9], 2, "warm-up")
    # A different first token each run: nothing of the prompt is in a prefix cache.
    shift = int(time.monotonic_ns() % 997)
    prompt = [ids[(shift + i) % len(ids)] for i in range(prompt_tokens)]
    ttft, _, _ = await _timed(engine, prompt, 1, "prefill")
    _, decoding, count = await _timed(engine, ids[shift : shift + 16], decode_tokens, "decode")
    return prompt_tokens / ttft, (count - 1) / decoding if count > 1 and decoding > 0 else 0.0


async def run(args: argparse.Namespace) -> int:
    folder = resolve_model_dir(args.model)
    ids = Tokenizer.from_model_dir(folder).encode(PROSE)
    binary = find_llama_server(cache_root())
    gguf = builtin_gguf(args.model)
    print(
        f"{args.model}: prompt {args.prompt_tokens} tokens, decode {args.decode_tokens} tokens; llama-server {binary}"
    )
    print(f"{'engine':<28} {'threads':>7} {'prefill tok/s':>14} {'decode tok/s':>13}  load average")
    rows: dict[tuple[str, int], tuple[float, float]] = {}
    for threads in args.threads:
        engines: list[tuple[str, Engine]] = [
            ("embedded (transformers bf16)", EmbeddedEngine(folder, threads=threads)),
            (f"llama.cpp ({gguf.stem.rsplit('.', 1)[-1]})", LlamaServerEngine(binary, gguf, context=4096, slots=1, threads=threads)),
        ]  # fmt: skip
        for name, engine in engines:
            await engine.start()
            try:
                rates = await measure(engine, ids, args.prompt_tokens, args.decode_tokens)
            finally:
                await engine.close()
            rows[(name.split()[0], threads)] = rates
            print(f"{name:<28} {threads:>7} {rates[0]:>14.1f} {rates[1]:>13.1f}  {load_average()}")
    for threads in args.threads:
        embedded, llama = rows[("embedded", threads)], rows[("llama.cpp", threads)]
        print(
            f"llama.cpp / embedded at {threads} thread(s): prefill {llama[0] / embedded[0]:.2f}x, "
            f"decode {llama[1] / embedded[1]:.2f}x"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2", choices=["smollm2", "qwen2.5-coder-1.5b"])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="a short prompt and decode (smoke test)")
    args = parser.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    if args.quick:
        args.prompt_tokens, args.decode_tokens = 64, 8
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
