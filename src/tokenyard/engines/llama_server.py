"""`tokenyard serve --engine llama.cpp`: a `llama-server` that tokenyard starts, owns
and stops, driven as a remote engine on a loopback port.

For the user with a GGUF and no GPU. The server gets what the remote engine relies on
and nothing it does not: the model, a loopback port of its own, the context window
(`-c`, one KV pool that every slot may use all of: `--kv-unified`), `--parallel`
slots, `--cache-reuse` (a prefix that moved is reused by shifting its KV rather than
recomputed), the thread count, `--metrics`, and no web UI. No `--special` and no
`--jinja`: tokenyard renders the prompt itself and reads the output's token ids
(engines/remote.py).

The process dies with tokenyard: `close()` stops it (SIGTERM, then SIGKILL), a failed
start stops it, and on Linux the kernel sends it SIGTERM when tokenyard's process
dies however it dies (`PR_SET_PDEATHSIG`). It runs in its own session, so a Ctrl-C
in the terminal reaches tokenyard only, which then finishes or aborts its requests
before it stops the engine. Its output goes to a log file whose tail is shown when
it fails to start.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from ..faults import EngineError
from .remote import RemoteEngine

HEALTH_POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 10.0
LOG_TAIL_CHARACTERS = 2000
# The smallest moved prefix chunk reused by shifting its KV (llama.cpp's --cache-reuse).
CACHE_REUSE_TOKENS = 256
PR_SET_PDEATHSIG = 1
INSTALL_SCRIPT = "scripts/install_llama_cpp.sh"


def find_llama_server(cache: Path) -> Path:
    """`llama-server` on PATH, else the one scripts/install_llama_cpp.sh built into
    the cache (`<cache>/llama.cpp/bin`)."""
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    built = cache / "llama.cpp" / "bin" / "llama-server"
    if os.access(built, os.X_OK):
        return built
    raise EngineError(
        f"--engine llama.cpp needs llama-server: none on PATH nor at {built}; "
        f"run {INSTALL_SCRIPT} from tokenyard's repository (it builds one there, CPU only) "
        "or install llama.cpp"
    )


class LlamaServerEngine(RemoteEngine):
    """A `llama-server` (`binary`) serving `gguf`, started by `start()`.

    `context`: the context window (None: the model's own). `slots`: requests it runs
    at once. `threads`: CPU threads (None: llama.cpp's choice)."""

    def __init__(
        self,
        binary: Path,
        gguf: Path,
        *,
        context: int | None = None,
        slots: int = 2,
        threads: int | None = None,
        startup_timeout: float = 300.0,
        extra_args: tuple[str, ...] = (),
    ):
        self.port = _free_port()
        super().__init__(f"http://127.0.0.1:{self.port}", server="llama.cpp", startup_timeout=startup_timeout)
        self.command = [
            str(binary),
            "--model",
            str(gguf),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            str(context or 0),
            "--kv-unified",
            "--parallel",
            str(slots),
            "--cache-reuse",
            str(CACHE_REUSE_TOKENS),
            "--metrics",
            "--no-webui",
            *(("--threads", str(threads), "--threads-batch", str(threads)) if threads else ()),
            *extra_args,
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    async def start(self) -> None:
        if self.process is not None:
            return
        fd, log = tempfile.mkstemp(prefix=f"llama-server-{self.port}-", suffix=".log")
        self._log = Path(log)
        try:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as error:
            raise EngineError(f"cannot start {self.command[0]}: {error}") from error
        finally:
            os.close(fd)
        try:
            await self._wait_until_healthy()
            await super().start()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await super().close()
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                await asyncio.to_thread(process.wait)
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    async def _wait_until_healthy(self) -> None:
        """Until `/health` answers 200 (it answers 503 while the model loads); fails as
        soon as the process exits, with its log's tail."""
        deadline = time.monotonic() + self._startup_timeout
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while True:
                assert self.process is not None
                if self.process.poll() is not None:
                    raise EngineError(
                        f"llama-server exited with status {self.process.returncode} while starting:\n{self._log_tail()}"
                    )
                try:
                    async with session.get(f"{self.base_url}/health") as response:
                        if response.status == 200:
                            return
                except (aiohttp.ClientError, TimeoutError):
                    pass
                if time.monotonic() >= deadline:
                    raise EngineError(
                        f"llama-server was not ready within {self._startup_timeout:g}s:\n{self._log_tail()}"
                    )
                await asyncio.sleep(HEALTH_POLL_SECONDS)

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        return self._log.read_text(errors="replace")[-LOG_TAIL_CHARACTERS:]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux only)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
