"""Wall time of a 10-turn Claude Code tool loop: tokenyard's levers one by one.

The recorded shape: a Claude Code session (long system prompt and tools, billing
header) on a thinking model — every turn ~400 words of thinking then a Bash call,
the tool runs (a fixed delay), its output comes back, the next turn resends the
whole conversation; the last turn answers. The session is the user's second of the
day: another session (another billing header) ran just before on the same engine.

The same simulated engine (B200-like cost model) behind, in turn:
- (a) a LiteLLM → vLLM chat-completions path: the billing header stays in the prompt
  (LiteLLM keeps it; vLLM before 0.32 does too), and the model's earlier reasoning
  never comes back: Claude Code echoes its thinking blocks with `display: "omitted"`
  (no text), LiteLLM turns them into `thinking` content parts that vLLM joins into
  the message text, so the template renders every earlier turn without reasoning —
  the same way on every turn, so turn N's prompt stays a prefix of turn N+1's and
  only turn N's answer (re-rendered without its reasoning) and the tool result are
  prefilled again (benchmarks/litellm_path.py measures this template by template:
  2-10 % more prompt tokens per tool turn than tokenyard). Modelled here by dropping
  the thinking blocks before tokenyard renders the request; the tool starts when the
  stream ends (LiteLLM closes a tool_use block only when the stream does);
- + strip: the billing header removed (the session's first turn reuses the other
  session's system prompt and tools);
- + exact replay: earlier thinking and calls re-enter the prompt as produced — with
  strip, this is (b), a frontend with vLLM's own `/v1/messages` behaviour;
- + dispatch: each tool call is announced when complete and the tool starts then;
- + speculative prefill (`nvext.agent_hints.speculative_prefill`): while the tool runs,
  the next turn's prefix is prefilled — everything tokenyard does.

The wall time is the session's as the client sees it, in real time by default (the
engine's clock runs in real time; `--time-scale` speeds both it and the tool delays
up, and divides the result back).

Why the ≥2x target over (a) is out of reach for this shape: a faithful (a) keeps
its prefix from turn to turn, so it loses only the first turn's cross-session cache
(the billing header) and a few dozen re-rendered tokens a turn. The session's time is
the model's decoding (~530 tokens of thinking a turn at a B200-like ~7 ms a token)
and the tools; the sum of all TTFTs is a few percent of it. A client whose header
changes on every request, or a gateway that mutates earlier reasoning, would diverge
at the top or the first assistant turn every turn; neither is what LiteLLM → vLLM
does with Claude Code 2.1.330.
Run: python benchmarks/agent_session.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import calibrated_claude_code_body, fixture_model, save_bar_plot, serve  # noqa: E402
from ttft_reasoning_replay import assistant_turn, script  # noqa: E402

MODEL = "Qwen/Qwen3-8B"
LEVERS = ["(a) LiteLLM-style", "+ strip", "+ exact replay = (b)", "+ dispatch", "+ speculative prefill"]


def drop_thinking(messages: list[dict]) -> list[dict]:
    """What reaches the engine through LiteLLM: assistant turns without their thinking."""
    out = []
    for message in messages:
        if message["role"] == "assistant":
            message = {**message, "content": [b for b in message["content"] if b["type"] != "thinking"]}
        out.append(message)
    return out


def stream_turn(url: str, body: dict, headers: dict) -> tuple[list[dict], float | None]:
    """The turn's SSE data, and when (perf_counter) a tool call was dispatched, if it was."""
    events: list[dict] = []
    dispatched = None
    with httpx.stream("POST", f"{url}/v1/messages?beta=true", json=body, headers=headers, timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: "):
                data = json.loads(line[6:])
                events.append(data)
                if data.get("type") == "tool_call_dispatch" and dispatched is None:
                    dispatched = time.perf_counter()
    return events, dispatched


def run_lever(level: int, settings_for, turns: int, prefix_tokens: int, tool_s: float, scale: float) -> dict:
    from tokenyard.server.app import ServerConfig

    strip, replay, dispatch, speculate = (level >= n for n in (1, 2, 3, 4))
    with serve(settings_for(keep_preamble=not strip), ServerConfig(enable_streaming_tool_dispatch=dispatch)) as (
        url,
        state,
    ):
        other, other_headers = calibrated_claude_code_body(
            url, MODEL, "9c0", "Add a usage section to the README.", prefix_tokens, "earlier-session"
        )
        other["max_tokens"] = 16
        stream_turn(url, other, other_headers)
        body, headers = calibrated_claude_code_body(
            url, MODEL, "a3f", "Make the test suite pass.", prefix_tokens, "measured-session"
        )
        # As Claude Code 2.1.330 sends it: thinking echoed without its text.
        body["thinking"] = {"type": "adaptive", "display": "omitted"}
        if speculate:
            body["nvext"] = {"agent_hints": {"speculative_prefill": True}}
        messages = body["messages"]
        cached = prompt = last_prompt = 0
        started = time.perf_counter()
        tool_done = started
        for n in range(turns + 1):
            # The next request leaves when the tool is done (and the last stream ended).
            time.sleep(max(0.0, tool_done - time.perf_counter()))
            sent = messages if replay else drop_thinking(messages)
            events, dispatched = stream_turn(url, {**body, "messages": sent}, headers)
            ended = time.perf_counter()
            usage = next(e for e in events if e["type"] == "message_start")["message"]["usage"]
            cached += usage["cache_read_input_tokens"]
            # Anthropic's three parts of the prompt: uncached, written to the cache, read from it.
            last_prompt = (
                usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
            )
            prompt += last_prompt
            blocks = assistant_turn(events)
            call = next((b for b in blocks if b["type"] == "tool_use"), None)
            if call is None:
                break
            tool_done = (dispatched if dispatch and dispatched else ended) + tool_s * scale
            tool_done = max(tool_done, ended)
            output = "\n".join(f"tests/test_{n}.py::test_case_{i} PASSED [{i}%]" for i in range(60))
            messages = messages + [
                {"role": "assistant", "content": blocks},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]},
            ]
        wall = (time.perf_counter() - started) / scale
        engine = state.pipeline.engine
        ttfts = [t.ttft_ms for t in engine.timings.values() if not t.request_id.endswith("-prefill")][1:]
        return {
            "lever": LEVERS[level],
            "wall_s": wall,
            "ttft_sum_s": sum(ttfts) / 1000,
            "hit": cached / prompt,
            "last_prompt": last_prompt,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 turns, small prompt, fast clock (CI smoke run)")
    parser.add_argument("--time-scale", type=float, help="real seconds per simulated second")
    args = parser.parse_args(argv)
    # Real time by default: the frontend's own work (rendering, tokenizing) is part of the session.
    turns, prefix, words, tool_s, scale = (3, 4_000, 60, 0.2, 1.0) if args.quick else (10, 24_000, 400, 1.5, 1.0)
    scale = args.time_scale or scale
    from tokenyard.settings import ModelSettings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.json"
        path.write_text(json.dumps(script(turns, words)))

        def settings_for(keep_preamble: bool) -> ModelSettings:
            return ModelSettings(
                model=str(fixture_model("qwen3")),
                engine="simulated",
                served_model_names=(MODEL,),
                script=path,
                time_scale=scale,
                max_model_len=131_072,
                keep_anthropic_preamble=keep_preamble,
            )

        rows = [run_lever(level, settings_for, turns, prefix, tool_s, scale) for level in range(len(LEVERS))]
    print(
        f"a {turns}-turn Claude Code tool loop (+ final answer), ~{prefix // 1000}K-token system+tools, ~{words} words "
        f"of thinking a turn, {tool_s:g} s per tool; simulated engine (B200-like cost model)"
    )
    print(f"{'':<24}{'wall':>9}{'sum of TTFTs':>14}{'cache hit':>11}{'last prompt':>13}")
    for row in rows:
        print(
            f"{row['lever']:<24}{row['wall_s']:>7.2f} s{row['ttft_sum_s']:>12.2f} s{row['hit']:>10.0%}"
            f"{row['last_prompt']:>13,}"
        )
    a, b, full = rows[0]["wall_s"], rows[2]["wall_s"], rows[-1]["wall_s"]
    print(f"tokenyard vs (a) LiteLLM-style: {a / full:.2f}x faster; vs (b) vLLM /v1/messages: {b / full:.2f}x")
    saved = a - full
    for before, after in zip(rows, rows[1:], strict=False):
        share = (before["wall_s"] - after["wall_s"]) / saved if saved > 0 else 0.0
        print(
            f"  {after['lever']:<22} saves {before['wall_s'] - after['wall_s']:6.2f} s ({share:.0%} of the total saving)"
        )
    # The deterministic part (simulated engine time): what each lever does to the turns' TTFTs.
    ttft_saved = rows[0]["ttft_sum_s"] - rows[-1]["ttft_sum_s"]
    print(f"sum of TTFTs: (a) {rows[0]['ttft_sum_s']:.2f} s -> tokenyard {rows[-1]['ttft_sum_s']:.2f} s")
    for before, after in zip(rows, rows[1:], strict=False):
        delta = before["ttft_sum_s"] - after["ttft_sum_s"]
        share = f" ({delta / ttft_saved:.0%} of the TTFT saving)" if ttft_saved > 0 else ""
        print(f"  {after['lever']:<22} TTFTs {delta:+6.2f} s{share}")
    ceiling = a / max(a - rows[0]["ttft_sum_s"], 1e-9)
    print(f"ceiling: with every one of (a)'s TTFTs at zero, tokenyard could be at most {ceiling:.2f}x faster than (a)")
    print(f"target >= 2x vs (a): {'met' if a / full >= 2 else 'NOT met'}; ahead of (b): {'yes' if full < b else 'no'}")
    plot = save_bar_plot(
        "agent_session",
        f"{turns}-turn Claude Code tool loop: session wall time, lever by lever (simulated)",
        [r["lever"].replace(" = (b)", "\n= (b)") for r in rows],
        [r["wall_s"] for r in rows],
        unit="s",
        quick=args.quick,
    )
    print(f"plot: {plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
