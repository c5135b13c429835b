"""What every launcher shares: find (or start) a tokenyard server, read what it
serves, keep client configuration in a folder tokenyard owns, and run the client.

A launcher never writes the user's own client configuration (~/.claude.json,
~/.codex, ~/.openclaw): each client is pointed at a folder under the tokenyard
cache through the client's own variable for it (CLAUDE_CONFIG_DIR, CODEX_HOME,
OPENCLAW_CONFIG_PATH).
"""

from __future__ import annotations

import argparse
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from ..models.cache import cache_root

DEFAULT_URL = "http://127.0.0.1:8000"
# The clients `tokenyard CLIENT` runs (each one's module in this package), by the name they go by.
CLIENTS = {"claude": "Claude Code", "codex": "Codex", "openclaw": "OpenClaw"}
# The key handed to clients. It is deliberately not TOKENYARD_API_KEY: that variable
# is the server's own `--api-key`, and exporting it for a client would silently
# switch on the server's key check.
CLIENT_KEY_ENV = "TOKENYARD_CLIENT_KEY"
# A fresh `tokenyard serve` may first fetch and convert its model (a minute or two).
SERVER_START_TIMEOUT = 600.0
SERVER_STOP_TIMEOUT = 60.0
# A window this small (the CPU built-ins serve 32K) cannot hold a harness's whole tool
# surface and still leave room for work, and a CPU prefills ~100 tokens/s: every
# schema it is sent costs the first turn seconds. Such a model gets the lean profile.
LEAN_WINDOW = 32_768
# The share of the window a client may ask for as output per request: Claude Code keeps
# that plus ~13K free below the window, OpenClaw reserves it too; never the whole window.
OUTPUT_SHARE = 12
# The lean profile's output cap: a CPU decodes 2-10 tokens/s, so a small model that
# rambles (SmolLM2 loops until the cap) is held to a minute or two per request, not
# the window's twelfth (2,730 tokens: 5-20 minutes).
LEAN_MAX_OUTPUT = 512


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
    # Whether it reasons (`capabilities.thinking.supported`); None when the server does not say.
    thinking: bool | None = None

    @property
    def same_model(self) -> str:
        return self.model or self.id

    def output_budget(self, *, lean: bool = False) -> int | None:
        """What a client may ask for per request: a share of the window, at most the
        model's cap, and at most LEAN_MAX_OUTPUT in the lean profile."""
        budget = self.max_output_tokens
        if self.context_window is not None:
            share = max(1, self.context_window // OUTPUT_SHARE)
            budget = share if budget is None else min(budget, share)
        if lean:
            budget = LEAN_MAX_OUTPUT if budget is None else min(budget, LEAN_MAX_OUTPUT)
        return budget


@dataclass
class LaunchOptions:
    """The launcher's own flags; everything after them goes to the client."""

    url: str = DEFAULT_URL
    model: str | None = None
    small_model: str | None = None
    serve_args: list[str] = field(default_factory=list)
    start_server: bool = True
    # "lean" or "full" when asked for (--lean/--full); None: chosen from the served model.
    profile: str | None = None
    show_help: bool = False
    client_args: list[str] = field(default_factory=list)


LAUNCHER_FLAGS_HELP = """\
launcher options (before the client's own arguments; `--` ends them):
  --url URL          the tokenyard server (default $TOKENYARD_URL or http://127.0.0.1:8000)
  --model ID         the served model the client uses (default: the first the server lists)
  --small-model ID   the model for background requests (titles, summaries; default: the first other
                     model the server serves, else --model)
  --serve-arg ARG    passed to `tokenyard serve` when the launcher starts a server (repeatable)
  --no-start         fail instead of starting a server when none answers at --url
  --lean             the client's lean profile: a few core tools, output capped at 512 tokens,
                     no background requests (the default for a model with a window of at most
                     32,768 tokens or on the embedded CPU engine: a first turn must stay small)
  --full             the client's full tool surface, whatever the model
  -h, --help         this help; the client's own: `tokenyard CLIENT -- --help`
"""
VALUED_FLAGS = {"--url": "url", "--model": "model", "--small-model": "small_model", "--serve-arg": "serve_args"}
SWITCHES = ("--no-start", "--lean", "--full", "--help", "-h")


def _misspelt_flag(arg: str) -> str | None:
    """The launcher flag `arg` looks like a typo of, if any: a client flag never is one
    (the clients' own flags are not this close to the launcher's)."""
    from difflib import get_close_matches

    if not arg.startswith("--"):
        return None
    close = get_close_matches(arg.partition("=")[0], [*VALUED_FLAGS, *SWITCHES], n=1, cutoff=0.8)
    return close[0] if close else None


def parse_launch_args(argv: Sequence[str]) -> LaunchOptions:
    """Launcher flags come first; the first argument that is not one of them (or a
    `--`) starts the client's arguments, passed on untouched. A first client argument
    that looks like a mistyped launcher flag is refused before anything starts."""
    options = LaunchOptions(url=os.environ.get("TOKENYARD_URL") or DEFAULT_URL)
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, _, inline = arg.partition("=")
        if arg == "--":
            i += 1
            break
        if arg in ("--help", "-h"):
            options.show_help = True
            i += 1
            continue
        if arg in ("--lean", "--full"):
            options.profile = arg[2:]
            i += 1
            continue
        if name in VALUED_FLAGS:
            if inline or "=" in arg:
                value, i = inline, i + 1
            elif i + 1 < len(args):
                value, i = args[i + 1], i + 2
            else:
                raise LaunchError(f"{name} needs a value")
            if name == "--serve-arg":
                options.serve_args.append(value)
            else:
                setattr(options, VALUED_FLAGS[name], value)
        elif arg == "--no-start":
            options.start_server = False
            i += 1
        else:
            if (typo := _misspelt_flag(arg)) is not None:
                raise LaunchError(
                    f"unknown launcher option {arg} (did you mean {typo}?); the client's own arguments go after `--`"
                )
            break
    options.client_args = args[i:]
    return options


def launcher_help(client: str, what: str) -> str:
    return (
        f"usage: tokenyard {client} [launcher options] [{client} arguments…]\n\n"
        f"Runs {what} against a tokenyard server (starting `tokenyard serve` when none answers),\n"
        "with everything set, and says what it set.\n\n"
        f"{LAUNCHER_FLAGS_HELP}\n{what}'s own options: tokenyard {client} -- --help\n"
    )


@dataclass(frozen=True)
class Profile:
    """Which surface the launcher gives the client, and why (said out loud)."""

    lean: bool
    reason: str


def serve_settings(serve_args: Sequence[str]) -> argparse.Namespace:
    """What `tokenyard serve` with these arguments and this environment would run:
    the launchers share serve's settings, so a bad one fails here, in one line,
    before anything starts."""
    from ..cli import CommandLineError, build_parser

    try:
        return build_parser().parse_args(["serve", *serve_args])
    except CommandLineError as error:
        raise LaunchError(str(error)) from None


def serves_embedded(serve_args: Sequence[str]) -> bool:
    """Whether `tokenyard serve` with these arguments runs the embedded CPU engine."""
    engine: str = serve_settings(serve_args).engine
    return engine == "embedded"


def choose_profile(options: LaunchOptions, model: ServedModel, started_here: bool) -> Profile:
    if options.profile is not None:
        return Profile(options.profile == "lean", f"--{options.profile}")
    if model.context_window is not None and model.context_window <= LEAN_WINDOW:
        return Profile(True, f"{model.id} has a {model.context_window:,}-token window")
    if started_here and serves_embedded(options.serve_args):
        return Profile(True, f"{model.id} runs on this CPU (the embedded engine)")
    return Profile(False, f"{model.id} has a {model.context_window or 0:,}-token window")


def announce_profile(client: str, profile: Profile, chosen: str) -> None:
    """Say which surface the client gets, and how to get the other."""
    if profile.lean:
        other = "`--full` gives the full surface"
        print(f"tokenyard {client}: lean profile ({profile.reason}): {chosen}; {other}", file=sys.stderr)
    else:
        print(f"tokenyard {client}: full profile ({profile.reason}): {chosen}; `--lean` trims it", file=sys.stderr)


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
            thinking = (item.get("capabilities") or {}).get("thinking") or {}
            supported = thinking.get("supported") if isinstance(thinking, dict) else None
            models.append(
                ServedModel(
                    item["id"],
                    window if isinstance(window, int) else None,
                    cap if isinstance(cap, int) else None,
                    name if isinstance(name, str) and name else None,
                    supported if isinstance(supported, bool) else None,
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
        """One SIGINT: the graceful path (running streams end, engine work is aborted
        at its next step, which on a busy CPU can take a while); a second would skip
        the engine's shutdown."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=SERVER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve_command(url: str) -> str:
    """The `tokenyard serve` line that would answer at `url`."""
    parts = urlsplit(url)
    command = "tokenyard serve"
    if parts.hostname and parts.hostname not in ("127.0.0.1", "localhost"):
        command += f" --host {parts.hostname}"
    return command + f" --port {parts.port or 80}"


# Lines of a starting server worth showing on screen: its own progress (a first start
# downloads and converts the model) and what it serves; not uvicorn's or the logs'.
PROGRESS_PREFIX = b"tokenyard: "


def ensure_server(options: LaunchOptions, server_env: Mapping[str, str] | None = None) -> RunningServer:
    """The server at options.url, started here when none answers and the URL is on
    this machine (with server_env added to its environment). While it starts, its
    progress lines are shown; if it fails, this start's own log lines say why."""
    if server_is_up(options.url):
        return RunningServer(options.url)
    parts = urlsplit(options.url)
    if not options.start_server or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise LaunchError(
            f"no tokenyard server answers at {options.url}; start one with `{serve_command(options.url)}`"
        )
    serve_settings(options.serve_args)
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
        start = log.tell()  # the log keeps earlier runs: this start's lines begin here
        # A session of its own: the terminal's Ctrl-C reaches the client and the
        # launcher, which then stops the server once (run_client), gracefully; and
        # should the launcher itself be killed, the server is told to stop too.
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(server_env or {})},
            start_new_session=True,
            preexec_fn=_stop_with_parent,
        )
    server = RunningServer(options.url, process, log_path)
    try:
        _await_start(server, log_path, start)
    except BaseException:  # a failed start, or Ctrl-C while it loads: no server is left behind
        server.stop()
        raise
    return server


def _stop_with_parent() -> None:
    """In the server's process before it runs: SIGINT it when the launcher dies (Linux's
    PR_SET_PDEATHSIG; elsewhere a killed launcher leaves its server running)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def _await_start(server: RunningServer, log_path: Path, start: int) -> None:
    assert server.process is not None
    shown = start
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while not server_is_up(server.url):
        shown = _show_progress(log_path, shown)
        if server.process.poll() is not None:
            with log_path.open("rb") as log:
                log.seek(start)
                own = log.read().decode(errors="replace").splitlines()
            raise LaunchError(
                f"`tokenyard serve` exited ({server.process.returncode}) before it listened; "
                f"its log (of {log_path}):\n" + "\n".join(own[-30:])
            )
        if time.monotonic() > deadline:
            raise LaunchError(f"`tokenyard serve` did not answer within {SERVER_START_TIMEOUT:.0f} s (log: {log_path})")
        time.sleep(0.5)
    _show_progress(log_path, shown)


def _show_progress(log_path: Path, offset: int) -> int:
    """Echo the server's complete progress lines written since `offset`; the new offset."""
    with log_path.open("rb") as log:
        log.seek(offset)
        chunk = log.read()
    end = chunk.rfind(b"\n") + 1
    for line in chunk[:end].splitlines():
        # tqdm redraws its bars with carriage returns: only the last state of a line counts.
        line = line.rsplit(b"\r", 1)[-1]
        if line.startswith(PROGRESS_PREFIX):
            sys.stderr.write("  " + line.decode(errors="replace") + "\n")
    sys.stderr.flush()
    return offset + end


def announce_settings(client: str, settings: Mapping[str, str]) -> None:
    """Say what the launcher set, so the user can reproduce it by hand."""
    print(f"tokenyard {client}: running with", file=sys.stderr)
    for name, value in settings.items():
        print(f"  {name}={value}", file=sys.stderr)
    sys.stderr.flush()


INTERRUPTED = 130  # the shell's status for a command ended by Ctrl-C


def run_client(
    argv: Sequence[str], env: Mapping[str, str], server: RunningServer, *, drop_stderr: bytes | None = None
) -> int:
    """Run the client in the foreground (it owns the terminal); Ctrl-C goes to it,
    and a server the launcher started is stopped when it exits, or when the launcher
    is told to end (SIGTERM, SIGHUP: a closed terminal). A Ctrl-C'd run does not
    report success even where the client does (Claude Code exits 0). With
    `drop_stderr`, the client's stderr passes through the launcher, less the lines
    that start with it."""

    def end(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, end) for signum in (signal.SIGTERM, signal.SIGHUP)}
    process = subprocess.Popen(list(argv), env=dict(env), stderr=subprocess.PIPE if drop_stderr else None)
    relay = None
    if drop_stderr is not None and process.stderr is not None:
        relay = threading.Thread(target=_relay_stderr, args=(process.stderr, drop_stderr), daemon=True)
        relay.start()
    interrupted = False
    try:
        while True:
            try:
                code = process.wait()
                if relay is not None:
                    relay.join()
                return INTERRUPTED if interrupted and code == 0 else code
            except KeyboardInterrupt:
                interrupted = True  # the terminal sent SIGINT to the client too; wait for it to finish
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _relay_stderr(source: IO[bytes], drop: bytes) -> None:
    for line in source:
        if not line.startswith(drop):
            sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()


@dataclass(frozen=True)
class Session:
    """What the start-up found, handed to a client's own configuration step."""

    options: LaunchOptions
    models: list[ServedModel]
    main: ServedModel
    small: ServedModel
    profile: Profile


@dataclass(frozen=True)
class ClientRun:
    """How a client's configuration step says to run it: its arguments (after the
    executable), its whole environment, what the launcher set (said out loud so the
    user can reproduce it), the surface its profile gives, and the stderr lines to
    drop (run_client)."""

    args: Sequence[str]
    env: Mapping[str, str]
    announced: Mapping[str, str]
    surface: str
    drop_stderr: bytes | None = None


def launch_client(
    argv: Sequence[str],
    client: str,
    configure: Callable[[Session], ClientRun],
    *,
    serve_arguments: Callable[[LaunchOptions], list[str]] | None = None,
    binary_env: str | None = None,
) -> int:
    """`tokenyard CLIENT [launcher options] [client arguments…]`: read the launcher's
    flags, find the client, find or start the server (with `serve_arguments`, and the
    client's executable in the server's `binary_env` variable), choose the models and
    the profile, let `configure` write the client's configuration, say what was set,
    then run it. A server started here is stopped if anything before the client fails."""
    options = parse_launch_args(argv)
    if options.show_help:
        print(launcher_help(client, CLIENTS[client]), end="")
        return 0
    binary = find_client(client)
    if serve_arguments is not None:
        options.serve_args = serve_arguments(options)
    server = ensure_server(options, {binary_env: binary} if binary_env else None)
    try:
        models = served_models(options.url)
        main, small = choose_models(models, options)
        profile = choose_profile(options, main, server.process is not None)
        run = configure(Session(options, models, main, small, profile))
    except BaseException:
        server.stop()
        raise
    announce_settings(client, run.announced)
    announce_profile(client, profile, run.surface)
    return run_client([binary, *run.args], run.env, server, drop_stderr=run.drop_stderr)
