"""`tokenyard claude | codex | openclaw` complete a real tool round trip.

Each runs in a fresh loopback-only namespace with a fresh HOME: the launcher finds
no server, starts `tokenyard serve` (scripted engine, a fixture model) itself, writes
the client's configuration into its own folder, runs the real CLI, and stops the
server when the CLI exits. The user's own client configuration under HOME is never
written.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import Completed, claude_binary, clients_dir, codex_binary, openclaw_binary, run_isolated
from tests.fixtures import model_dir

pytestmark = pytest.mark.slow  # the real CLIs

TOOL_OUTPUT = "tokenyard-scripted-42"  # only if the shell really ran the scripted command
PROMPT = "Run a shell command and tell me what it printed."
MODEL = "tokenyard/qwen3-coder"
PORT = 8000  # the launcher's default URL; every namespace has its own port space


def launch(
    tmp_path: Path,
    client: str,
    *client_args: str,
    timeout: float = 180,
    extra_env: dict[str, str] | None = None,
    serve_args: tuple[str, ...] = (),
    wrapper: list[str] | None = None,
) -> Completed:
    home = tmp_path / "home"
    serve = ["--model", str(model_dir("qwen3-coder")), "--engine", "scripted", "--served-model-name", MODEL]
    serve += ["--tool-call-parser", "qwen3_coder", "--reasoning-parser", "qwen3", *serve_args]
    argv = [sys.executable, "-m", "tokenyard.cli", client, *(f"--serve-arg={a}" for a in serve), *client_args]
    argv = [*(wrapper or []), *argv]
    env = {"TOKENYARD_CACHE": str(tmp_path / "cache"), "TOKENYARD_CLIENTS": str(clients_dir()), **(extra_env or {})}
    if "PYTHONPATH" in os.environ:  # a source checkout under test rather than the installed package
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return run_isolated(argv, home=home, env=env, cwd=home / "project", timeout=timeout)


def assert_untouched_home(tmp_path: Path, *names: str) -> None:
    home = tmp_path / "home"
    assert not [n for n in names if (home / n).exists()], "the launcher wrote the user's own client configuration"


def test_tokenyard_claude(tmp_path):
    claude_binary()
    result = launch(tmp_path, "claude", "-p", PROMPT, "--allowedTools", "Bash")
    assert result.returncode == 0, result.report()
    assert TOOL_OUTPUT in result.stdout, result.report()
    assert f"ANTHROPIC_MODEL={MODEL}" in result.stderr, "the launcher says what it set"
    assert "[claude-code:unrecognized_model]" not in result.stderr, result.report()
    assert (tmp_path / "cache" / "launchers" / "claude" / ".claude.json").exists()
    assert_untouched_home(tmp_path, ".claude.json", ".claude")


def test_tokenyard_claude_with_a_small_fast_model(tmp_path):
    """A server with a second, smaller model (Llama 3.1's tokenizer and template): the
    launcher hands it to Claude Code as ANTHROPIC_SMALL_FAST_MODEL and the smaller
    window as the one window; the tool loop runs on the main model, and every request
    names one of the two."""
    claude_binary()
    log = tmp_path / "prompts.jsonl"
    fast = f"fast={model_dir('llama-3.1')},alias=claude-haiku-4-5,max_model_len=32768"
    result = launch(
        tmp_path,
        "claude",
        "-p",
        PROMPT,
        "--allowedTools",
        "Bash",
        serve_args=("--max-model-len", "65536", "--serve-model", fast, "--prompt-log", str(log)),
    )
    assert result.returncode == 0, result.report()
    # One window for both (Claude Code reads one): the small model's, so what it is sent fits.
    assert "CLAUDE_CODE_MAX_CONTEXT_TOKENS=32768" in result.stderr, result.report()
    assert TOOL_OUTPUT in result.stdout, result.report()
    assert "ANTHROPIC_SMALL_FAST_MODEL=fast" in result.stderr and f"ANTHROPIC_MODEL={MODEL}" in result.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    models = [r["request"]["model"] for r in records]
    assert MODEL in models and set(models) <= {MODEL, "fast"}, models
    for record in records:  # each request rendered by its own model's template
        marker = "<|im_start|>" if record["request"]["model"] == MODEL else "<|start_header_id|>"
        assert marker in record["prompt_text"]
    print(f"\nrequests by model: { {m: models.count(m) for m in set(models)} }")


def test_tokenyard_codex(tmp_path):
    codex_binary()
    result = launch(tmp_path, "codex", "exec", PROMPT)  # outside a git repository: the launcher allows it
    assert result.returncode == 0, result.report()
    assert TOOL_OUTPUT in result.stdout, result.report()
    assert "Model metadata for" not in result.stderr, "Codex fell back to guessed metadata: no catalog"
    config = (tmp_path / "cache" / "launchers" / "codex" / "config.toml").read_text()
    assert "supports_websockets = true" in config, "the server's catalog prefers the Responses WebSocket"
    assert_untouched_home(tmp_path, ".codex")


def test_tokenyard_codex_lean_profile_drops_the_subagent_tools_without_a_deprecation_warning(tmp_path):
    """`--lean`: Codex's first request carries its core tools and none of the surfaces
    the profile turns off (sub-agents, goals), and Codex warns about nothing in the
    config the launcher wrote (0.169 deprecates `[features].multi_agent`)."""
    codex_binary()
    log = tmp_path / "prompts.jsonl"
    result = launch(tmp_path, "codex", "--lean", "exec", PROMPT, serve_args=("--prompt-log", str(log)))
    assert result.returncode == 0, result.report()
    assert TOOL_OUTPUT in result.stdout, result.report()
    assert "tokenyard codex: lean profile" in result.stderr, result.report()
    assert "deprecated" not in result.stderr, result.report()
    first = json.loads(log.read_text().splitlines()[0])["request"]
    names = {tool.get("name") for tool in first["tools"]}
    assert "exec_command" in names, names
    assert not {n for n in names if n and ("agent" in n or "goal" in n)}, names


def test_tokenyard_codex_tui_leaves_nothing_running(tmp_path):
    """The interactive TUI runs a tool turn and is quit with Ctrl-C: nothing it
    started (Codex's managed `codex app-server` daemon and its updater loop run in
    sessions of their own) outlives `tokenyard codex`."""
    codex_binary()
    cache = tmp_path / "cache"
    driver = [sys.executable, str(Path(__file__).with_name("tui_session.py")), str(cache), TOOL_OUTPUT, PROMPT, "--"]
    result = launch(tmp_path, "codex", timeout=300, extra_env={"TERM": "xterm-256color"}, wrapper=driver)
    assert result.returncode == 0, result.report()
    session = json.loads(result.stdout.strip().splitlines()[-1])
    assert session["ready"] and session["answered"], session["screen"]
    assert session["left"] == [], session["left"]


def test_tokenyard_openclaw(tmp_path):
    openclaw_binary()
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    result = launch(
        tmp_path, "openclaw", "agent", "exec", "--code-mode", "direct", "--thinking", "off", "--timeout", "150",
        "--cwd", str(home / "project"), PROMPT,
        timeout=240,
        # No helper-binary downloads or self-update in a namespace without a network.
        extra_env={"OPENCLAW_OFFLINE": "1", "OPENCLAW_NO_AUTO_UPDATE": "1", "TMPDIR": str(home / "tmp")},
    )  # fmt: skip
    assert result.returncode == 0, result.report()
    assert TOOL_OUTPUT in result.stdout, result.report()
    assert_untouched_home(tmp_path, ".openclaw")


@pytest.mark.parametrize("how", ["ctrl-c", "killed"])
def test_ctrl_c_on_a_launcher_stops_its_server_cleanly(tmp_path, how):
    """Ctrl-C (SIGINT to the launcher's process group, as a terminal sends it) while
    the scripted model streams slowly: the client ends, the launcher stops the server
    it started once, gracefully (the server has a session of its own, so the terminal's
    signal does not reach it twice), the server log holds no traceback, and the run
    does not report success. `killed`: what `timeout -k` does, SIGTERM to the launcher
    (it stops its server: one SIGINT) and SIGKILL soon after (the parent-death signal
    is a second SIGINT, mid-shutdown): the server still shuts down cleanly."""
    import signal
    import subprocess
    import time

    from tests.e2e import harness

    claude_binary()
    harness.require_loopback_namespace()
    home = tmp_path / "home"
    serve = ["--model", str(model_dir("qwen3-coder")), "--engine", "scripted", "--served-model-name", MODEL]
    serve += ["--tool-call-parser", "qwen3_coder", "--token-delay", "0.5"]
    argv = [sys.executable, "-m", "tokenyard.cli", "claude", *(f"--serve-arg={a}" for a in serve)]
    argv += ["-p", PROMPT, "--allowedTools", "Bash"]
    env = {"TOKENYARD_CACHE": str(tmp_path / "cache"), "TOKENYARD_CLIENTS": str(clients_dir())}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    log = tmp_path / "cache" / "launchers" / "server" / "server.log"
    (home / "project").mkdir(parents=True)
    process = subprocess.Popen(
        harness._namespaced(argv),
        env=harness.minimal_env(home, env),
        cwd=home / "project",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and "new stream" in log.read_text(errors="replace")):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.2)
        time.sleep(1)  # the scripted model is mid-answer
        if how == "ctrl-c":
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGTERM)  # the launcher (unshare exec'd into it)
            time.sleep(0.05)  # its SIGINT to the server is sent; the server is shutting down
            process.kill()
            process.wait(timeout=30)
            deadline = time.monotonic() + 60  # a killed launcher does not wait for its server
            while "Finished server process" not in log.read_text(errors="replace") and time.monotonic() < deadline:
                time.sleep(0.2)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the client it left behind
        stdout, stderr = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    server_log = log.read_text(errors="replace")
    report = f"exit {process.returncode}\nstderr:\n{stderr}\nserver log:\n{server_log[-3000:]}"
    assert process.returncode == (130 if how == "ctrl-c" else -signal.SIGKILL), report
    assert "Application shutdown complete" in server_log, report
    assert "Traceback" not in server_log and "Traceback" not in stderr, report
