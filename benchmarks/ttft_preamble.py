"""TTFT of a second Claude Code session, billing header stripped vs kept.

Two Claude Code sessions differ in the `x-anthropic-billing-header` at the very start
of their system prompt (its 3-hex suffix comes from the first user prompt). Kept,
it breaks the prefix match at token zero: the second session prefills its whole
system prompt and tools again. Stripped (tokenyard's default), the second session
reuses the first's KV cache for everything up to its own user message.

Both conditions run side by side in one process, each against a fresh engine, with
request bodies shaped like Claude Code 2.1.330's and system+tools scaled to the
target size:
- the simulated engine (B200-like cost model, engines/simulated.py): simulated TTFT
  (the engine's model) and the wall-clock TTFT seen by the client;
- a real engine: the embedded CPU engine with a tiny random-weight Qwen3 (real Qwen3
  tokenizer and chat template) at >= 16K tokens; its TTFT is the time to
  `message_start`, which it sends with its first generated token.

Target on the simulated engine: >= 5x (the seed: 912 ms vs 168 ms on B200).
Run: python benchmarks/ttft_preamble.py [--quick] [--skip-real]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import calibrated_claude_code_body, fixture_model, save_bar_plot, serve, stream_ttft  # noqa: E402

MODEL = "Qwen/Qwen3-8B"


def second_session_ttft(settings, target_tokens: int, first_event: str = "content") -> dict:
    """Session A warms the engine; returns session B's timings."""
    with serve(settings) as (url, state):
        first, headers_a = calibrated_claude_code_body(
            url, MODEL, "a3f", "Fix the failing test in app.py.", target_tokens, "session-a"
        )
        second, headers_b = calibrated_claude_code_body(
            url, MODEL, "9c0", "Add a usage section to the README.", target_tokens, "session-b"
        )
        # Claude Code asks for 32000 tokens; a random-weight model would use them all.
        # The answer's length does not change the time to its first token.
        first["max_tokens"] = second["max_tokens"] = 16
        stream_ttft(url, "/v1/messages?beta=true", first, headers_a)
        wall_ttft, _, events = stream_ttft(url, "/v1/messages?beta=true", second, headers_b, first=first_event)
        start = next(e for e in events if e["type"] == "message_start")["message"]["usage"]
        engine = state.pipeline.engine
        simulated = None
        if hasattr(engine, "timings") and engine.timings:
            simulated = list(engine.timings.values())[-1].ttft_ms
        return {
            "prompt_tokens": start["input_tokens"] + start["cache_read_input_tokens"],
            "cached_tokens": start["cache_read_input_tokens"],
            "wall_ttft_ms": wall_ttft * 1000,
            "simulated_ttft_ms": simulated,
        }


def simulated(target_tokens: int, time_scale: float) -> tuple[dict, dict]:
    from tokenyard.settings import ModelSettings

    def settings(keep: bool) -> ModelSettings:
        return ModelSettings(
            model=str(fixture_model("qwen3")),
            engine="simulated",
            served_model_names=(MODEL,),
            keep_anthropic_preamble=keep,
            time_scale=time_scale,
            max_model_len=131_072,
        )

    return second_session_ttft(settings(False), target_tokens), second_session_ttft(settings(True), target_tokens)


def real(target_tokens: int) -> tuple[dict, dict] | None:
    try:
        from tiny_models import tiny_qwen3
    except ImportError as error:
        print(f"real engine skipped: {error}")
        return None
    from tokenyard.settings import ModelSettings

    folder = tiny_qwen3()

    def settings(keep: bool) -> ModelSettings:
        return ModelSettings(
            model=str(folder),
            engine="embedded",
            served_model_names=(MODEL,),
            keep_anthropic_preamble=keep,
            max_model_len=65_536,
        )

    # The embedded engine announces the prompt (message_start) with its first token;
    # a random-weight model's tokens may all be markers, so that is the TTFT here.
    return (
        second_session_ttft(settings(False), target_tokens, "message_start"),
        second_session_ttft(settings(True), target_tokens, "message_start"),
    )


def report(title: str, stripped: dict, kept: dict, key: str) -> float:
    ratio = kept[key] / stripped[key]
    print(f"{title}")
    print(f"  prompt {stripped['prompt_tokens']:,} tokens")
    for name, row in (("stripped (default)", stripped), ("kept", kept)):
        simulated_ms = f"{row['simulated_ttft_ms']:8.1f} ms simulated, " if row["simulated_ttft_ms"] is not None else ""
        print(f"  {name:<20} cached {row['cached_tokens']:>7,}   TTFT {simulated_ms}{row['wall_ttft_ms']:8.1f} ms wall")
    print(f"  kept / stripped = {ratio:.2f}x")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small prompts, fast clocks (CI smoke run)")
    parser.add_argument("--skip-real", action="store_true", help="only the simulated engine")
    args = parser.parse_args(argv)
    sim_tokens, real_tokens = (4_000, 2_000) if args.quick else (52_000, 16_500)
    stripped, kept = simulated(sim_tokens, time_scale=0.05 if args.quick else 1.0)
    sim_ratio = report(
        f"simulated engine (B200-like cost model), second Claude Code session, ~{sim_tokens // 1000}K-token system+tools",
        stripped,
        kept,
        "simulated_ttft_ms",
    )
    labels = ["sim stripped", "sim kept"]
    values = [stripped["simulated_ttft_ms"], kept["simulated_ttft_ms"]]
    print(f"target >= 5x on the simulated engine: {'met' if sim_ratio >= 5 else 'NOT met'}")
    if not args.skip_real:
        measured = real(real_tokens)
        if measured is not None:
            r_stripped, r_kept = measured
            report(
                f"embedded CPU engine, tiny random Qwen3, ~{real_tokens // 1000}K tokens",
                r_stripped,
                r_kept,
                "wall_ttft_ms",
            )
            labels += ["cpu stripped", "cpu kept"]
            values += [r_stripped["wall_ttft_ms"], r_kept["wall_ttft_ms"]]
    path = save_bar_plot(
        "ttft_preamble",
        "Second Claude Code session TTFT: billing header stripped vs kept",
        labels,
        values,
        quick=args.quick,
    )
    print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
