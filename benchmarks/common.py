"""What the serving benchmarks share: a real tokenyard server on loopback, request
bodies shaped like real Claude Code's, streaming TTFT measurement, and plots."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

REPO = Path(__file__).resolve().parents[1]
# Full runs' plots are kept with the benchmarks (benchmarks/README.md shows them);
# quick (CI smoke) runs write theirs to the git-ignored out/.
PLOTS = REPO / "benchmarks" / "plots"
OUT = REPO / "benchmarks" / "out"
sys.path.insert(0, str(REPO))  # tests/fixtures.py locates the fixture models


def fixture_model(family: str) -> Path:
    folder = Path(os.environ.get("TOKENYARD_FIXTURES") or REPO / ".fixtures") / "models" / family
    if not (folder / "FIXTURE.json").exists():
        raise SystemExit(f"fixture {family!r} missing: run `python scripts/build_fixtures.py` first")
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve(settings, config=None, engine=None, wrap=None) -> Iterator[tuple[str, Any]]:
    """tokenyard on 127.0.0.1 in a background thread, for `settings` (ModelSettings).
    `wrap(engine, model)`, when given, returns the engine to serve in place of the
    loaded one (a recorder of what the engine produced, say)."""
    from tokenyard.prompting.prefix_watch import PrefixWatch
    from tokenyard.sealing import ReasoningSeal
    from tokenyard.server.app import ServerConfig, ServerState, create_app
    from tokenyard.server.loading import load
    from tokenyard.server.pipeline import Pipeline

    model, loaded = load(settings)
    if wrap is not None:
        loaded = wrap(loaded, model)
    state = ServerState(
        Pipeline(model, engine or loaded, prefix_watch=PrefixWatch()),
        ReasoningSeal(bytes(32)),
        config or ServerConfig(),
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("server failed to start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# ---- Claude Code-shaped requests -----------------------------------------------------------

CLAUDE_CODE_HEADERS = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
    "x-api-key": "x",
    "user-agent": "claude-cli/2.1.330 (external, sdk-cli)",
}
_TOOL_NAMES = [
    "Task",
    "Bash",
    "Glob",
    "Grep",
    "Read",
    "Edit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "TodoWrite",
    "WebSearch",
    "BashOutput",
]
_PROSE = (
    "Use this tool when the task needs it. Prefer dedicated tools over shell commands for file operations. "
    "Always quote paths that contain spaces, keep commands non-interactive, and explain what a command does "
    "before running anything that changes the system. Batch independent calls in one message. "
)


# The system prompt and tools of a Claude Code session's later requests (`turns`), in
# tokens: agent_session.py's recorded session's ~24K.
LATE_TURN_TOKENS = 24_000


def claude_code_body(
    model: str, billing_suffix: str, user_prompt: str, target_tokens: int, session: str, turns: int = 0
) -> tuple[dict, dict]:
    """A first request as Claude Code 2.1.330 sends it (tests/e2e/CLAUDE_CODE_NOTES.md),
    with the system prompt and tool descriptions scaled so the rendered prompt is about
    `target_tokens` (4 characters a token). `turns`: a later request of the session
    instead, after that many tool turns (a Bash call and 60 lines of its output, some
    non-ASCII as tool output often is; ~3.5 KB of body and ~1,100 tokens a turn)."""
    per_tool = max(200, target_tokens * 4 // (len(_TOOL_NAMES) + 2))
    reps = max(1, per_tool // len(_PROSE))
    tools = [
        {
            "name": name,
            "description": f"{name}: " + _PROSE * reps,
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "what to run"},
                    "timeout": {"type": "number"},
                },
                "required": ["command"],
            },
        }
        for name in _TOOL_NAMES
    ]
    system = [
        {
            "type": "text",
            "text": f"x-anthropic-billing-header: cc_version=2.1.330.{billing_suffix}; cc_entrypoint=sdk-cli;",
        },
        {
            "type": "text",
            "text": "You are Claude Code, Anthropic's official CLI for Claude.",
            "cache_control": {"type": "ephemeral"},
        },
        {
            "type": "text",
            "text": "You are an interactive CLI tool that helps users with software engineering tasks. "
            + _PROSE * (2 * reps),
            "cache_control": {"type": "ephemeral"},
        },
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": user_prompt, "cache_control": {"type": "ephemeral"}}]}
    ]
    for turn in range(turns):
        call = f"toolu_bench{turn:04d}"
        command = {"command": f"ls -la src/part{turn}", "timeout": 120}
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Listing part {turn}."},
                    {"type": "tool_use", "id": call, "name": "Bash", "input": command},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": f"├── part{turn} file\n" * 60}],
            },
        ]
    body = {
        "model": model,
        "messages": messages,
        "system": system,
        "tools": tools,
        "metadata": {"user_id": json.dumps({"device_id": "bench", "session_id": session})},
        "max_tokens": 32000,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "stream": True,
    }
    return body, {**CLAUDE_CODE_HEADERS, "x-claude-code-session-id": session}


def stream_ttft(
    url: str, path: str, body: dict, headers: dict | None = None, first: str = "content"
) -> tuple[float, float, list[dict]]:
    """POST a streaming request; returns (seconds to the first content event — or to
    `message_start` when `first="message_start"` —, seconds to the end, the decoded
    SSE data objects)."""
    start = time.perf_counter()
    seen = None
    events: list[dict] = []
    with httpx.stream("POST", url + path, json=body, headers=headers or {}, timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            data = json.loads(line[6:])
            events.append(data)
            if seen is None and (
                data.get("type") == "message_start" if first == "message_start" else _is_content(data)
            ):
                seen = time.perf_counter() - start
    return (seen if seen is not None else float("nan")), time.perf_counter() - start, events


def _is_content(data: dict) -> bool:
    kind = data.get("type", "")
    if kind == "content_block_delta" or kind.endswith(".delta"):
        return True
    choices = data.get("choices") or []
    return bool(
        choices and any(choices[0].get("delta", {}).get(k) for k in ("content", "reasoning_content", "tool_calls"))
    )


def save_bar_plot(
    name: str, title: str, labels: list[str], values: list[float], unit: str = "ms", *, quick: bool = False
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = OUT if quick else PLOTS
    folder.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.bar(
        labels, values, color=["#4c78a8", "#e45756", "#72b7b2", "#f58518", "#54a24b", "#b279a2"][: len(values)]
    )
    for bar, value in zip(bars, values, strict=False):
        ax.annotate(
            f"{value:,.1f} {unit}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    plt.xticks(fontsize=8)
    fig.tight_layout()
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def calibrated_claude_code_body(
    url: str, model: str, billing_suffix: str, user_prompt: str, target_tokens: int, session: str
) -> tuple[dict, dict]:
    """`claude_code_body` rescaled (via count_tokens) so its prompt is ~`target_tokens`."""
    size = target_tokens
    for _ in range(3):
        body, headers = claude_code_body(model, billing_suffix, user_prompt, size, session)
        counted = httpx.post(
            url + "/v1/messages/count_tokens",
            json={k: body[k] for k in ("model", "messages", "system", "tools")},
            headers=headers,
            timeout=60,
        ).json()["input_tokens"]
        if abs(counted - target_tokens) < target_tokens * 0.03:
            break
        size = int(size * target_tokens / counted)
    return body, headers
