"""TTFT of the next agent turn when earlier reasoning is replayed exactly vs mutated.

A Claude Code session: a long system prompt and tools, then tool-calling turns,
each with ~500 tokens of thinking, a Bash call and its output. The next turn's
request replays that history. tokenyard restores each thinking block byte for byte
from its sealed signature, so the prompt extends the previous one and the engine
reuses its KV cache up to the new tool result. A frontend that re-serialises or
drops reasoning (here: the first turn's thinking text altered, its signature lost)
changes the prompt at the first thinking block, and everything after it — every
later turn — is prefilled again.

Side by side on fresh simulated engines (B200-like cost model): the next turn with
the history preserved, mutated, and the same request again (a fully cached
prefix, the reference the preserved path should match). Seed: 167 ms unchanged vs
322 ms mutated (1.9x).
Run: python benchmarks/ttft_reasoning_replay.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import calibrated_claude_code_body, fixture_model, save_bar_plot, serve, stream_ttft  # noqa: E402

MODEL = "Qwen/Qwen3-8B"
THOUGHT = (
    "The failing assertion compares the parsed header against the fixture, so the parser must be dropping the "
    "trailing field. I will check how the tokenizer splits the input, then confirm with a focused test run. "
)


def script(turns: int, thinking_words: int) -> list:
    thinking = " ".join((THOUGHT * (thinking_words // len(THOUGHT.split()) + 1)).split()[:thinking_words])
    return [
        [
            {"reasoning": f"Step {n}: {thinking}"},
            {"call": {"name": "Bash", "arguments": {"command": f"pytest -x tests/test_{n}.py"}}},
        ]
        for n in range(turns)
    ] + [
        [
            {
                "reasoning": "Done.",
            },
            {"text": "All tests pass now."},
        ]
    ]


def assistant_turn(events: list[dict]) -> list[dict]:
    """The assistant content blocks, rebuilt from the SSE events as a client would."""
    blocks: list[dict] = []
    partial: dict[int, str] = {}
    for event in events:
        if event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text)
    return blocks


def run_session(url: str, prefix_tokens: int, turns: int, result_lines: int) -> tuple[dict, dict]:
    body, headers = calibrated_claude_code_body(url, MODEL, "a3f", "Make the test suite pass.", prefix_tokens, "replay")
    body["thinking"] = {"type": "adaptive"}
    messages = body["messages"]
    for n in range(turns):
        _, _, events = stream_ttft(url, "/v1/messages?beta=true", {**body, "messages": messages}, headers)
        blocks = assistant_turn(events)
        call = next(b for b in blocks if b["type"] == "tool_use")
        # Earlier tool outputs are long (test logs); the newest is short, as in the
        # seed, whose unchanged next turn cost the same as a fully cached one.
        lines = result_lines if n < turns - 1 else 3
        output = "\n".join(f"tests/test_{n}.py::test_case_{i} PASSED [{i}%]" for i in range(lines))
        messages = messages + [
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]},
        ]
    return {**body, "messages": messages}, headers


def mutate_first_thinking(body: dict) -> dict:
    messages = json.loads(json.dumps(body["messages"]))
    for message in messages:
        if message["role"] == "assistant":
            for block in message["content"]:
                if block["type"] == "thinking":
                    block["thinking"] = block["thinking"].replace("  ", " ").strip() + " "
                    block["signature"] = ""  # lost by a frontend that rebuilt the block
                    return {**body, "messages": messages}
    raise AssertionError("no thinking block to mutate")


def measure(prefix_tokens: int, turns: int, result_lines: int, time_scale: float) -> dict[str, dict]:
    from tokenyard.settings import ModelSettings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.json"
        path.write_text(json.dumps(script(turns, 380)))
        settings = ModelSettings(
            model=str(fixture_model("qwen3")),
            engine="simulated",
            served_model_names=(MODEL,),
            script=path,
            time_scale=time_scale,
            max_model_len=131_072,
        )
        results: dict[str, dict] = {}
        for condition in ("preserved", "mutated"):
            with serve(settings) as (url, state):
                body, headers = run_session(url, prefix_tokens, turns, result_lines)
                request = body if condition == "preserved" else mutate_first_thinking(body)
                for label in (condition, "fully cached") if condition == "preserved" else (condition,):
                    _, _, events = stream_ttft(url, "/v1/messages?beta=true", request, headers)
                    usage = next(e for e in events if e["type"] == "message_start")["message"]["usage"]
                    timing = list(state.pipeline.engine.timings.values())[-1]
                    results[label] = {
                        "prompt": usage["input_tokens"] + usage["cache_read_input_tokens"],
                        "cached": usage["cache_read_input_tokens"],
                        "ttft_ms": timing.ttft_ms,
                    }
        return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small prompt, fast clock (CI smoke run)")
    args = parser.parse_args(argv)
    prefix, turns, lines, scale = (4_000, 2, 10, 0.05) if args.quick else (44_000, 4, 100, 1.0)
    results = measure(prefix, turns, lines, scale)
    print(
        f"simulated engine (B200-like cost model): turn {turns + 1} of a Claude Code session, ~{prefix // 1000}K-token "
        f"system+tools, {turns} earlier turns with ~500 tokens of thinking each"
    )
    for label, row in results.items():
        print(
            f"  {label:<13} prompt {row['prompt']:>7,}  cached {row['cached']:>7,}  recomputed {row['prompt'] - row['cached']:>6,}  "
            f"TTFT {row['ttft_ms']:7.1f} ms simulated"
        )
    ratio = results["mutated"]["ttft_ms"] / results["preserved"]["ttft_ms"]
    gap = results["preserved"]["ttft_ms"] / results["fully cached"]["ttft_ms"]
    print(f"  mutated / preserved = {ratio:.2f}x (seed 1.9x); preserved / fully cached = {gap:.2f}x")
    path = save_bar_plot(
        "ttft_reasoning_replay",
        f"Turn {turns + 1} TTFT: prior thinking preserved vs mutated (simulated)",
        list(results),
        [r["ttft_ms"] for r in results.values()],
        quick=args.quick,
    )
    print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
