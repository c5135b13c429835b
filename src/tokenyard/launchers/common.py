"""What every launcher shares: find (or start) a tokenyard server, read what it
serves, keep client configuration in a folder tokenyard owns, and run the client.

A launcher never writes the user's own client configuration (~/.claude.json,
~/.codex, ~/.openclaw): each client is pointed at a folder under the tokenyard
cache through the client's own variable for it (CLAUDE_CONFIG_DIR, CODEX_HOME,
OPENCLAW_CONFIG_PATH).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from ..models.cache import cache_root

DEFAULT_URL = "http://127.0.0.1:8000"
# The key handed to clients. It is deliberately not TOKENYARD_API_KEY: that variable
# is the server's own `--api-key`, and exporting it for a client would silently
# switch on the server's key check.
CLIENT_KEY_ENV = "TOKENYARD_CLIENT_KEY"
# A fresh `tokenyard serve` may first fetch and convert its model (a minute or two).
SERVER_START_TIMEOUT = 600.0


class LaunchError(Exception):
    """The launcher cannot do what was asked; the message says why and what to do."""


@dataclass(frozen=True)
class ServedModel:
    id: str
    # The context window and output cap the server reports; None when it does not say.
    context_window: int | None = None
    max_output_tokens: int | None = None
    # The model this id names (tokenyard reports it as `display_name`: an alias shares
    # it with its model's own id); None: the id itself.
    model: str | None = None

    @property
    def same_model(self) -> str:
        return self.model or self.id


@dataclass
class LaunchOptions:
    """The launcher's own flags; everything after them goes to the client."""

    url: str = DEFAULT_URL
    model: str | None = None
    small_model: str | None = None
    serve_args: list[str] = field(default_factory=list)
    start_server: bool = True
    client_args: list[str] = field(default_factory=list)


LAUNCHER_FLAGS_HELP = """\
launcher options (before the client's own arguments; `--` ends them):
  --url URL          the tokenyard server (default $TOKENYARD_URL or http://127.0.0.1:8000)
  --model ID         the served model the client uses (default: the first the server lists)
  --small-model ID   the model for background requests (titles, summaries; default: the first other
                     model the server serves, else --model)
  --serve-arg ARG    passed to `tokenyard serve` when the launcher starts a server (repeatable)
  --no-start         fail instead of starting a server when none answers at --url
"""


def parse_launch_args(argv: Sequence[str]) -> LaunchOptions:
    """Launcher flags come first; the first argument that is not one of them (or a
    `--`) starts the client's arguments, passed on untouched."""
    options = LaunchOptions(url=os.environ.get("TOKENYARD_URL") or DEFAULT_URL)
    args = list(argv)
    valued = {"--url": "url", "--model": "model", "--small-model": "small_model"}
    i = 0
    while i < len(args):
        arg = args[i]
        name, _, inline = arg.partition("=")
        if arg == "--":
            i += 1
            break
        if name in valued or name == "--serve-arg":
            if inline or "=" in arg:
                value, i = inline, i + 1
            elif i + 1 < len(args):
                value, i = args[i + 1], i + 2
            else:
                raise LaunchError(f"{name} needs a value")
            if name == "--serve-arg":
                options.serve_args.append(value)
            else:
                setattr(options, valued[name], value)
        elif arg == "--no-start":
            options.start_server = False
            i += 1
        else:
            break
    options.client_args = args[i:]
    return options


def launcher_home(client: str) -> Path:
    """The folder tokenyard owns for one client's configuration and state."""
    folder = cache_root() / "launchers" / client
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def find_client(name: str) -> str:
    """The client executable: $TOKENYARD_<NAME>_BIN, then PATH, then the copy
    scripts/install_clients.sh keeps under the tokenyard cache."""
    override = os.environ.get(f"TOKENYARD_{name.upper()}_BIN")
    if override:
        return override
    found = shutil.which(name)
    if found:
        return found
    clients = Path(os.environ.get("TOKENYARD_CLIENTS") or cache_root() / "clients")
    cached = clients / "bin" / name
    if os.access(cached, os.X_OK):
        return str(cached)
    raise LaunchError(
        f"`{name}` is not installed: install it (scripts/install_clients.sh does) or set TOKENYARD_{name.upper()}_BIN"
    )


def client_key() -> str:
    return os.environ.get(CLIENT_KEY_ENV) or "tokenyard"


def get_json(url: str, headers: Mapping[str, str], timeout: float) -> Any:
    request = urllib.request.Request(url, headers=dict(headers))
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the user's own server URL)
        return json.loads(response.read())


def server_is_up(url: str) -> bool:
    try:
        get_json(url.rstrip("/") + "/health", {}, timeout=2)
        return True
    except (OSError, ValueError):
        return False


def served_models(url: str) -> list[ServedModel]:
    """The server's models, with the window and output cap when it reports them
    (the Anthropic shape of /v1/models carries `max_input_tokens` and `max_tokens`)."""
    headers = {"anthropic-version": "2023-06-01", "authorization": f"Bearer {client_key()}"}
    try:
        body = get_json(url.rstrip("/") + "/v1/models", headers, timeout=10)
    except urllib.error.HTTPError as error:
        raise LaunchError(
            f"{url}/v1/models answered {error.code}: is {CLIENT_KEY_ENV} the server's --api-key?"
        ) from error
    except (OSError, ValueError) as error:
        raise LaunchError(f"cannot list the models at {url}: {error}") from error
    models = []
    for item in body.get("data", []):
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            window, cap = item.get("max_input_tokens"), item.get("max_tokens")
            name = item.get("display_name")
            models.append(
                ServedModel(
                    item["id"],
                    window if isinstance(window, int) else None,
                    cap if isinstance(cap, int) else None,
                    name if isinstance(name, str) and name else None,
                )
            )
    if not models:
        raise LaunchError(f"{url} serves no models")
    return models


def choose_models(models: Sequence[ServedModel], options: LaunchOptions) -> tuple[ServedModel, ServedModel]:
    """The main model and the small/fast one (for titles and summaries): unless named,
    the first id of another model the server serves (a second model, not an alias
    of the main one), else the main model."""
    by_id = {m.id: m for m in models}
    for wanted in (options.model, options.small_model):
        if wanted is not None and wanted not in by_id:
            raise LaunchError(f"{wanted!r} is not served at {options.url}; it serves {', '.join(by_id)}")
    main = by_id[options.model] if options.model else models[0]
    other = next((m for m in models if m.same_model != main.same_model), main)
    small = by_id[options.small_model] if options.small_model else other
    return main, small


@dataclass
class RunningServer:
    url: str
    # The server this launcher started, stopped when the client exits; None when one was already running.
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)  # graceful: running streams end, engine work is aborted
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def ensure_server(options: LaunchOptions, server_env: Mapping[str, str] | None = None) -> RunningServer:
    """The server at options.url, started here when none answers and the URL is on
    this machine (with server_env added to its environment)."""
    if server_is_up(options.url):
        return RunningServer(options.url)
    parts = urlsplit(options.url)
    if not options.start_server or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise LaunchError(f"no tokenyard server answers at {options.url}; start one with `tokenyard serve`")
    port = parts.port or 80
    log_path = launcher_home("server") / "server.log"
    argv = [sys.executable, "-m", "tokenyard.cli", "serve", "--host", parts.hostname or "127.0.0.1"]
    argv += ["--port", str(port), *options.serve_args]
    print(
        f"tokenyard: no server at {options.url}; starting `tokenyard serve` (log: {log_path})",
        file=sys.stderr,
        flush=True,
    )
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(server_env or {})},
        )
    server = RunningServer(options.url, process, log_path)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while not server_is_up(options.url):
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise LaunchError(f"`tokenyard serve` exited ({process.returncode}) before it listened:\n{tail}")
        if time.monotonic() > deadline:
            server.stop()
            raise LaunchError(f"`tokenyard serve` did not answer within {SERVER_START_TIMEOUT:.0f} s (log: {log_path})")
        time.sleep(0.5)
    return server


def announce_settings(client: str, settings: Mapping[str, str]) -> None:
    """Say what the launcher set, so the user can reproduce it by hand."""
    print(f"tokenyard {client}: running with", file=sys.stderr)
    for name, value in settings.items():
        print(f"  {name}={value}", file=sys.stderr)
    sys.stderr.flush()


def run_client(
    argv: Sequence[str], env: Mapping[str, str], server: RunningServer, *, drop_stderr: bytes | None = None
) -> int:
    """Run the client in the foreground (it owns the terminal); Ctrl-C goes to it,
    and a server the launcher started is stopped when it exits. With `drop_stderr`,
    the client's stderr passes through the launcher, less the lines that start with it."""
    process = subprocess.Popen(list(argv), env=dict(env), stderr=subprocess.PIPE if drop_stderr else None)
    relay = None
    if drop_stderr is not None and process.stderr is not None:
        relay = threading.Thread(target=_relay_stderr, args=(process.stderr, drop_stderr), daemon=True)
        relay.start()
    try:
        while True:
            try:
                code = process.wait()
                if relay is not None:
                    relay.join()
                return code
            except KeyboardInterrupt:
                continue  # the terminal sent SIGINT to the client too; wait for it to finish
    finally:
        server.stop()


def _relay_stderr(source: IO[bytes], drop: bytes) -> None:
    for line in source:
        if not line.startswith(drop):
            sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()
