"""Real Claude Code against `tokenyard serve` (scripted engine) for each model family.

Two user turns in one session (`claude -p`, then `claude -p --continue`), each a Bash
tool loop: the scripted model calls Bash, Claude Code runs it, the model quotes the
result. Thinking is on (Claude Code's default `adaptive`), so every answer carries
reasoning through the family's reasoning parser.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.harness import (
    claude_binary,
    claude_code_transcript,
    run_claude,
    serve_in_namespace,
    tokenyard_server_argv,
)
from tests.fixtures import model_dir
from tokenyard.engines.scripted import SCRIPTED_COMMAND

# Bash prints this only if it really ran SCRIPTED_COMMAND (`echo …-$((6*7))`).
TOOL_OUTPUT = "tokenyard-scripted-42"
BILLING_MARKER = "x-anthropic-billing-header"

FAMILIES = [
    pytest.param("qwen3-coder", "qwen3_coder", "qwen3", id="qwen3-coder"),
    pytest.param("qwen3", "hermes", "qwen3", id="qwen3-hermes"),
    pytest.param("kimi-k2", "kimi_k2", "kimi_k25", id="kimi-k2"),
    pytest.param("deepseek-v3.1", "deepseek_v3_1", "deepseek_v3_1", id="deepseek-v3.1"),
]


def read_prompt_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def blocks(message: dict) -> list[dict]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def tool_use_ids(request: dict) -> list[str]:
    return [b["id"] for m in request["messages"] for b in blocks(m) if b["type"] == "tool_use"]


def served_tool_use_ids(home: Path) -> list[str]:
    """Ids of every tool_use the server streamed, as Claude Code's transcript recorded them."""
    return [
        block["id"]
        for entry in claude_code_transcript(home)
        if entry.get("type") == "assistant"
        for block in entry["message"]["content"]
        if block["type"] == "tool_use"
    ]


def assert_turn_pair(tool_call: dict, tool_answer: dict) -> None:
    """The request that asks for a tool call, then the one carrying its result."""
    for entry in (tool_call, tool_answer):
        request = entry["request"]
        assert request["system"][0]["text"].startswith(BILLING_MARKER + ": cc_version=")
        assert request["thinking"] == {"type": "adaptive", "display": "omitted"}
        assert BILLING_MARKER not in entry["prompt_text"]
        assert request["system"][1]["text"] in entry["prompt_text"]
        assert "cc_version=" not in entry["prompt_text"]

    assistant, results = tool_answer["request"]["messages"][-2:]
    thinking = [b for b in blocks(assistant) if b["type"] == "thinking"]
    [tool_use] = [b for b in blocks(assistant) if b["type"] == "tool_use"]
    [tool_result] = [b for b in blocks(results) if b["type"] == "tool_result"]
    assert thinking and thinking[0]["signature"], "the server's reasoning did not come back as a signed thinking block"
    assert (tool_use["name"], tool_use["input"]) == ("Bash", {"command": SCRIPTED_COMMAND})
    assert tool_result["tool_use_id"] == tool_use["id"]
    assert tool_result["content"] == TOOL_OUTPUT
    prompt_before, prompt_after = tool_call["prompt_text"], tool_answer["prompt_text"]
    assert prompt_after.count(TOOL_OUTPUT) == prompt_before.count(TOOL_OUTPUT) + 1


@pytest.mark.parametrize(("family", "tool_call_parser", "reasoning_parser"), FAMILIES)
def test_claude_code_bash_loop(tmp_path, family, tool_call_parser, reasoning_parser):
    claude_binary()
    model_name = f"tokenyard/{family}"
    prompt_log = tmp_path / "prompts.jsonl"
    argv = tokenyard_server_argv(
        model_dir(family),
        served_model_name=model_name,
        tool_call_parser=tool_call_parser,
        reasoning_parser=reasoning_parser,
        prompt_log=prompt_log,
    )
    home, project = tmp_path / "home", tmp_path / "home" / "project"
    session = {"model": model_name, "home": home, "cwd": project, "timeout": 60}
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        first = run_claude(server, "Run a shell command and tell me what it printed.", **session)
        assert first.returncode == 0, first.report() + "\nserver log:\n" + server.log_text()
        follow_up = run_claude(server, "Do it once more.", extra_args=["--continue"], **session)
    entries = read_prompt_log(prompt_log)
    print(f"\n--- claude -p ({family}) ---\n{_transcript(home)}\n[stdout]\n{first.stdout}")

    assert TOOL_OUTPUT in first.stdout
    assert_turn_pair(entries[0], entries[1])

    # Claude Code drops a tool_use whose id repeats an earlier one and then loops on
    # "(no content)" turns, so ids must be unique across the whole conversation.
    repeated = {id_: n for id_, n in Counter(served_tool_use_ids(home)).items() if n > 1}
    assert not repeated, f"the server reused tool_use ids across turns: {repeated}"
    assert follow_up.returncode == 0, follow_up.report() + "\nserver log:\n" + server.log_text()
    assert TOOL_OUTPUT in follow_up.stdout
    assert len(entries) == 4, f"expected 2 requests per user turn, got {len(entries)}"
    assert tool_use_ids(entries[2]["request"]) == tool_use_ids(entries[1]["request"]), "--continue lost turn one"
    assert_turn_pair(entries[2], entries[3])


def test_sessions_with_different_billing_headers_share_the_prompt_prefix(tmp_path):
    """The header's suffix depends on the first prompt; stripped, two sessions render
    the same prompt up to where their user prompts differ."""
    claude_binary()
    model_name = "tokenyard/qwen3"
    prompt_log = tmp_path / "prompts.jsonl"
    argv = tokenyard_server_argv(
        model_dir("qwen3"),
        served_model_name=model_name,
        tool_call_parser="hermes",
        reasoning_parser="qwen3",
        prompt_log=prompt_log,
    )
    prompts = ["Run a shell command, please.", "Say hi, then run a shell command."]
    home = tmp_path / "home"  # the system prompt names paths under HOME and the cwd
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        for prompt in prompts:
            result = run_claude(server, prompt, model=model_name, home=home, cwd=home / "project", timeout=60)
            assert result.returncode == 0, result.report()
    first_requests = [e for e in read_prompt_log(prompt_log) if len(e["request"]["messages"]) == 2]

    assert len(first_requests) == 2
    headers = {e["request"]["system"][0]["text"] for e in first_requests}
    assert len(headers) == 2, f"the billing headers should differ between these prompts: {headers}"
    texts = [e["prompt_text"] for e in first_requests]
    shared = len(os.path.commonprefix(texts))
    assert shared >= texts[0].index(prompts[0]), texts[0][shared - 200 : shared + 200]


def _transcript(home) -> str:
    """Claude Code's own session log, one line per block: what the user sees."""
    lines = []
    for entry in claude_code_transcript(home):
        message = entry.get("message") or {}
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        role = message.get("role", entry.get("type", "?"))
        if role == "system":
            continue  # Claude Code's own environment notes
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                if not block["text"].startswith("<system-reminder>"):
                    lines.append(f"{role}: {block['text']}")
            elif kind == "thinking":
                lines.append(
                    f"thinking: {block.get('thinking') or '(omitted; signature ' + str(len(block.get('signature', ''))) + ' chars)'}"
                )
            elif kind == "tool_use":
                lines.append(f"tool_use {block['name']} {block['input']}")
            elif kind == "tool_result":
                result = block.get("content")
                lines.append(f"tool_result: {result if isinstance(result, str) else result}")
    return "\n".join(lines)
