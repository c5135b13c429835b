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

from .common import ClientRun, Profile, ServedModel, Session, client_key, launch_client, launcher_home

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
# The lean profile's tools (`--tools`): the core of a coding turn. Claude Code's full
# set (Agent, Workflow, Skill, ToolSearch…) is ~32K characters of schemas, two thirds
# of its first prompt; a CPU prefills that for a minute and more before any answer.
LEAN_TOOLS = "Bash,Read,Edit,Write"
# The lean profile's quiet: no model call for the terminal title (a background request
# that would queue behind the user's turn on a CPU).
LEAN_QUIET = {"CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1"}
# Claude Code's subcommands (`claude --help`), which take no session flags.
SUBCOMMANDS = frozenset(
    {"agents", "attach", "auth", "auto-mode", "doctor", "gateway", "import", "install", "logs", "mcp"}
    | {"plugin", "plugins", "purge", "respawn", "rm", "setup-token", "update"}
)


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


def window_settings(*models: ServedModel, lean: bool = False) -> dict[str, str]:
    """What tells Claude Code 2.1.330 the served models' real window (it does not read
    it from the server: tests/e2e/CLAUDE_CODE_NOTES.md). CLAUDE_CODE_MAX_CONTEXT_TOKENS
    is the window it compacts against, one value for every model id it does not know:
    it sends the main model's history to the small/fast model too (subagents, side
    queries), so the window is the smallest of the models'. It keeps its per-request
    output budget plus ~13K tokens free below that window, so the budget is every
    model's output budget (about a twelfth of the window, at most its cap, and in the
    lean profile at most LEAN_MAX_OUTPUT; at its default 32000 a 32K window would
    compact on every turn). CLAUDE_CODE_AUTO_COMPACT_WINDOW is no substitute: it is
    clamped to at least 100K. A main model the server says does not reason gets no
    thinking requests."""
    settings = {"CLAUDE_CODE_DISABLE_THINKING": "1"} if models and models[0].thinking is False else {}
    windows = [m.context_window for m in models if m.context_window is not None]
    if not windows:
        return settings
    budgets = [b for m in models if (b := m.output_budget(lean=lean)) is not None]
    return {
        **settings,
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(min(windows)),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(min(budgets)),
    }


def profile_arguments(args: Sequence[str], profile: Profile) -> list[str]:
    """The client's arguments, with the lean tool set appended unless the user chose
    tools or runs a subcommand (appended: `--tools` takes several values, so before a
    prompt it would swallow it)."""
    out = list(args)
    if not profile.lean or (out and out[0] in SUBCOMMANDS):
        return out
    if any(a == "--tools" or a.startswith("--tools=") for a in out):
        return out
    return [*out, "--tools", LEAN_TOOLS]


def claude_settings(
    url: str, main: ServedModel, small: ServedModel, config_dir: Path, *, lean: bool = False
) -> dict[str, str]:
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
        **window_settings(main, small, lean=lean),
        **QUIET,
        **(LEAN_QUIET if lean else {}),
    }


def client_environment(settings: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(settings)
    return env


def configure(session: Session) -> ClientRun:
    main, small, profile = session.main, session.small, session.profile
    config_dir = prepare_config_dir(launcher_home("claude"))
    settings = claude_settings(session.options.url, main, small, config_dir, lean=profile.lean)
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
    args = profile_arguments(session.options.client_args, profile)
    if args != session.options.client_args:
        chosen = f"--tools {LEAN_TOOLS}, no terminal-title requests"
    else:
        chosen = "the tools you named" if profile.lean else "Claude Code's own tool set"
    # Interactive sessions log the signal instead of printing it; their stderr stays the terminal's.
    printing = any(a in PRINT_FLAGS for a in args)
    drop = UNRECOGNIZED_MODEL_SIGNAL if printing else None
    return ClientRun(args, client_environment(settings), settings, chosen, drop)


def launch(argv: Sequence[str]) -> int:
    return launch_client(argv, "claude", configure)
