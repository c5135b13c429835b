"""The real servers these tests start (llama-server, vLLM, vllm-router): whether one
answers yet, and stopping its process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import httpx


def answers(url: str, path: str) -> bool:
    """Whether the server at `url` answers `path` with 200 yet."""
    try:
        return httpx.get(f"{url}{path}", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def stop_group(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM the server's process group, SIGKILL after `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
