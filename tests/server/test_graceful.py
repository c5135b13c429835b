"""Ctrl-C / SIGTERM on a real `tokenyard serve` with a stream in flight: the stream
ends with the API's error event, the process exits 0, and nothing prints a traceback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tests.fixtures import model_dir

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
MODEL = "tokenyard/qwen3-coder"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    # A long scripted answer, slowed down, so a stream is surely in flight when the signal comes.
    script = tmp_path / "script.json"
    script.write_text(json.dumps([[{"text": "word " * 2000}]]))
    port = _free_port()
    argv = [sys.executable, "-m", "tokenyard.cli", "serve", "--model", str(model_dir("qwen3-coder"))]
    argv += ["--engine", "scripted", "--script", str(script), "--token-delay", "0.02"]
    argv += ["--served-model-name", MODEL, "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(REPO_SRC)}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/health", timeout=1)
            break
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"server did not start: {process.communicate()[1]}") from None
            time.sleep(0.1)
    try:
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _finish(process: subprocess.Popen[str]) -> str:
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_anthropic_stream_in_flight_ends_with_an_error_event(server, sig):
    process, url = server
    client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    stream = client.messages.create(
        model=MODEL, max_tokens=4000, messages=[{"role": "user", "content": "Talk."}], stream=True
    )
    seen = []
    with pytest.raises(anthropic.APIStatusError) as ended:
        for event in stream:
            seen.append(event.type)
            if event.type == "content_block_delta" and len(seen) == 5:
                process.send_signal(sig)
    assert seen[0] == "message_start" and "message_stop" not in seen
    body = ended.value.body
    assert isinstance(body, dict) and body["type"] == "error" and body["error"]["message"]
    _finish(process)


def test_responses_stream_in_flight_ends_with_response_failed(server):
    process, url = server
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    kinds = []
    with client.responses.stream(model=MODEL, input="Talk.") as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta" and kinds.count(event.type) == 3:
                process.send_signal(signal.SIGINT)
    assert kinds[-1] == "response.failed", kinds[-3:]
    _finish(process)


def test_a_second_ctrl_c_exits_at_once_without_tracebacks(server):
    process, url = server
    with httpx.stream("POST", url + "/v1/chat/completions", json={
        "model": MODEL, "messages": [{"role": "user", "content": "Talk."}], "stream": True,
    }, timeout=30) as response:  # fmt: skip
        lines = response.iter_lines()
        next(line for line in lines if line.startswith("data:"))
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGINT)
        rest = list(lines)
    assert rest, "the stream ended with an event, not a cut connection"
    _finish(process)


@pytest.mark.parametrize("in_flight", [True, False], ids=["stream-in-flight", "idle"])
def test_a_second_signal_later_still_closes_the_engine(server, in_flight):
    """The second signal comes while the first one's shutdown is under way (a killed
    launcher: its own stop, then the parent-death signal): the lifespan shutdown still
    runs, rather than being cancelled at exit with a CancelledError traceback."""
    process, url = server
    if in_flight:
        with httpx.stream("POST", url + "/v1/chat/completions", json={
            "model": MODEL, "messages": [{"role": "user", "content": "Talk."}], "stream": True,
        }, timeout=30) as response:  # fmt: skip
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data:"))
            process.send_signal(signal.SIGINT)
            time.sleep(0.5)
            process.send_signal(signal.SIGINT)
            list(lines)
    else:
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
        process.send_signal(signal.SIGINT)
    stderr = _finish(process)
    assert "Application shutdown complete" in stderr, stderr
