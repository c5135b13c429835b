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

from .common import (
    CLIENT_KEY_ENV,
    RunningServer,
    ServedModel,
    announce_settings,
    choose_models,
    client_key,
    ensure_server,
    find_client,
    get_json,
    launcher_home,
    parse_launch_args,
    run_client,
    served_models,
)

PROVIDER = "tokenyard"
# The Codex catalog entry a server the launcher starts serves its ids as (their
# window, tool surface and reasoning levels); `tokenyard serve --codex-profile`.
CODEX_PROFILE = "gpt-5.5"


def offers_catalog(url: str) -> bool:
    """Whether /v1/models answers Codex's catalog request with a `models` list."""
    try:
        body = get_json(
            url.rstrip("/") + "/v1/models?client_version=0.0.0", {"authorization": f"Bearer {client_key()}"}, 10
        )
    except (OSError, ValueError):
        return False
    return isinstance(body, dict) and isinstance(body.get("models"), list)


STREAM_IDLE_TIMEOUT_MS = 30 * 60 * 1000


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def codex_config(url: str, model: ServedModel, *, catalog: bool) -> str:
    base = url.rstrip("/") + "/v1"
    lines = [
        f"model = {_toml_string(model.id)}",
        f'model_provider = "{PROVIDER}"',
        'web_search = "disabled"',  # else Codex offers OpenAI's hosted web search
        "check_for_update_on_startup = false",
    ]
    if not catalog and model.context_window is not None:
        lines.append(f"model_context_window = {model.context_window}")
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
    if catalog:
        lines.append(f"model_catalog_url = {_toml_string(base + '/models')}")
    lines += ["", "[analytics]", "enabled = false"]
    # The TUI otherwise starts a managed `codex app-server` daemon (and its updater
    # loop) in sessions of their own, which outlive `tokenyard codex`; without it the
    # TUI runs the app server in-process and leaves nothing behind when it exits.
    lines += ["", "[features]", "daemon_auto_start = false", ""]
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


def serve_arguments(serve_args: Sequence[str]) -> list[str]:
    """A server the launcher starts offers Codex its catalog, unless told otherwise."""
    if any(a == "--codex-profile" or a.startswith("--codex-profile=") for a in serve_args):
        return list(serve_args)
    return [*serve_args, "--codex-profile", CODEX_PROFILE]


def launch(argv: Sequence[str]) -> int:
    options = parse_launch_args(argv)
    binary = find_client("codex")
    options.serve_args = serve_arguments(options.serve_args)
    # The server reads Codex's bundled catalog through the same binary.
    server: RunningServer = ensure_server(options, {"TOKENYARD_CODEX_BIN": binary})
    try:
        main, _ = choose_models(served_models(options.url), options)
        codex_home = launcher_home("codex")
        catalog = offers_catalog(options.url)
        (codex_home / "config.toml").write_text(codex_config(options.url, main, catalog=catalog), encoding="utf-8")
    except BaseException:
        server.stop()
        raise
    if not catalog:
        print(
            f"tokenyard codex: {options.url} offers no Codex catalog (start it with `--codex-profile {CODEX_PROFILE}`); "
            "Codex will use fallback metadata for the model",
            file=sys.stderr,
        )
    settings = {"CODEX_HOME": str(codex_home), CLIENT_KEY_ENV: client_key()}
    announce_settings("codex", {**settings, "model": main.id, "catalog": "tokenyard" if catalog else "none"})
    env = {**os.environ, **settings}
    return run_client([binary, *client_arguments(options.client_args, Path.cwd())], env, server)
