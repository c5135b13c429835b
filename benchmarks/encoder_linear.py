"""Stream encoders in linear time: one 1 MB tool argument (and 1 MB of text),
streamed token by token, through every API's encoder, against the parser's own time.

The output is rendered in a real tool-call format (hermes, the qwen3 family's), cut
into BPE-like tokens, and split into events by the OutputSplitter (timed: the
parser's own time). The same events then go through each API's encoder (timed).
Printed: seconds per stage, encoder/parser ratio (target: a small factor), and
time(full size)/time(size/8) per encoder (8.0 is linear; quadratic string building
would make it ~64).

Run: python benchmarks/encoder_linear.py [--quick] [--size BYTES]
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable
from typing import Any

from parsing_throughput import code, tokens_of

from tokenyard.apis.anthropic.stream import MessageStream
from tokenyard.apis.openai_chat.stream import ChatCompletionStream
from tokenyard.apis.openai_responses.stream import ResponseStream
from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import Call, Text, render_output
from tokenyard.events import Event, Finish, PromptProcessed
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds

TOOL = ToolSpec(
    name="write_file",
    description="Write a file.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
ENCODERS: dict[str, Callable[[], Any]] = {
    "anthropic": lambda: MessageStream("msg_bench", "m"),
    "openai_chat": lambda: ChatCompletionStream("chatcmpl-bench", "m", 0),
    "openai_responses": lambda: ResponseStream("resp_bench", {}, created_at=0),
}


def payload(size: int) -> str:
    rng = random.Random(7)
    text = ""
    while len(text) < size:
        text += code(rng, 200) + "\n"
    return text[:size]


def tokens(kind: str, size: int) -> list[str]:
    body = payload(size)
    segment = Call("write_file", {"path": "big.py", "content": body}) if kind == "argument" else Text(body)
    return tokens_of(render_output([segment], "hermes", None))


def parse(toks: list[str]) -> tuple[list[Event], float]:
    gc.collect()
    start = time.process_time()
    splitter = OutputSplitter(None, "hermes", tools=[TOOL], call_ids=CallIds(nonce="bench"))
    events: list[Event] = [PromptProcessed(100, 0)]
    for token in toks:
        events.extend(splitter.feed(token))
    events.extend(splitter.finish())
    events.append(Finish("tool_calls" if any(type(e).__name__ == "ToolCallReady" for e in events) else "stop"))
    return events, time.process_time() - start


def encode(name: str, events: list[Event]) -> float:
    gc.collect()
    start = time.process_time()
    encoder = ENCODERS[name]()
    for event in events:
        encoder.feed(event)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="128 KB instead of 1 MB")
    parser.add_argument("--size", type=int, default=None, help="bytes of argument / text")
    args = parser.parse_args(argv)
    size = args.size or (128 * 1024 if args.quick else 1024 * 1024)
    print(f"{'case':<10} {'stage':<18} {'seconds':>9} {'x parser':>9} {'full/eighth':>12}")
    for kind in ("argument", "text"):
        full, eighth = tokens(kind, size), tokens(kind, size // 8)
        events, parse_s = parse(full)
        small_events, small_parse_s = parse(eighth)
        print(f"{kind:<10} {'parser':<18} {parse_s:>9.3f} {1.0:>9.2f} {parse_s / max(small_parse_s, 1e-9):>12.1f}")
        for name in ENCODERS:
            seconds = encode(name, events)
            small = encode(name, small_events)
            print(
                f"{kind:<10} {name:<18} {seconds:>9.3f} {seconds / parse_s:>9.2f} {seconds / max(small, 1e-9):>12.1f}"
            )
    print(f"({size} bytes, {len(full)} tokens of text; full/eighth: 8.0 is linear, ~64 quadratic)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
