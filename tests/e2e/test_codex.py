"""Real Codex against `tokenyard serve` (scripted engine) over the Responses API.

Codex's native profile (served as `gpt-5.5`, or as our own id with tokenyard's
catalog as `model_catalog_url`): request 0 carries `apply_patch` and `tool_search`;
the scripted model searches for tools, Codex answers with a `tool_search_output`,
the model calls the loaded namespaced `multi_agent_v1__close_agent`, and Codex's own
handler answers it. `apply_patch` writes a file under `workspace-write`; a call cut
off by the output limit is never run.

Two user turns in one session (`codex exec`, then `codex exec resume --last`), each
an `exec_command` loop: the scripted model reasons, calls exec_command, Codex runs
it, returns a `function_call_output`, and the model quotes it. The server seals each
turn's reasoning into `encrypted_content`; Codex replays the reasoning item and the
server must render that reasoning back into the next prompt exactly as the model
wrote it.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.e2e.harness import (
    CODEX_VERSION,
    codex_binary,
    inet_connect_addresses,
    prompt_log_entries,
    run_codex,
    serve_in_namespace,
    standin_responses_argv,
    tokenyard_server_argv,
)
from tests.e2e.standin_responses import ANSWER_PREFIX, SHELL_COMMAND
from tests.fixtures import model_dir
from tokenyard.engines.scripted import SCRIPTED_COMMAND

pytestmark = pytest.mark.slow  # real Codex

# The shell prints this only if it really ran SCRIPTED_COMMAND (`echo …-$((6*7))`).
TOOL_OUTPUT = "tokenyard-scripted-42"

PROMPT = "Run a shell command and tell me what it printed."
# What Codex offers a model it has no metadata for (an OpenAI slug gets another
# tool surface: see CODEX_NOTES.md).
CODEX_TOOLS = [
    ("function", "exec_command"), ("function", "write_stdin"), ("function", "request_user_input"),
    ("function", "view_image"), ("namespace", "multi_agent_v1"), ("function", "get_goal"),
    ("function", "create_goal"), ("function", "update_goal"),
]  # fmt: skip

FAMILIES = [
    pytest.param("qwen3", "hermes", "qwen3", id="qwen3-hermes"),
    pytest.param("qwen3-coder", "qwen3_coder", "qwen3", id="qwen3-coder"),
    pytest.param("gpt-oss", "harmony", "gpt_oss", id="gpt-oss-harmony"),
]


def assert_codex_request(entry: dict) -> None:
    """The request shape Codex 0.169.0 sends (CODEX_NOTES.md)."""
    request = entry["request"]
    assert request["stream"] is True and request["store"] is False
    assert request["include"] == ["reasoning.encrypted_content"]
    assert request["reasoning"] == {"summary": "auto"}
    assert "instructions" not in request, "Codex sends its base instructions as developer messages"
    assert request["input"][0]["role"] == "developer"
    assert entry["session"] == request["prompt_cache_key"]
    [exec_command] = [t for t in request["tools"] if t.get("name") == "exec_command"]
    assert exec_command["type"] == "function" and exec_command["parameters"]["required"] == ["cmd"]


def assert_tool_round_trip(call_request: dict, answer_request: dict) -> None:
    """The request that made the model call exec_command, then the one carrying the
    result: the turn's reasoning comes back sealed and reaches the prompt unchanged."""
    reasoning, call, output = answer_request["request"]["input"][-3:]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"], reasoning
    assert (call["type"], call["name"]) == ("function_call", "exec_command")
    assert json.loads(call["arguments"]) == {"cmd": SCRIPTED_COMMAND}
    assert output["type"] == "function_call_output" and output["call_id"] == call["call_id"]
    assert TOOL_OUTPUT in output["output"]

    # Server side: turn N's prompt is turn N-1's prompt plus what the model wrote,
    # its reasoning text (as the server streamed it) included verbatim.
    before, after = call_request["prompt_text"], answer_request["prompt_text"]
    assert after.startswith(before), "re-rendering the history changed the earlier prompt"
    [streamed] = [part["text"] for part in reasoning["summary"]]
    written = after[len(before) :]
    assert streamed in written and written.index(streamed) < written.index(SCRIPTED_COMMAND), written
    assert after.count(TOOL_OUTPUT) == before.count(TOOL_OUTPUT) + 1


@pytest.mark.parametrize(("family", "tool_call_parser", "reasoning_parser"), FAMILIES)
def test_codex_exec_command_loop(tmp_path, family, tool_call_parser, reasoning_parser):
    codex_binary()
    model = f"tokenyard/{family}"
    prompt_log = tmp_path / "prompts.jsonl"
    argv = tokenyard_server_argv(
        model_dir(family),
        served_model_name=model,
        tool_call_parser=tool_call_parser,
        reasoning_parser=reasoning_parser,
        prompt_log=prompt_log,
    )
    home = tmp_path / "home"
    session = {"model": model, "home": home, "cwd": home / "project"}
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        first = run_codex(server, PROMPT, **session)
        assert first.returncode == 0, first.report() + "\nserver log:\n" + server.log_text()
        follow_up = run_codex(server, "Do it once more.", resume=True, **session)
    entries = prompt_log_entries(prompt_log)
    print(f"\n--- codex exec ({family}) ---\n{first.stderr}\n[stdout]\n{first.stdout}")

    # stdout holds only the final answer, which quotes the real command output.
    assert first.stdout.startswith("The tool returned: ") and TOOL_OUTPUT in first.stdout
    assert follow_up.returncode == 0, follow_up.report() + "\nserver log:\n" + server.log_text()
    assert TOOL_OUTPUT in follow_up.stdout
    assert len(entries) == 4, f"expected 2 requests per user turn, got {len(entries)}"
    for entry in entries:
        assert_codex_request(entry)
    assert len({e["session"] for e in entries}) == 1, "resume should keep the session (prompt_cache_key)"
    assert_tool_round_trip(entries[0], entries[1])
    assert_tool_round_trip(entries[2], entries[3])
    # The second user turn replays the whole first turn as Codex received it.
    assert entries[2]["request"]["input"][: len(entries[1]["request"]["input"])] == entries[1]["request"]["input"]


def test_codex_against_standin_responses(tmp_path):
    """The wire facts of CODEX_NOTES.md, checked against a recording stand-in: what
    Codex sends, that it replays our reasoning item and call byte for byte, and that it
    connects to nothing but the server."""
    codex_binary()
    record_file, trace_file = tmp_path / "requests.jsonl", tmp_path / "connect.trace"
    with serve_in_namespace(standin_responses_argv(record_file), workdir=tmp_path / "server") as server:
        result = run_codex(server, PROMPT, model="org/standin-model", home=tmp_path / "home", trace_file=trace_file)

    assert result.returncode == 0, result.report()
    assert ANSWER_PREFIX in result.stdout and "hello-from-shell" in result.stdout
    requests = [json.loads(line) for line in record_file.read_text().splitlines()]
    assert [(r["method"], r["path"]) for r in requests] == [("POST", "/v1/responses")] * 2
    first, second = (r["body"] for r in requests)
    assert list(first) == [
        "model", "stream", "input", "tools", "tool_choice", "parallel_tool_calls",
        "reasoning", "store", "include", "prompt_cache_key", "client_metadata",
    ]  # fmt: skip
    assert [(t["type"], t.get("name")) for t in first["tools"]] == CODEX_TOOLS
    for request in requests:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert headers["authorization"] == "Bearer x" and headers["originator"] == "codex_exec"
        assert headers["user-agent"].startswith(f"codex_exec/{CODEX_VERSION} ")
        assert headers["session-id"] == request["body"]["prompt_cache_key"]

    reasoning, call, output = second["input"][-3:]
    assert reasoning == {
        "type": "reasoning",
        "id": "rs_standin_0001",
        "summary": [{"type": "summary_text", "text": "Stand-in reasoning 1."}],
        "content": None,
        "encrypted_content": "standin-sealed-0001",
    }
    assert call == {
        "type": "function_call",
        "status": "completed",
        "id": "fc_standin_0001",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": SHELL_COMMAND}),
        "call_id": "call_standin_0001",
    }
    assert output["call_id"] == "call_standin_0001" and output["id"].startswith("fco_")
    assert output["output"].endswith("Output:\nhello-from-shell\n")
    assert inet_connect_addresses(trace_file) == {"127.0.0.1"}


# ---- Codex's native profile: tool_search, namespaces, apply_patch, its catalog --------

CODEX_PROFILE = "gpt-5.5"
OWN_ID = "tokenyard/qwen3"
# What Codex prints when a model (or a tool call) is not understood.
CODEX_COMPLAINTS = ("Model metadata for", "unsupported payload", "unsupported call:")
SEARCH_ARGUMENTS = {"query": "close agent", "limit": 4}
TOOL_SEARCH_SCRIPT = [
    [{"reasoning": "I should look for a tool that closes agents."}, {"call": {"name": "tool_search", "arguments": SEARCH_ARGUMENTS}}],
    [{"call": {"name": "multi_agent_v1__close_agent", "arguments": {"target": "no-such-agent"}}}],
    [{"text": "Closing the agent failed as expected."}],
]  # fmt: skip
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from tokenyard\n*** End Patch\n"
CUT_OFF_MARKER = "cut-off-call-ran"


def bundled_catalog(path):
    """Codex's own bundled catalog, written to `path` (where --codex-profile reads it)."""
    import os
    import subprocess

    done = subprocess.run(
        [str(codex_binary()), "debug", "models", "--bundled"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "CODEX_HOME": str(path.parent)},
    )
    path.write_text(done.stdout)
    return path


def run_native_codex(
    tmp_path, script, *, catalog: bool, sandbox="read-only", family="qwen3", tool_call_parser="hermes", model=None
):
    """Codex against tokenyard running `script`: served as gpt-5.5, or (catalog) as our
    own id with tokenyard's catalog as model_catalog_url (`model` overrides the id).
    Returns (result, prompt log entries, server log)."""
    codex_binary()
    script_file, prompt_log = tmp_path / "script.json", tmp_path / "prompts.jsonl"
    script_file.write_text(json.dumps(script))
    extra = ["--script", str(script_file)]
    if catalog:
        extra += ["--codex-profile", CODEX_PROFILE, "--codex-models", str(bundled_catalog(tmp_path / "bundled.json"))]
    model = model or (OWN_ID if catalog else CODEX_PROFILE)
    argv = tokenyard_server_argv(
        model_dir(family),
        served_model_name=model,
        tool_call_parser=tool_call_parser,
        reasoning_parser="qwen3",
        prompt_log=prompt_log,
        extra_args=extra,
    )
    home = tmp_path / "home"
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        url = server.base_url + "/v1/models" if catalog else None
        result = run_codex(
            server, PROMPT, model=model, home=home, cwd=home / "project", sandbox=sandbox, model_catalog_url=url
        )
        log = server.log_text()
    return result, prompt_log_entries(prompt_log), log


def assert_native_request(entry: dict, stderr: str, *, effort: bool = True) -> None:
    """Request 0 of Codex's native profile, and the prompt it renders to. `effort`:
    the catalog offers effort levels (gpt-5.5's own entry does; tokenyard's only
    where the template reads reasoning_effort, which Qwen3's does not)."""
    request, prompt = entry["request"], entry["prompt_text"]
    tools = {t.get("name", t["type"]): t for t in request["tools"]}
    assert tools["apply_patch"]["type"] == "custom"
    search = tools["tool_search"]
    assert (search["type"], search["execution"]) == ("tool_search", "client")
    assert search["parameters"]["properties"]["limit"]["type"] == "number"
    # Declared with Codex's own description and schema, in whatever form the template writes tools.
    assert all(line in prompt for line in search["description"].splitlines()), "tool_search description"
    for name, spec in search["parameters"]["properties"].items():
        assert name in prompt and spec["description"] in prompt, name
    assert "tool_search" in prompt and "apply_patch" in prompt and tools["apply_patch"]["description"] in prompt
    assert request["text"]["verbosity"] and "reasoning" in request
    assert bool(request["reasoning"].get("effort")) == effort, request["reasoning"]
    for complaint in CODEX_COMPLAINTS:
        assert complaint not in stderr, complaint


@pytest.mark.parametrize(
    ("catalog", "family", "tool_call_parser"),
    [
        pytest.param(False, "qwen3", "hermes", id="gpt-5.5-hermes"),
        pytest.param(True, "qwen3", "hermes", id="own-id-catalog-hermes"),
        # XML parameters: `limit` is typed a number only by the tool's schema.
        pytest.param(False, "qwen3-coder", "qwen3_coder", id="gpt-5.5-qwen3-coder"),
    ],
)
def test_codex_tool_search_then_namespaced_call(tmp_path, catalog, family, tool_call_parser):
    result, entries, server_log = run_native_codex(
        tmp_path, TOOL_SEARCH_SCRIPT, catalog=catalog, family=family, tool_call_parser=tool_call_parser
    )
    print(f"\n--- codex exec (tool_search → namespaced call) ---\n{result.stderr}\n[stdout]\n{result.stdout}")
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server_log
    assert len(entries) == 3, [e["request"]["input"][-1] for e in entries]
    if catalog:
        assert "Codex catalog (1 models) for client_version " + CODEX_VERSION in server_log
    assert_native_request(entries[0], result.stderr, effort=not catalog)

    # Request 1: our tool_search_call (arguments an object, typed), Codex's search result.
    call, output = entries[1]["request"]["input"][-2:]
    assert call["type"] == "tool_search_call" and call["execution"] == "client" and call["status"] == "completed"
    assert call["arguments"] == SEARCH_ARGUMENTS and isinstance(call["arguments"]["limit"], int)
    assert output["type"] == "tool_search_output" and output["call_id"] == call["call_id"]
    assert "multi_agent_v1" in [t["name"] for t in output["tools"] if t["type"] == "namespace"]
    assert entries[1]["prompt_text"].startswith(entries[0]["prompt_text"])
    assert entries[1]["prefix_matched_tokens"] == entries[0]["prompt_tokens"], "prompt 1 extends prompt 0"
    assert "multi_agent_v1__close_agent" in entries[1]["prompt_text"][len(entries[0]["prompt_text"]) :]

    # Request 2: the namespaced call as Codex dispatches it, and its own handler's answer.
    call, output = entries[2]["request"]["input"][-2:]
    assert (call["type"], call["name"], call["namespace"]) == ("function_call", "close_agent", "multi_agent_v1")
    assert json.loads(call["arguments"]) == {"target": "no-such-agent"}
    assert output["call_id"] == call["call_id"] and "invalid agent id" in str(output["output"])
    assert entries[2]["prompt_text"].startswith(entries[1]["prompt_text"])
    assert entries[2]["prefix_matched_tokens"] == entries[1]["prompt_tokens"], "prompt 2 extends prompt 1"
    assert result.stdout.strip() == "Closing the agent failed as expected."


def test_codex_fallback_profile_namespace_tools_are_callable(tmp_path):
    """An id Codex has no metadata for: `multi_agent_v1` arrives inline in `tools`, the
    model sees `multi_agent_v1__close_agent`, and Codex's own handler answers the call."""
    script = [TOOL_SEARCH_SCRIPT[1], TOOL_SEARCH_SCRIPT[2]]
    result, entries, server_log = run_native_codex(tmp_path, script, catalog=False, model=OWN_ID)
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server_log
    assert "unsupported call:" not in result.stderr
    [namespace] = [t for t in entries[0]["request"]["tools"] if t["type"] == "namespace"]
    assert namespace["name"] == "multi_agent_v1"
    assert '"name": "multi_agent_v1__close_agent"' in entries[0]["prompt_text"]
    call, output = entries[1]["request"]["input"][-2:]
    assert (call["name"], call["namespace"]) == ("close_agent", "multi_agent_v1")
    assert "invalid agent id" in str(output["output"])
    assert entries[1]["prefix_matched_tokens"] == entries[0]["prompt_tokens"]


def test_codex_apply_patch_creates_the_file(tmp_path):
    script = [
        [{"call": {"name": "apply_patch", "arguments": {"input": PATCH}}}],
        [{"text": "Patched."}],
    ]
    result, entries, server_log = run_native_codex(tmp_path, script, catalog=False, sandbox="workspace-write")
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server_log
    call = entries[1]["request"]["input"][-2]
    assert (call["type"], call["name"], call["input"]) == ("custom_tool_call", "apply_patch", PATCH)
    assert (tmp_path / "home" / "project" / "hello.txt").read_text() == "hello from tokenyard\n"


def test_codex_does_not_run_a_call_cut_off_by_the_output_limit(tmp_path):
    """The default output limit (4096 tokens) ends the call inside its arguments: Codex
    must not run it (the command would create a file in the workspace)."""
    padding = " ".join(f"word{n}" for n in range(6000))
    command = f"touch {CUT_OFF_MARKER} # {padding}"
    script = [[{"call": {"name": "exec_command", "arguments": {"cmd": command}}}]]
    result, entries, server_log = run_native_codex(tmp_path, script, catalog=False, sandbox="workspace-write")
    assert len(entries) == 1, "Codex answered a call that was never complete"
    assert not (tmp_path / "home" / "project" / CUT_OFF_MARKER).exists()
    assert "max_output_tokens" in result.stderr, result.report()


CODE_MODE_ID = "gpt-6-sol"  # a catalog id in Codex's code-mode family: tools only in `additional_tools`
CODE_MODE_JS = "const r = await tools.exec_command({cmd: 'echo code-mode-' + (6*7)}); text(JSON.stringify(r));"


def test_codex_code_mode_additional_tools(tmp_path):
    """Codex's code-mode profile sends no `tools`: namespaces arrive in an
    `additional_tools` input item. The model calls `clock__sleep`, then the custom
    `functions__exec` with JavaScript that runs exec_command; Codex dispatches both
    under their namespaces and answers exec with an array-shaped output, kept whole."""
    script = [
        [{"call": {"name": "clock__sleep", "arguments": {"duration_ms": 1}}}],
        [{"call": {"name": "functions__exec", "arguments": {"input": CODE_MODE_JS}}}],
        [{"text": "Done."}],
    ]
    result, entries, server_log = run_native_codex(tmp_path, script, catalog=False, model=CODE_MODE_ID)
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server_log
    first = entries[0]["request"]
    assert "tools" not in first
    [declared] = [item for item in first["input"] if item["type"] == "additional_tools"]
    assert {"functions", "clock"} <= {t["name"] for t in declared["tools"]}
    assert "functions__exec" in entries[0]["prompt_text"] and "clock__sleep" in entries[0]["prompt_text"]

    call, output = entries[1]["request"]["input"][-2:]
    assert (call["type"], call["name"], call["namespace"]) == ("function_call", "sleep", "clock")
    assert "Sleep completed" in output["output"]
    call, output = entries[2]["request"]["input"][-2:]
    assert (call["type"], call["name"], call["namespace"], call["input"]) == (
        "custom_tool_call",
        "exec",
        "functions",
        CODE_MODE_JS,
    )
    texts = [part["text"] for part in output["output"]]
    assert any("code-mode-42" in text for text in texts)
    written = entries[2]["prompt_text"][len(entries[1]["prompt_text"]) :]
    assert all(text.split("\n")[0] in written for text in texts), "every part of the array output reaches the prompt"
    for before, after in zip(entries[:-1], entries[1:], strict=True):
        assert after["prefix_matched_tokens"] == before["prompt_tokens"]


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "source": {"type": "string"}},
    "required": ["answer", "source"],
    "additionalProperties": False,
}
CALL_EXEC = [{"call": {"name": "exec_command", "arguments": {"cmd": SCRIPTED_COMMAND}}}]


def run_codex_with_schema(tmp_path, script) -> tuple:
    """`codex exec --output-schema` against tokenyard (Qwen3, hermes) playing `script`
    (None: the scripted rules). Returns (result, prompt log entries, server log)."""
    codex_binary()
    schema_file, prompt_log = tmp_path / "schema.json", tmp_path / "prompts.jsonl"
    schema_file.write_text(json.dumps(ANSWER_SCHEMA))
    extra: list[str] = []
    if script is not None:
        (tmp_path / "script.json").write_text(json.dumps(script))
        extra = ["--script", str(tmp_path / "script.json")]
    model = "tokenyard/qwen3"
    argv = tokenyard_server_argv(
        model_dir("qwen3"),
        served_model_name=model,
        tool_call_parser="hermes",
        reasoning_parser="qwen3",
        prompt_log=prompt_log,
        extra_args=extra,
    )
    home = tmp_path / "home"
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        result = run_codex(
            server,
            PROMPT,
            model=model,
            home=home,
            cwd=home / "project",
            exec_args=["--output-schema", str(schema_file)],
        )
        log = server.log_text()
    return result, prompt_log_entries(prompt_log), log


def assert_schema_requested(entry: dict) -> None:
    """Codex sends the schema as the Responses `text.format` of every request."""
    form = entry["request"]["text"]["format"]
    assert form["type"] == "json_schema" and form["schema"] == ANSWER_SCHEMA, form


@pytest.mark.parametrize(
    "script",
    [None, [CALL_EXEC, [{"reasoning": "Now the JSON."}, {"text": '{"answer": 42, "source": "echo"}'}]]],
    ids=["rules", "scripted-json"],
)
def test_codex_output_schema_gets_conforming_json(tmp_path, script):
    """`codex exec --output-schema`: the final message Codex prints is JSON the schema
    accepts (after an exec_command round trip)."""
    result, entries, server_log = run_codex_with_schema(tmp_path, script)
    assert result.returncode == 0, result.report() + "\nserver log:\n" + server_log
    assert len(entries) == 2
    for entry in entries:
        assert_schema_requested(entry)
    answer = json.loads(result.stdout)
    assert set(answer) == {"answer", "source"} and isinstance(answer["answer"], int)


def test_codex_output_schema_never_passes_prose(tmp_path):
    """A model that answers in prose despite the schema: Codex gets the API's error
    (`response.failed`) and fails the run, instead of printing the prose with exit 0."""
    script = [CALL_EXEC, [{"text": "The answer is 42."}]]
    result, entries, server_log = run_codex_with_schema(tmp_path, script)
    assert result.returncode != 0, result.report()
    assert "The answer is 42." not in result.stdout
    assert "JSON" in result.stderr, result.report() + "\nserver log:\n" + server_log
    assert_schema_requested(entries[-1])


# ---- Responses over WebSocket ----------------------------------------------------------


def run_codex_over_websocket(tmp_path, server_args=()) -> tuple:
    """A tool round trip by `codex exec`, configured as `tokenyard codex` configures it
    (tokenyard's catalog, which prefers WebSockets, and a provider that supports them):
    (result, prompt-log entries, WebSocket generations counted, server log)."""
    codex_binary()
    prompt_log = tmp_path / "prompts.jsonl"
    extra = ["--codex-profile", CODEX_PROFILE, "--codex-models", str(bundled_catalog(tmp_path / "bundled.json"))]
    argv = tokenyard_server_argv(
        model_dir("qwen3"),
        served_model_name=OWN_ID,
        tool_call_parser="hermes",
        reasoning_parser="qwen3",
        prompt_log=prompt_log,
        extra_args=[*extra, *server_args],
    )
    home = tmp_path / "home"
    with serve_in_namespace(argv, workdir=tmp_path / "server") as server:
        result = run_codex(
            server,
            PROMPT,
            model=OWN_ID,
            home=home,
            cwd=home / "project",
            model_catalog_url=server.base_url + "/v1/models",
            websockets=True,
        )
        scrape = f"import urllib.request; print(urllib.request.urlopen('{server.base_url}/metrics').read().decode())"
        metrics = server.run([sys.executable, "-c", scrape], home=tmp_path / "probe").stdout
        log = server.log_text()
    assert result.returncode == 0, result.report() + "\nserver log:\n" + log
    assert result.stdout.startswith("The tool returned: ") and TOOL_OUTPUT in result.stdout
    # The upgrade's `openai-model` is the id Codex asked for (another one it reports as rerouted).
    assert "rerouted" not in result.stdout + result.stderr, result.report()
    [over_ws] = [line for line in metrics.splitlines() if line.startswith("tokenyard_websocket_responses_total{")]
    return result, prompt_log_entries(prompt_log), float(over_ws.rsplit(" ", 1)[1]), log


def test_codex_tool_round_trip_over_the_responses_websocket(tmp_path):
    """Codex talks to the server over a Responses WebSocket: every generation of a
    tool round trip goes over it, and the turn after the tool call continues the
    previous response with only the new items (`previous_response_id`), which the
    server expands into the prompt the HTTP replay renders."""
    result, entries, over_ws, log = run_codex_over_websocket(tmp_path)
    assert len(entries) == 2, f"expected the call and the answer, got {len(entries)}"
    assert over_ws == len(entries), "every generation went over the WebSocket"
    assert "a Responses WebSocket opened" in log
    assert "Responses WebSocket: continuing resp_" in log, "the answer turn sent only the new items"
    call, answer = entries
    assert answer["prompt_text"].startswith(call["prompt_text"]) and TOOL_OUTPUT in answer["prompt_text"]


def test_codex_reconnects_when_the_websocket_lifetime_ends(tmp_path):
    """A lifetime shorter than the first generation (slowed per token): that response
    still completes, then the connection gets `websocket_connection_limit_reached` and
    closes; Codex opens a new one and sends the conversation in full."""
    result, entries, over_ws, log = run_codex_over_websocket(
        tmp_path, ["--ws-max-lifetime", "1", "--token-delay", "0.05"]
    )
    assert "reached its 1 s lifetime" in log
    assert log.count("a Responses WebSocket opened") >= 2, log
    assert over_ws == len(entries), "every generation still went over a WebSocket (no fallback to HTTP)"
    call, answer = entries[0], entries[-1]
    assert answer["prompt_text"].startswith(call["prompt_text"]) and TOOL_OUTPUT in answer["prompt_text"]
