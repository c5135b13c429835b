"""`tokenyard claude [args…]`: Claude Code against tokenyard.

Claude Code keeps its global settings in `$CLAUDE_CONFIG_DIR/.claude.json`; pointing
CLAUDE_CONFIG_DIR at a tokenyard-owned folder leaves the user's ~/.claude.json and
~/.claude alone, and lets the launcher mark onboarding complete there — otherwise an
interactive first start tries to reach api.anthropic.com before it ever asks
tokenyard anything.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import (
    LaunchOptions,
    RunningServer,
    ServedModel,
    announce_settings,
    choose_models,
    client_key,
    ensure_server,
    find_client,
    launcher_home,
    parse_launch_args,
    run_client,
    served_models,
)

# Claude Code's own settings: no telemetry, error reporting or update checks (it
# runs offline against a local server), and a key sent as a bearer token
# (ANTHROPIC_API_KEY would make the interactive client ask to approve it).
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}


# Claude Code 2.1.330 prints this line to stderr on every `-p` run for a model id it
# does not know. Every way to make it know an id (a `claude-*` alias, `modelOverrides`,
# `modelPicker.options[].behavesAs`) also makes it take that Claude model's window
# and prompt profile instead of CLAUDE_CODE_MAX_CONTEXT_TOKENS (`/context`: 17.6k /
# 200k instead of 9.7k / 65.5k), so the launcher drops the line from what it relays.
UNRECOGNIZED_MODEL_SIGNAL = b"[claude-code:unrecognized_model] "
PRINT_FLAGS = ("-p", "--print")

# The share of the window Claude Code may ask for per request (see window_settings).
OUTPUT_SHARE = 12


def prepare_config_dir(folder: Path) -> Path:
    """`.claude.json` in the tokenyard-owned config folder, onboarding marked done;
    any other state Claude Code keeps there is left as it is."""
    path = folder / ".claude.json"
    state: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            state = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            state = {}
    state["hasCompletedOnboarding"] = True
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    return folder


def window_settings(*models: ServedModel) -> dict[str, str]:
    """What tells Claude Code 2.1.330 the served models' real window (it does not read
    it from the server: tests/e2e/CLAUDE_CODE_NOTES.md). CLAUDE_CODE_MAX_CONTEXT_TOKENS
    is the window it compacts against, one value for every model id it does not know:
    it sends the main model's history to the small/fast model too (subagents, side
    queries), so the window is the smallest of the models'. It keeps its per-request
    output budget plus ~13K tokens free below that window, so the budget is held to
    about a twelfth of the window (at its default 32000 a 32K window would compact on
    every turn) and to every model's output cap. CLAUDE_CODE_AUTO_COMPACT_WINDOW is no
    substitute: it is clamped to at least 100K."""
    windows = [m.context_window for m in models if m.context_window is not None]
    if not windows:
        return {}
    window = min(windows)
    caps = [m.max_output_tokens for m in models if m.max_output_tokens is not None]
    budget = min([window // OUTPUT_SHARE, *caps])
    return {
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(window),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(max(1, budget)),
    }


def claude_settings(url: str, main: ServedModel, small: ServedModel, config_dir: Path) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_AUTH_TOKEN": client_key(),
        "ANTHROPIC_MODEL": main.id,
        "ANTHROPIC_SMALL_FAST_MODEL": small.id,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": small.id,
        # Auto mode's own classifier, when Claude Code classifies locally
        # (CLAUDE_CODE_AUTO_MODE_SERVER=0); else it asks for claude-sonnet-5 (a 404).
        "CLAUDE_CODE_AUTO_MODE_MODEL": main.id,
        "CLAUDE_CONFIG_DIR": str(config_dir),
        **window_settings(main, small),
        **QUIET,
    }


def client_environment(settings: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(settings)
    return env


def launch(argv: Sequence[str]) -> int:
    options: LaunchOptions = parse_launch_args(argv)
    binary = find_client("claude")
    server: RunningServer = ensure_server(options)
    try:
        main, small = choose_models(served_models(options.url), options)
        config_dir = prepare_config_dir(launcher_home("claude"))
        settings = claude_settings(options.url, main, small, config_dir)
    except BaseException:
        server.stop()
        raise
    announce_settings("claude", settings)
    if (
        small.context_window is not None
        and main.context_window is not None
        and small.context_window < main.context_window
    ):
        print(
            f"tokenyard claude: the window is {small.id}'s ({small.context_window} tokens, smaller than {main.id}'s "
            f"{main.context_window}): Claude Code sends both the same history; `--small-model {main.id}` keeps the larger",
            file=sys.stderr,
        )
    # Interactive sessions log the signal instead of printing it; their stderr stays the terminal's.
    printing = any(a in PRINT_FLAGS for a in options.client_args)
    drop = UNRECOGNIZED_MODEL_SIGNAL if printing else None
    return run_client([binary, *options.client_args], client_environment(settings), server, drop_stderr=drop)
