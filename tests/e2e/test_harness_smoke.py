"""Prove the e2e harness: real Claude Code against the stand-in Anthropic server,
both inside one loopback-only namespace."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.e2e.harness import (
    CLAUDE_CODE_VERSION,
    claude_binary,
    inet_connect_addresses,
    run_claude,
    run_isolated,
    serve_in_namespace,
    standin_server_argv,
)
from tests.e2e.standin_anthropic import ANSWER_PREFIX

PROMPT = "Run `echo hello-from-bash` with the Bash tool and tell me what it printed."
MODEL = "org/standin-model"
BILLING_HEADER = re.compile(
    r"x-anthropic-billing-header: cc_version="
    + re.escape(CLAUDE_CODE_VERSION)
    + r"\.[0-9a-f]{3}; cc_entrypoint=sdk-cli;"
)

pytestmark = pytest.mark.slow  # real Claude Code


def read_requests(record_file: Path) -> list[dict]:
    return [json.loads(line) for line in record_file.read_text().splitlines()]


def link_names(ip_link_output: str) -> list[str]:
    return [line.split(":")[1].strip() for line in ip_link_output.splitlines()]


def test_isolated_command_sees_only_loopback(tmp_path):
    result = run_isolated(["ip", "-o", "link"], home=tmp_path / "home")

    assert result.returncode == 0, result.report()
    assert link_names(result.stdout) == ["lo"]
    assert "<LOOPBACK,UP," in result.stdout


def test_claude_code_runs_bash_through_standin_server(tmp_path):
    claude_binary()
    record_file = tmp_path / "requests.jsonl"
    trace_file = tmp_path / "connect.trace"
    with serve_in_namespace(standin_server_argv(record_file), workdir=tmp_path / "server") as server:
        result = run_claude(server, PROMPT, model=MODEL, home=tmp_path / "home", trace_file=trace_file)
        links = server.run(["ip", "-o", "link"], home=tmp_path / "probe-home")
        client_netns = server.run(["readlink", "/proc/self/ns/net"], home=tmp_path / "probe-home")
        server_netns = os.readlink(server.netns)

    assert result.returncode == 0, result.report() + "\nserver log:\n" + server.log_text()
    assert ANSWER_PREFIX + "hello-from-bash" in result.stdout

    requests = read_requests(record_file)
    assert [(r["method"], r["path"]) for r in requests] == [("POST", "/v1/messages?beta=true")] * 2
    first, second = (r["body"] for r in requests)
    assert BILLING_HEADER.fullmatch(first["system"][0]["text"])
    assert len(first["tools"]) == 12 and "Bash" in {tool["name"] for tool in first["tools"]}
    session_ids = {r["headers"]["X-Claude-Code-Session-Id"] for r in requests}
    assert session_ids == {json.loads(first["metadata"]["user_id"])["session_id"]}

    assistant_turn, tool_turn = second["messages"][-2:]
    tool_use = next(b for b in assistant_turn["content"] if b["type"] == "tool_use")
    assert tool_use["name"] == "Bash"
    assert tool_use["input"]["command"] == "echo hello-from-bash"
    [tool_result] = [b for b in tool_turn["content"] if b["type"] == "tool_result"]
    assert tool_result["tool_use_id"] == tool_use["id"]
    assert tool_result["content"] == "hello-from-bash"
    assert tool_result["is_error"] is False

    assert inet_connect_addresses(trace_file) == {"127.0.0.1"}
    assert link_names(links.stdout) == ["lo"]
    assert client_netns.stdout.strip() == server_netns != os.readlink("/proc/self/ns/net")


def test_claude_code_echoes_signed_thinking_verbatim(tmp_path):
    claude_binary()
    record_file = tmp_path / "requests.jsonl"
    with serve_in_namespace(standin_server_argv(record_file, thinking=True), workdir=tmp_path / "server") as server:
        result = run_claude(server, PROMPT, model=MODEL, home=tmp_path / "home")

    assert result.returncode == 0, result.report()
    assert ANSWER_PREFIX + "hello-from-bash" in result.stdout
    first, second = (r["body"] for r in read_requests(record_file))
    assert first["thinking"] == {"type": "adaptive", "display": "omitted"}
    assistant_turn = second["messages"][-2]
    assert assistant_turn["content"][0] == {
        "type": "thinking",
        "thinking": "Stand-in reasoning for request 1.",
        "signature": "standin-signature-0001",
    }
