"""The owned llama-server's lifecycle with stand-in programs for its failures (the
real server: tests/integration/test_llama_cpp.py): where it is found, the command it
gets, a start that fails or hangs ends in a clear `EngineError` with nothing left
running."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from tokenyard.engines.llama_server import INSTALL_SCRIPT, LlamaServerEngine, find_llama_server
from tokenyard.faults import EngineError


def program(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "llama-server"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_found_on_path_else_in_the_cache_else_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(EngineError, match=f"run {INSTALL_SCRIPT}"):
        find_llama_server(tmp_path)
    built = tmp_path / "llama.cpp" / "bin"
    built.mkdir(parents=True)
    cached = program(built, "exit 0")
    assert find_llama_server(tmp_path) == cached
    on_path = tmp_path / "path"
    on_path.mkdir()
    monkeypatch.setenv("PATH", str(on_path))
    first = program(on_path, "exit 0")
    assert find_llama_server(tmp_path) == first


def test_the_command_keeps_it_on_loopback_with_the_settings(tmp_path):
    engine = LlamaServerEngine(tmp_path / "llama-server", tmp_path / "m.gguf", context=4096, slots=3, threads=2)
    command = engine.command
    flag = {k: v for k, v in zip(command, command[1:], strict=False)}
    assert flag["--host"] == "127.0.0.1" and flag["--port"] == str(engine.port)
    assert flag["--ctx-size"] == "4096" and flag["--parallel"] == "3" and flag["--threads"] == "2"
    assert "--kv-unified" in command and "--cache-reuse" in command and "--special" not in command
    assert engine.server == "llama.cpp" and engine.base_url == f"http://127.0.0.1:{engine.port}"


def test_a_server_that_exits_while_starting_is_an_error_with_its_log(tmp_path):
    engine = LlamaServerEngine(program(tmp_path, "echo 'error: failed to load model'; exit 3"), tmp_path / "m.gguf")
    with pytest.raises(EngineError, match=r"exited with status 3 while starting:\n.*failed to load model"):
        asyncio.run(engine.start())
    assert engine.process is None


def test_a_server_that_never_gets_ready_is_stopped(tmp_path):
    pid_file = tmp_path / "pid"
    engine = LlamaServerEngine(program(tmp_path, f"echo $$ > {pid_file}; exec sleep 60"), tmp_path / "m.gguf")
    engine._startup_timeout = 1.0
    with pytest.raises(EngineError, match="not ready within 1s"):
        asyncio.run(engine.start())
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped: nothing left running
