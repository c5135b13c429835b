"""Does a background request (Claude Code's title) hold up the user's turn on the
embedded engine?

SmolLM2-135M (the built-in model), on this machine's CPU. First the user's turn
alone, cold (its prefill time is its TTFT); then the same turn sent while a
background request is generating (2000 tokens asked, capped by the engine) and
while another foreground turn is generating. Prints the turn's TTFT in each case
and its ratio to the turn's own prefill. Before step scheduling the turn waited for
the whole title request.

    python benchmarks/embedded_scheduling.py [--turn-tokens 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time

from tokenyard.engines.base import EngineRequest
from tokenyard.engines.embedded import EmbeddedEngine, resolve_embedded_model
from tokenyard.prompting.tokenizer import Tokenizer


def prompt(tokenizer: Tokenizer, words: int, tag: str) -> list[int]:
    body = " ".join(f"note {tag}{i}: the build passes and the tests are green." for i in range(words // 10))
    text = f"<|im_start|>user\n{body}\nSummarise.<|im_end|>\n<|im_start|>assistant\n"
    return tokenizer.encode(text)


async def first_token_time(engine: EmbeddedEngine, request: EngineRequest) -> float:
    started = time.perf_counter()
    stream = engine.generate(request)
    await anext(stream)
    elapsed = time.perf_counter() - started
    await stream.aclose()
    return elapsed


async def main(turn_tokens: int) -> None:
    folder = resolve_embedded_model("smollm2")
    tokenizer = Tokenizer.from_model_dir(folder)
    stop = [tokenizer.token_to_id("<|im_end|>")]
    engine = EmbeddedEngine(folder, max_cache_tokens=0)  # no prefix reuse: every prefill is cold
    await engine.start()

    def request(ids: list[int], max_tokens: int, background: bool = False) -> EngineRequest:
        return EngineRequest("b", ids, max_tokens, stop_token_ids=stop, background=background)

    turn = prompt(tokenizer, turn_tokens // 2, "t")
    alone = await first_token_time(engine, request(turn, 1))
    print(f"turn of {len(turn)} tokens alone: TTFT (= its prefill) {alone:.2f} s")

    produced: list[int] = []

    async def generate(req: EngineRequest, running: asyncio.Event) -> None:
        async for chunk in engine.generate(req):
            produced.append(len(chunk.token_ids))
            running.set()

    for label, background in (("a background (title) request", True), ("another foreground turn", False)):
        running = asyncio.Event()
        task = asyncio.create_task(generate(request(prompt(tokenizer, 200, "o"), 2000, background), running))
        await running.wait()
        produced.clear()
        ttft = await first_token_time(engine, request(turn, 1))
        task.cancel()  # the other request is not what is measured
        with contextlib.suppress(asyncio.CancelledError):
            await task
        print(
            f"with {label} generating: turn TTFT {ttft:.2f} s = {ttft / alone:.2f}x its own prefill "
            f"(meanwhile the other produced {sum(produced)} tokens)"
        )
    await engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turn-tokens", type=int, default=4000)
    asyncio.run(main(parser.parse_args().turn_tokens))
