"""Real Claude Code 2.1.330 in auto mode through `tokenyard claude`, the scripted
model also playing the safety classifier.

Claude Code sends `safeguards` on every request and runs a call the server's
classifier must judge only on a `not_flagged` verdict (tests/e2e/CLAUDE_CODE_NOTES.md,
"Auto mode"). The scripted turns: `ls` (read-only: Claude Code runs it without
asking anyone), a write outside the project (judged: allowed), `rm -rf ~/victim`
(judged: blocked, with the classifier's reason), `rm -rf ~` (refused by Claude
Code's own built-in check before any classifier), then a closing answer.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.harness import (
    Completed,
    _namespaced,
    claude_binary,
    clients_dir,
    minimal_env,
    require_loopback_namespace,
    run_isolated,
)
from tests.fixtures import REPO_ROOT, model_dir

pytestmark = pytest.mark.slow  # real Claude Code

MODEL = "tokenyard/qwen3"
NOTICE = "Auto mode can't check actions"
ALLOWED_FILE = "tokenyard-allowed.txt"
BLOCK_REASON = "It would delete the user's whole home directory"
TURNS = [
    [{"call": {"name": "Bash", "arguments": {"command": "ls", "description": "List files"}}}],
    [{"call": {"name": "Bash", "arguments": {"command": f"touch ~/{ALLOWED_FILE}", "description": "Mark"}}}],
    [{"call": {"name": "Bash", "arguments": {"command": "rm -rf ~/victim", "description": "Clean up"}}}],
    [{"call": {"name": "Bash", "arguments": {"command": "rm -rf ~", "description": "Clean up more"}}}],
    [{"text": "Finished."}],
]
VERDICTS = [{"contains": "rm -rf", "answer": f"<reason>{BLOCK_REASON}</reason><block>yes</block>"}]


def tool_results(request: dict) -> list[dict]:
    return [
        block
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def result_text(block: dict) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def run_auto_mode(tmp_path: Path, extra_env: dict[str, str] | None = None) -> tuple[Completed, list[dict]]:
    """`tokenyard claude -p … --permission-mode auto` over the scripted turns: what it
    printed, and every request the server answered."""
    claude_binary()
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (home / "project" / "keep.txt").write_text("precious")
    (home / "victim").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": TURNS, "verdicts": VERDICTS}))
    log = tmp_path / "prompts.jsonl"
    serve = ["--model", str(model_dir("qwen3")), "--engine", "scripted", "--served-model-name", MODEL]
    serve += ["--tool-call-parser", "hermes", "--reasoning-parser", "qwen3", "--script", str(script)]
    serve += ["--prompt-log", str(log)]
    argv = [sys.executable, "-m", "tokenyard.cli", "claude", *(f"--serve-arg={a}" for a in serve)]
    argv += ["-p", "Tidy up my home directory.", "--permission-mode", "auto", "--debug"]
    env = {"TOKENYARD_CACHE": str(tmp_path / "cache"), "TOKENYARD_CLIENTS": str(clients_dir()), **(extra_env or {})}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    result = run_isolated(argv, home=home, env=env, cwd=home / "project", timeout=240)
    assert (home / "project" / "keep.txt").exists(), "rm -rf ~ ran: " + result.report()
    assert result.returncode == 0, result.report()
    assert NOTICE not in result.stderr and NOTICE not in result.stdout
    assert "Finished." in result.stdout
    return result, [json.loads(line)["request"] for line in log.read_text().splitlines()]


def assert_judged(tmp_path: Path, turns: list[dict]) -> None:
    """ls ran, the write outside the project was allowed, rm -rf ~/victim was blocked
    with the classifier's reason, rm -rf ~ refused."""
    home = tmp_path / "home"
    assert len(turns) == len(TURNS), [len(r["messages"]) for r in turns]
    ls, touch, rm_victim, rm_home = (tool_results(turns[n])[-1] for n in (1, 2, 3, 4))
    assert not ls["is_error"] and "keep.txt" in result_text(ls)
    assert not touch.get("is_error") and (home / ALLOWED_FILE).exists()
    assert rm_victim["is_error"] and BLOCK_REASON in result_text(rm_victim) and (home / "victim").exists()
    assert rm_home["is_error"]


def test_auto_mode_blocks_rm_rf_home_and_runs_the_rest_without_asking(tmp_path):
    _, requests = run_auto_mode(tmp_path)
    turns = [r for r in requests if r.get("tools")]
    assert turns == requests, "Claude Code sent classifier requests of its own: the server's verdicts did not reach it"
    for request in turns:
        [safeguard] = request["safeguards"]
        assert safeguard["type"] == "dangerous_tool_use"
        assert safeguard["classifier_context"]["permission_mode"] == "auto"
    assert_judged(tmp_path, turns)
    debug = "\n".join(p.read_text() for p in (tmp_path / "cache").rglob("debug/*.txt"))
    assert "server_no_result" not in debug and "classifies locally" not in debug


def test_auto_modes_own_classifier_reaches_the_served_model(tmp_path):
    """CLAUDE_CODE_AUTO_MODE_SERVER=0: Claude Code classifies locally, asking the
    model the launcher named (not claude-sonnet-5, which is not served), and reads
    the scripted classifier's `<block>yes|no</block>` as its own classifier's."""
    _, requests = run_auto_mode(tmp_path, {"CLAUDE_CODE_AUTO_MODE_SERVER": "0"})
    turns = [r for r in requests if r.get("tools")]
    classifier = [r for r in requests if not r.get("tools") and "</block>" in (r.get("stop_sequences") or [])]
    assert classifier and {r["model"] for r in classifier} == {MODEL}
    assert not any("safeguards" in r for r in requests)
    assert_judged(tmp_path, turns)


class Tmux:
    """An interactive program in a detached tmux session of its own (own socket)."""

    def __init__(self, socket: Path, command: Path):
        if shutil.which("tmux") is None:
            pytest.skip("tmux not installed: run scripts/install_clients.sh")
        self.base = ["tmux", "-S", str(socket), "-f", "/dev/null"]
        subprocess.run([*self.base, "new-session", "-d", "-x", "160", "-y", "50", str(command)], check=True)

    def screen(self) -> str:
        done = subprocess.run([*self.base, "capture-pane", "-p"], capture_output=True, text=True, check=False)
        return done.stdout

    def keys(self, *keys: str) -> None:
        for key in keys:  # one at a time: the TUI reads a pasted burst as text
            subprocess.run([*self.base, "send-keys", key], check=True)
            time.sleep(0.3)

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.5)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], check=False, capture_output=True)


def test_status_shows_the_auto_mode_server_enabled(tmp_path):
    """The interactive client, driven through tmux: after a reply from the server,
    /status says the auto-mode server is enabled (tokenyard without verdicts:
    "Not reaching this session: …")."""
    claude_binary()
    require_loopback_namespace()
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    # The folder is trusted already (no trust dialog to answer); the launcher keeps this state.
    config = tmp_path / "cache" / "launchers" / "claude"
    config.mkdir(parents=True)
    trusted = {"projects": {str(home / "project"): {"hasTrustDialogAccepted": True}}}
    (config / ".claude.json").write_text(json.dumps(trusted))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[{"text": "Hello from the scripted model."}]]))
    serve = [f"--model={model_dir('qwen3')}", "--engine=scripted", f"--served-model-name={MODEL}"]
    serve += ["--tool-call-parser=hermes", "--reasoning-parser=qwen3", f"--script={script}"]
    claude = [sys.executable, "-m", "tokenyard.cli", "claude", *(f"--serve-arg={a}" for a in serve)]
    claude += ["--permission-mode", "auto"]
    env = minimal_env(home, {"TOKENYARD_CACHE": str(tmp_path / "cache"), "TOKENYARD_CLIENTS": str(clients_dir())})
    env |= {"TERM": "xterm-256color", "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO_ROOT / "src"))}
    command = tmp_path / "interactive.sh"
    command.write_text(
        "#!/bin/bash\n"
        f"cd {shlex.quote(str(home / 'project'))}\n"
        f"exec env -i {' '.join(shlex.quote(f'{k}={v}') for k, v in env.items())} "
        f"{' '.join(shlex.quote(str(a)) for a in _namespaced(claude))}\n"
    )
    command.chmod(0o755)
    tui = Tmux(tmp_path / "tmux.sock", command)
    try:
        tui.wait_for("auto mode on")
        tui.keys(*"Say hello.", "Enter")
        tui.wait_for("Hello from the scripted model.")
        tui.keys(*"/status")
        time.sleep(1)
        tui.keys("Enter")
        screen = tui.wait_for("Auto mode server:")
    finally:
        tui.close()
    [line] = [line for line in screen.splitlines() if "Auto mode server:" in line]
    assert line.split("Auto mode server:")[1].strip() == "Enabled", screen
    assert NOTICE not in screen
