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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import (
    LaunchOptions,
    Profile,
    RunningServer,
    ServedModel,
    announce_profile,
    announce_settings,
    choose_models,
    choose_profile,
    client_key,
    ensure_server,
    find_client,
    launcher_help,
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


def window_settings(model: ServedModel, *, lean: bool = False) -> dict[str, str]:
    """What tells Claude Code 2.1.330 the served model's real window (it does not read
    it from the server: tests/e2e/CLAUDE_CODE_NOTES.md). CLAUDE_CODE_MAX_CONTEXT_TOKENS
    is the window it compacts against. It keeps its per-request output budget plus
    ~13K tokens free below that window, so the budget is the model's output budget, a
    twelfth of the window (at its default 32000 a 32K window would compact on every turn).
    CLAUDE_CODE_AUTO_COMPACT_WINDOW is no substitute: it is clamped to at least 100K.
    A model the server says does not reason gets no thinking requests."""
    settings = {"CLAUDE_CODE_DISABLE_THINKING": "1"} if model.thinking is False else {}
    budget = model.output_budget(lean=lean)
    if model.context_window is None or budget is None:
        return settings
    return {
        **settings,
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(model.context_window),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(budget),
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
        "CLAUDE_CONFIG_DIR": str(config_dir),
        **window_settings(main, lean=lean),
        **QUIET,
        **(LEAN_QUIET if lean else {}),
    }


def client_environment(settings: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(settings)
    return env


def launch(argv: Sequence[str]) -> int:
    options: LaunchOptions = parse_launch_args(argv)
    if options.show_help:
        print(launcher_help("claude", "Claude Code"), end="")
        return 0
    binary = find_client("claude")
    server: RunningServer = ensure_server(options)
    try:
        main, small = choose_models(served_models(options.url), options)
        config_dir = prepare_config_dir(launcher_home("claude"))
        profile = choose_profile(options, main, server.process is not None)
        settings = claude_settings(options.url, main, small, config_dir, lean=profile.lean)
    except BaseException:
        server.stop()
        raise
    announce_settings("claude", settings)
    args = profile_arguments(options.client_args, profile)
    if args != options.client_args:
        chosen = f"--tools {LEAN_TOOLS}, no terminal-title requests"
    else:
        chosen = "the tools you named" if profile.lean else "Claude Code's own tool set"
    announce_profile("claude", profile, chosen)
    return run_client([binary, *args], client_environment(settings), server)
