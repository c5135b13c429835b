"""`tokenyard codex [args…]`: Codex against tokenyard.

Codex reads `$CODEX_HOME/config.toml`; the launcher writes one into a
tokenyard-owned CODEX_HOME (the user's ~/.codex is never touched) with a provider
for tokenyard's Responses API and, when the server offers one, tokenyard's model
catalog, from which Codex takes the window, reasoning levels and tool surface of
each served id. Without a catalog the window is set with `model_context_window`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..settings import DEFAULT_CODEX_PROFILE
from .common import (
    CLIENT_KEY_ENV,
    LEAN_MAX_OUTPUT,
    ClientRun,
    LaunchOptions,
    ServedModel,
    Session,
    client_key,
    get_json,
    launch_client,
    launcher_home,
    serves_embedded,
)

PROVIDER = "tokenyard"


def offers_catalog(url: str) -> tuple[bool, bool]:
    """Whether /v1/models answers Codex's catalog request with a `models` list, and
    whether its entries prefer Responses over WebSocket (a server that serves it)."""
    try:
        body = get_json(
            url.rstrip("/") + "/v1/models?client_version=0.0.0", {"authorization": f"Bearer {client_key()}"}, 10
        )
    except (OSError, ValueError):
        return False, False
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, list):
        return False, False
    return True, any(isinstance(m, dict) and m.get("prefer_websockets") is True for m in models)


STREAM_IDLE_TIMEOUT_MS = 30 * 60 * 1000


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


# The lean profile: what Codex 0.169 lets a config drop from its first prompt. Its
# catalog's base instructions (gpt-5.5's: ~21K characters, two thirds of the prompt)
# give way to a few lines (`model_instructions_file`); the instructions on
# permissions, apps and collaboration modes go, and so do the goal tools, the
# multi-agent namespace (with tool_search) and the image, plugin and tool-suggestion
# surfaces. Its core tools (exec_command, apply_patch…) stay.
LEAN_BASE_INSTRUCTIONS = """\
You are a coding agent in the user's terminal, working in their current directory.
Run shell commands with exec_command and edit files with apply_patch; read a file
before you change it. When the task is done, say briefly what you did and what the
commands printed.
"""
LEAN_SECTIONS_OFF = (
    "include_permissions_instructions",
    "include_apps_instructions",
    "include_collaboration_mode_instructions",
)
LEAN_FEATURES_OFF = ("goals", "image_generation", "plugins", "tool_suggest")


def codex_config(
    url: str, model: ServedModel, *, catalog: bool, instructions: Path | None = None, websockets: bool = False
) -> str:
    """`instructions`: the lean profile's base-instructions file (None: the full profile);
    `websockets`: the server speaks Responses over WebSocket (its catalog prefers it)."""
    lean = instructions is not None
    base = url.rstrip("/") + "/v1"
    lines = [
        f"model = {_toml_string(model.id)}",
        f'model_provider = "{PROVIDER}"',
        'web_search = "disabled"',  # else Codex offers OpenAI's hosted web search
        "check_for_update_on_startup = false",
    ]
    if not catalog and model.context_window is not None:
        lines.append(f"model_context_window = {model.context_window}")
    if instructions is not None:
        lines.append(f"model_instructions_file = {_toml_string(str(instructions))}")
        lines += [f"{name} = false" for name in LEAN_SECTIONS_OFF]
    lines += [
        "",
        f"[model_providers.{PROVIDER}]",
        'name = "tokenyard"',
        f"base_url = {_toml_string(base)}",
        'wire_api = "responses"',
        f'env_key = "{CLIENT_KEY_ENV}"',
        # Codex gives up on a stream after 5 idle minutes, and SSE keep-alive comments do
        # not reset its timer: a cold prefill on a CPU, or one long tool call (held until
        # it is complete), can be silent longer than that on a local model.
        f"stream_idle_timeout_ms = {STREAM_IDLE_TIMEOUT_MS}",
    ]
    if websockets:
        # Codex uses the WebSocket only for a provider that says it supports one.
        lines.append("supports_websockets = true")
    if catalog:
        lines.append(f"model_catalog_url = {_toml_string(base + '/models')}")
    lines += ["", "[analytics]", "enabled = false"]
    # The TUI otherwise starts a managed `codex app-server` daemon (and its updater
    # loop) in sessions of their own, which outlive `tokenyard codex`; without it the
    # TUI runs the app server in-process and leaves nothing behind when it exits.
    features = ["daemon_auto_start = false"]
    if lean:
        features += [f"{name} = false" for name in LEAN_FEATURES_OFF]
    lines += ["", "[features]", *features]
    if lean:  # sub-agents: 0.169 warns, twice a run, that `[features].multi_agent` is deprecated
        lines += ["", "[agents]", "enabled = false"]
    lines.append("")
    return "\n".join(lines)


def in_git_work_tree(cwd: Path) -> bool:
    probe = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"], cwd=cwd, capture_output=True, text=True, check=False
    )
    return probe.returncode == 0 and probe.stdout.strip() == "true"


def client_arguments(args: Sequence[str], cwd: Path) -> list[str]:
    """`codex exec` refuses to run outside a git repository unless told it may."""
    out = list(args)
    if out and out[0] == "exec" and "--skip-git-repo-check" not in out and not in_git_work_tree(cwd):
        out.insert(1, "--skip-git-repo-check")
    return out


def _given(serve_args: Sequence[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in serve_args)


def serve_arguments(options: LaunchOptions) -> list[str]:
    """A server the launcher starts offers Codex its catalog, unless told otherwise.
    Codex states no output cap, so one on the embedded CPU engine (the lean profile,
    unless --full) caps a request's output at the lean profile's LEAN_MAX_OUTPUT."""
    args = list(options.serve_args)
    if not _given(args, "--codex-profile"):
        args += ["--codex-profile", DEFAULT_CODEX_PROFILE]
    lean = options.profile == "lean" or (options.profile is None and serves_embedded(args))
    if lean and not _given(args, "--default-max-tokens"):
        args += ["--default-max-tokens", str(LEAN_MAX_OUTPUT)]
    return args


def configure(session: Session) -> ClientRun:
    url, main, profile = session.options.url, session.main, session.profile
    codex_home = launcher_home("codex")
    catalog, websockets = offers_catalog(url)
    instructions = codex_home / "lean-instructions.md" if profile.lean else None
    if instructions is not None:
        instructions.write_text(LEAN_BASE_INSTRUCTIONS, encoding="utf-8")
    config = codex_config(url, main, catalog=catalog, instructions=instructions, websockets=websockets)
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    if not catalog:
        print(
            f"tokenyard codex: {url} offers no Codex catalog (start it with "
            f"`--codex-profile {DEFAULT_CODEX_PROFILE}`); Codex will use fallback metadata for the model",
            file=sys.stderr,
        )
    settings = {"CODEX_HOME": str(codex_home), CLIENT_KEY_ENV: client_key()}
    announced = {**settings, "model": main.id, "catalog": "tokenyard" if catalog else "none"}
    off = ", ".join((*LEAN_SECTIONS_OFF, *(f"features.{name}" for name in LEAN_FEATURES_OFF)))
    lean = f"model_instructions_file={instructions}; {off} off"
    surface = lean if profile.lean else "Codex's own instructions and tool surface"
    args = client_arguments(session.options.client_args, Path.cwd())
    return ClientRun(args, {**os.environ, **settings}, announced, surface)


def launch(argv: Sequence[str]) -> int:
    # The server reads Codex's bundled catalog through the same executable.
    return launch_client(argv, "codex", configure, serve_arguments=serve_arguments, binary_env="TOKENYARD_CODEX_BIN")
