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
    claude_code_window_env,
    fetch_model_info,
    mcp_config,
    run_claude,
    serve_in_namespace,
    tokenyard_server_argv,
)
from tests.fixtures import model_dir
from tokenyard.engines.scripted import SCRIPTED_COMMAND

pytestmark = pytest.mark.slow  # real Claude Code

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


UNKNOWN_MODEL_NOTICE = "doesn't recognize the model"
# Prints 24.5K characters (one token per digit for Qwen's tokenizer) the first time
# it runs in a directory, a short line after that.
NUMBERS_ONCE = "test -e numbers.done && echo tokenyard-small || { touch numbers.done; seq 100000 103500; }"


def qwen3_server(tmp_path: Path, *extra_args, model_name="tokenyard/qwen3", family="qwen3", tools="hermes"):
    prompt_log = tmp_path / "prompts.jsonl"
    argv = tokenyard_server_argv(
        model_dir(family),
        served_model_name=model_name,
        tool_call_parser=tools,
        reasoning_parser="qwen3",
        prompt_log=prompt_log,
        extra_args=extra_args,
    )
    return serve_in_namespace(argv, workdir=tmp_path / "server"), prompt_log


def write_script(tmp_path: Path, turns: list) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(turns))
    return path


def test_the_window_from_the_model_object_reaches_claude_code(tmp_path):
    """Before: unknown model, 1m window assumed. After configuring Claude Code from
    the server's model object: no notice, and /context shows the real window."""
    claude_binary()
    model_name = "tokenyard/qwen3"
    home = tmp_path / "home"
    server_cm, _ = qwen3_server(tmp_path, "--max-model-len", "49152")
    with server_cm as server:
        info = fetch_model_info(server, model_name, home=home)
        before = run_claude(server, "/context", model=model_name, home=home, cwd=home / "project", timeout=60)
        env = claude_code_window_env(info)
        after = run_claude(server, "/context", model=model_name, home=home, cwd=home / "project", extra_env=env)
    print(f"\n--- /context before ---\n{before.stdout}{before.stderr}\n--- /context after ({env}) ---\n{after.stdout}")
    assert info["max_input_tokens"] == 49152 and info["lifecycle"] == "active"
    assert UNKNOWN_MODEL_NOTICE in before.stderr and "/ 1m" in before.stdout
    assert after.returncode == 0, after.report()
    assert UNKNOWN_MODEL_NOTICE not in after.stderr and "unrecognized_model" not in after.stderr
    assert "/ 49.2k" in after.stdout


def test_a_long_session_compacts_before_the_window(tmp_path):
    """The history outgrows Claude Code's compaction threshold for the real window:
    its compaction request arrives (labelled as such) and no request is refused."""
    claude_binary()
    model_name = "tokenyard/qwen3"
    home = tmp_path / "home"
    call = {"call": {"name": "Bash", "arguments": {"command": NUMBERS_ONCE, "description": "print numbers"}}}
    script = write_script(tmp_path, [[{"reasoning": "Print the numbers."}, call], [call], [{"text": "Summary: done."}]])
    server_cm, prompt_log = qwen3_server(tmp_path, "--max-model-len", "49152", "--script", script)
    with server_cm as server:
        env = claude_code_window_env(fetch_model_info(server, model_name, home=home))
        result = run_claude(
            server, "Print some numbers.", model=model_name, home=home, cwd=home / "project", extra_env=env
        )
    entries = read_prompt_log(prompt_log)
    print("\n".join(f"{e['stream_kind']}: {e['prompt_tokens']} tokens" for e in entries))
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server.log_text()
    assert "prompt is too long" not in server.log_text() + result.stdout + result.stderr
    assert max(e["prompt_tokens"] for e in entries) < 49152
    compactions = [e for e in entries if e["stream_kind"] == "compaction"]
    assert compactions, [e["prompt_tokens"] for e in entries]
    assert "compaction request" in server.log_text()
    assert "WARNING" not in server.log_text()


def test_tool_search_loads_an_mcp_tool_where_it_is_found(tmp_path):
    """ENABLE_TOOL_SEARCH=true with two real MCP servers (23 tools, all deferred): the
    scripted model searches, the found tool's definition enters the prompt inside the
    search result (the earlier prompt untouched), the model calls it, Claude Code runs it."""
    claude_binary()
    model_name = "tokenyard/qwen3"
    home, project = tmp_path / "home", tmp_path / "home" / "project"
    tool = "mcp__fs__list_allowed_directories"
    script = write_script(
        tmp_path,
        [
            [
                {"reasoning": "The directory tool is deferred; load it first."},
                {"call": {"name": "ToolSearch", "arguments": {"query": f"select:{tool}", "max_results": 5}}},
            ],
            [{"call": {"name": tool, "arguments": {}}}],
            [{"text": "Those are the directories I may read."}],
        ],
    )
    config = mcp_config(home, project)
    server_cm, prompt_log = qwen3_server(tmp_path, "--script", script)
    with server_cm as server:
        env = {"ENABLE_TOOL_SEARCH": "true", **claude_code_window_env(fetch_model_info(server, model_name, home=home))}
        result = run_claude(
            server,
            "Which directories may you read?",
            model=model_name,
            home=home,
            cwd=project,
            extra_args=["--mcp-config", str(config), "--allowedTools", tool],
            extra_env=env,
        )
    entries = read_prompt_log(prompt_log)
    print(f"\n--- tool search session ---\n{_transcript(home)}\n[stdout]\n{result.stdout}")
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server.log_text()
    search, call, answer = entries[:3]
    deferred = [t["name"] for t in call["request"]["tools"] if t.get("defer_loading")]
    assert tool in deferred and tool not in [t["name"] for t in search["request"]["tools"]]
    # Claude Code names the deferred tools itself (a system message); no definition yet.
    assert f'"name": "{tool}"' not in search["prompt_text"]
    definition = '<function>{"description": '
    found_at = call["prompt_text"].index(definition)
    assert f'"name": "{tool}"' in call["prompt_text"][found_at:]
    assert found_at > call["prompt_text"].index("Which directories may you read?")
    # The search appended to the prompt: each request extends the previous one.
    assert call["prefix_stable"] and call["prefix_matched_tokens"] == search["prompt_tokens"]
    assert answer["prefix_stable"] and answer["prefix_matched_tokens"] == call["prompt_tokens"]
    [ran] = [b for m in answer["request"]["messages"] for b in blocks(m) if b["type"] == "tool_result"][-1:]
    assert "Allowed directories" in json.dumps(ran["content"]) and str(project) in json.dumps(ran["content"])
    assert "Those are the directories I may read." in result.stdout


def test_a_subagent_round_trip_is_its_own_stream(tmp_path):
    """The Agent tool starts subagents; each is keyed by its agent id, records its
    parent, and none is reported as a divergence of the main conversation."""
    claude_binary()
    model_name = "tokenyard/qwen3"
    home = tmp_path / "home"
    agent_call = {
        "call": {
            "name": "Agent",
            "arguments": {
                "description": "Run a command",
                "prompt": "Run a shell command and report its output.",
                "subagent_type": "general-purpose",
            },
        }
    }
    script = write_script(
        tmp_path, [[{"reasoning": "Delegate this."}, agent_call], [{"text": "The subagent finished its task."}]]
    )
    server_cm, prompt_log = qwen3_server(tmp_path, "--script", script)
    with server_cm as server:
        env = claude_code_window_env(fetch_model_info(server, model_name, home=home))
        result = run_claude(
            server,
            "Use a subagent to run a shell command.",
            model=model_name,
            home=home,
            cwd=home / "project",
            extra_args=["--allowedTools", "Agent"],
            extra_env=env,
        )
    entries = read_prompt_log(prompt_log)
    log_text = server.log_text()
    print(
        "\n".join(f"{e['stream']} parent={e['parent_agent_id']} matched={e['prefix_matched_tokens']}" for e in entries)
    )
    assert result.returncode == 0, result.report() + "\nserver log:\n" + log_text
    assert "The subagent finished its task." in result.stdout
    main_stream = entries[0]["stream"]
    subagents = [e for e in entries if e["agent_id"]]
    assert subagents and all(e["stream"] != main_stream for e in subagents)
    assert any(e["parent_agent_id"] for e in subagents), "nested agents name their parent"
    assert all(e["prefix_stable"] for e in subagents)
    [agent_result] = [
        b
        for e in entries
        if e["stream"] == main_stream
        for m in e["request"]["messages"]
        for b in blocks(m)
        if b["type"] == "tool_result"
    ][:1]
    assert agent_result["tool_use_id"].startswith("toolu_")
    assert "new stream, started by agent" in log_text
    assert not [line for line in log_text.splitlines() if "WARNING" in line and main_stream not in line]


@pytest.mark.parametrize("family,tools", [("qwen3.5", "qwen3_coder"), ("qwen3", "hermes")])
def test_inline_system_messages_across_turns_keep_the_prefix(tmp_path, family, tools):
    """Claude Code puts system messages inside `messages` (its environment note after
    the first user message, reminders later). Over several tool turns every request
    extends the previous prompt token for token, as the server measured it; qwen3.5's
    template, which rejects a non-leading system message, gets them folded."""
    claude_binary()
    model_name = f"tokenyard/{family}"
    home = tmp_path / "home"
    call = {"call": {"name": "Bash", "arguments": {"command": SCRIPTED_COMMAND, "description": "echo"}}}
    think = {"reasoning": "Run it."}
    script = write_script(
        tmp_path, [[think, call], [think, call], [think, call], [think, {"text": "Done three times."}]]
    )
    server_cm, prompt_log = qwen3_server(
        tmp_path, "--script", script, model_name=model_name, family=family, tools=tools
    )
    with server_cm as server:
        env = claude_code_window_env(fetch_model_info(server, model_name, home=home))
        result = run_claude(
            server, "Run the command three times.", model=model_name, home=home, cwd=home / "project", extra_env=env
        )
    entries = [e for e in read_prompt_log(prompt_log) if e["stream"] == read_prompt_log(prompt_log)[0]["stream"]]
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server.log_text()
    assert len(entries) == 4 and "Done three times." in result.stdout
    for entry in entries:
        roles = [m["role"] for m in entry["request"]["messages"]]
        assert "system" in roles[1:], roles  # an inline system message in every request
    for previous, current in zip(entries, entries[1:], strict=False):
        assert current["prefix_stable"]
        assert current["prefix_matched_tokens"] == previous["prompt_tokens"]
    assert "WARNING" not in server.log_text()


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
