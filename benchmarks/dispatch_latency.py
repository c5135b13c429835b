"""Streaming tool dispatch: how soon a complete tool call reaches the client.

A scripted turn calls a tool (qwen3_coder wire format) and then keeps generating
prose, one token every few milliseconds, as a model that explains itself does. An
engine wrapper stamps the moment the engine emits the chunk that completes the
call's closing marker (`</function>`); the client stamps the arrival of the
dispatch event (`tool_call_dispatch` / `response.tool_call_dispatch`) and of the
turn's last event. Both clocks are one process's `perf_counter`, so the difference
is exactly the time tokenyard took — parsing, encoding, the HTTP stream.

Target: dispatch <= 5 ms after the closing marker; the end of the turn comes much
later, which is what early dispatch wins.
Run: python benchmarks/dispatch_latency.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fixture_model, save_bar_plot, serve  # noqa: E402

MODEL = "Qwen/Qwen3-Coder"
CLOSING_MARKER = "</function>"
TOOL = {
    "name": "Bash",
    "description": "Run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
AFTER = "While that runs, here is what I expect: the suite should pass except for the parser test, " * 3


class MarkerClock:
    """Wraps the engine; records when the chunk completing the marker was emitted."""

    def __init__(self, inner, tokenizer):
        self.inner, self.tokenizer, self.stamps = inner, tokenizer, []

    def info(self):
        return self.inner.info()

    async def start(self):
        await self.inner.start()

    async def close(self):
        await self.inner.close()

    async def generate(self, request):
        detokenizer = self.tokenizer.detokenizer()
        text, stamped = "", False
        async for chunk in self.inner.generate(request):
            text += "".join(detokenizer.push(t) for t in chunk.token_ids)
            if not stamped and CLOSING_MARKER in text:
                stamped = True
                self.stamps.append(time.perf_counter())  # just before the chunk leaves the engine
            yield chunk


def requests_for(api: str) -> tuple[str, dict, str]:
    if api == "anthropic":
        body = {
            "model": MODEL,
            "max_tokens": 400,
            "stream": True,
            "thinking": {"type": "disabled"},
            "tools": [{"name": TOOL["name"], "description": TOOL["description"], "input_schema": TOOL["parameters"]}],
            "messages": [{"role": "user", "content": "Run the tests."}],
        }
        return "/v1/messages", body, "tool_call_dispatch"
    if api == "chat":
        body = {
            "model": MODEL,
            "max_tokens": 400,
            "stream": True,
            "tools": [{"type": "function", "function": TOOL}],
            "messages": [{"role": "user", "content": "Run the tests."}],
        }
        return "/v1/chat/completions", body, "tool_call_dispatch"
    body = {
        "model": MODEL,
        "max_output_tokens": 400,
        "stream": True,
        "tools": [{"type": "function", **TOOL}],
        "input": [{"role": "user", "content": "Run the tests."}],
    }
    return "/v1/responses", body, "response.tool_call_dispatch"


def one_turn(url: str, api: str) -> tuple[float, float]:
    """Client-side (dispatch arrival, end of turn), perf_counter seconds."""
    path, body, dispatch_name = requests_for(api)
    dispatched = None
    with httpx.stream("POST", url + path, json=body, timeout=60) as response:
        response.raise_for_status()
        event_name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event_name = line[7:]
            elif line.startswith("data: ") and dispatched is None:
                data = line[6:]
                kind = event_name or (json.loads(data).get("type") if data != "[DONE]" else None)
                if kind == dispatch_name:
                    dispatched = time.perf_counter()
            elif not line:
                event_name = None
    ended = time.perf_counter()
    if dispatched is None:
        raise RuntimeError(f"{api}: no {dispatch_name} event")
    return dispatched, ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run)")
    args = parser.parse_args(argv)
    from tokenyard.server.app import ServerConfig
    from tokenyard.settings import ModelSettings

    repeats = 3 if args.quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(
            json.dumps([[{"call": {"name": "Bash", "arguments": {"command": "pytest -x"}}}, {"text": AFTER}]])
        )
        settings = ModelSettings(
            model=str(fixture_model("qwen3-coder")),
            engine="scripted",
            served_model_names=(MODEL,),
            script=script,
            token_delay=0.004,
        )
        results: dict[str, tuple[list[float], list[float]]] = {}
        with serve(settings, ServerConfig(enable_streaming_tool_dispatch=True)) as (url, state):
            clock = MarkerClock(state.pipeline.engine, state.pipeline.model.tokenizer)
            state.pipeline.engine = clock
            for api in ("anthropic", "chat", "responses"):
                dispatch_ms, end_ms = [], []
                for _ in range(repeats):
                    dispatched, ended = one_turn(url, api)
                    marker = clock.stamps[-1]
                    dispatch_ms.append((dispatched - marker) * 1000)
                    end_ms.append((ended - marker) * 1000)
                results[api] = (dispatch_ms, end_ms)
    print(f"scripted engine, 4 ms/token; {repeats} turns per API; times after the engine emitted `{CLOSING_MARKER}`")
    print(f"  {'API':<11}{'dispatch median':>17}{'p95':>9}{'end of turn median':>21}")
    worst = 0.0
    for api, (dispatch_ms, end_ms) in results.items():
        p95 = sorted(dispatch_ms)[max(0, int(len(dispatch_ms) * 0.95) - 1)]
        worst = max(worst, statistics.median(dispatch_ms))
        print(
            f"  {api:<11}{statistics.median(dispatch_ms):>14.2f} ms{p95:>6.2f} ms{statistics.median(end_ms):>18.1f} ms"
        )
    print(
        f"target: dispatch <= 5 ms after the closing marker: {'met' if worst <= 5 else 'NOT met'} (worst median {worst:.2f} ms)"
    )
    labels = [f"{api} dispatch" for api in results] + [f"{api} end" for api in results]
    values = [statistics.median(d) for d, _ in results.values()] + [statistics.median(e) for _, e in results.values()]
    print(
        f"plot: {save_bar_plot('dispatch_latency', 'Time after the call closed: dispatch event vs end of turn', labels, values, quick=args.quick)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
