"""`tokenyard serve --processes 2`: two server processes on one port, sharing only the
sealing key. A Claude Code tool loop whose turns land on either process (a fresh
connection per turn; the kernel spreads them) renders every turn's prompt as an
extension of the last; Ctrl-C stops both with status 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anthropic
import httpx

from ..fixtures import model_dir
from .serving import free_port
from .test_anthropic_api import ask

# Thinks, then calls Bash with compact JSON, on every turn.
TURN = '<think>\nThinking.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command":"step  N"}}\n</tool_call>'
MAX_TURNS = 40


def test_two_processes_answer_alternately_with_the_same_prompt(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[{"raw": TURN.replace("N", str(i))}] for i in range(MAX_TURNS + 1)]))
    log = tmp_path / "prompts.jsonl"
    port = free_port()
    argv = [sys.executable, "-m", "tokenyard.cli", "serve", "--processes", "2", "--engine", "scripted"]
    argv += ["--model", str(model_dir("qwen3")), "--served-model-name", "test/model", "--port", str(port)]
    argv += ["--script", str(script), "--prompt-log", str(log), "--server-key", "replicas share this key"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as sink:
        server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_both_listen(server, url, errors)
        history = [{"role": "user", "content": "go"}]
        omitted = {"type": "adaptive", "display": "omitted"}
        for _ in range(MAX_TURNS):
            # A new client per turn: a new connection, which either process may accept.
            with anthropic.Anthropic(base_url=url, api_key="x", max_retries=0) as c:
                answer, _ = ask(c, history, thinking=omitted)
            history += [
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": answer.content[-1].id, "content": "ok"}],
                },
            ]
            records = [json.loads(line) for line in log.read_text().splitlines()]
            served = [r["process"] for r in records]
            switches = sum(1 for a, b in zip(served, served[1:], strict=False) if a != b)
            if len(set(served)) == 2 and switches >= 2:
                break
        assert len(set(served)) == 2 and switches >= 2, f"one process served every turn: {served}"
        prompts = [r["prompt_text"] for r in records]
        for n, (before, after) in enumerate(zip(prompts, prompts[1:], strict=False)):
            assert after.startswith(before), f"turn {n + 1} (process {served[n + 1]}) does not extend turn {n}"
    finally:
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=30)
        err = errors.read_text(errors="replace")
    assert code == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]


def _wait_until_both_listen(server: subprocess.Popen, url: str, errors) -> None:
    """Both children print their serving line once their models are loaded; then the
    port answers."""
    deadline = time.monotonic() + 120
    while errors.read_text(errors="replace").count("tokenyard: serving ") < 2:
        assert server.poll() is None, errors.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "the processes did not start"
        time.sleep(0.1)
    while True:
        try:
            httpx.get(url + "/health", timeout=2)
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_processes_do_not_join_a_port_another_server_holds(tmp_path):
    from tokenyard.server.processes import port_is_free, reuse_port_socket

    port = free_port()
    assert port_is_free("127.0.0.1", port)
    with reuse_port_socket("127.0.0.1", port):  # another server's group, SO_REUSEPORT
        assert not port_is_free("127.0.0.1", port)
