"""Real OpenClaw (on Node 26) against `tokenyard serve` (scripted engine).

One headless turn (`openclaw agent exec`) per provider API, each an `exec` tool
round trip: the scripted model calls exec, OpenClaw runs it, the model quotes it.
OpenClaw keeps its own copy of the transcript and re-sends tool ids in its own
normalized form (OPENCLAW_NOTES.md), so a tool result may name its call by an id the
server never issued; the round trip must work anyway.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.harness import (
    openclaw_binary,
    prompt_log_entries,
    run_openclaw,
    serve_in_namespace,
    tokenyard_server_argv,
)
from tests.fixtures import model_dir
from tokenyard.engines.scripted import SCRIPTED_COMMAND

pytestmark = pytest.mark.slow  # real OpenClaw

# The shell prints this only if it really ran SCRIPTED_COMMAND (`echo …-$((6*7))`).
TOOL_OUTPUT = "tokenyard-scripted-42"
PROMPT = "Run a shell command and tell me what it printed."


def run_one_turn(tmp_path, family: str, tool_call_parser: str, reasoning_parser: str, api: str, extra_args=()):
    openclaw_binary()
    model = f"tokenyard/{family}"
    prompt_log = tmp_path / "prompts.jsonl"
    argv = tokenyard_server_argv(
        model_dir(family),
        served_model_name=model,
        tool_call_parser=tool_call_parser,
        reasoning_parser=reasoning_parser,
        prompt_log=prompt_log,
    )
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        result = run_openclaw(server, PROMPT, model=model, api=api, home=tmp_path / "home", extra_args=extra_args)
        server_log = server.log_text()
    print(f"\n--- openclaw agent exec ({api}, {family}) ---\n{result.report()}")
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server_log
    # Plain output is the final answer only; it quotes the real command output.
    assert result.stdout.strip() == f"The tool returned: {TOOL_OUTPUT}"
    entries = prompt_log_entries(prompt_log)
    assert len(entries) == 2, f"expected one request for the call and one for the answer, got {len(entries)}"
    before, after = entries[0]["prompt_text"], entries[1]["prompt_text"]
    assert after.count(TOOL_OUTPUT) == before.count(TOOL_OUTPUT) + 1
    # OpenClaw names no session; the server recognises it and keeps both requests in one stream.
    assert entries[0]["session"] is not None and entries[0]["session"].startswith("openclaw-")
    assert [e["stream"] for e in entries[1:]] == [entries[0]["stream"]] and entries[1]["prefix_matched_tokens"] > 0
    return entries


def test_openclaw_anthropic_messages_exec_round_trip(tmp_path):
    """With thinking off, OpenClaw rewrites every tool id to [A-Za-z0-9] only (the
    server's `toolu_…` comes back as `toolu…`) in both the tool_use and its result."""
    entries = run_one_turn(tmp_path, "qwen3", "hermes", "qwen3", "anthropic-messages", ["--thinking", "off"])

    first = entries[0]["request"]
    assert [tool["name"] for tool in first["tools"]] == ["exec"]
    assert first["thinking"] == {"type": "disabled"}
    assistant, results = entries[1]["request"]["messages"][-2:]
    [tool_use] = [b for b in assistant["content"] if b["type"] == "tool_use"]
    [tool_result] = [b for b in results["content"] if b["type"] == "tool_result"]
    assert (tool_use["name"], tool_use["input"]) == ("exec", {"command": SCRIPTED_COMMAND})
    assert re.fullmatch(r"[A-Za-z0-9]+", tool_use["id"]), f"OpenClaw no longer normalizes tool ids: {tool_use['id']}"
    assert tool_result["tool_use_id"] == tool_use["id"]
    assert tool_result["content"] == TOOL_OUTPUT and tool_result["is_error"] is False


def test_openclaw_openai_responses_exec_round_trip(tmp_path):
    """Thinking on: the reasoning item comes back with the server's encrypted_content
    and reaches the next prompt unchanged."""
    entries = run_one_turn(tmp_path, "qwen3-coder", "qwen3_coder", "qwen3", "openai-responses")

    first = entries[0]["request"]
    assert [tool["name"] for tool in first["tools"]] == ["exec"]
    assert first["include"] == ["reasoning.encrypted_content"] and first["store"] is False
    reasoning, call, output = entries[1]["request"]["input"][-3:]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    assert (call["type"], call["name"]) == ("function_call", "exec")
    assert json.loads(call["arguments"]) == {"command": SCRIPTED_COMMAND}
    assert output == {"type": "function_call_output", "call_id": call["call_id"], "output": TOOL_OUTPUT}

    before, after = entries[0]["prompt_text"], entries[1]["prompt_text"]
    assert after.startswith(before), "re-rendering the history changed the earlier prompt"
    [streamed] = [part["text"] for part in reasoning["summary"]]
    written = after[len(before) :]
    assert streamed in written and written.index(streamed) < written.index(SCRIPTED_COMMAND), written
