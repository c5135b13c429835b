"""`tokenyard openclaw [args…]`: OpenClaw against tokenyard.

OpenClaw reads the config file named by OPENCLAW_CONFIG_PATH and keeps its state in
OPENCLAW_STATE_DIR; the launcher points both into a tokenyard-owned folder and writes
a config there with a single provider (tokenyard's Anthropic Messages API) whose
models carry the real `contextWindow` and `maxTokens`, so the user's own
~/.openclaw stays untouched.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .common import ClientRun, ServedModel, Session, client_key, launch_client, launcher_home

PROVIDER = "tokenyard"
# Only for a server that states no limits (an older tokenyard): a window small
# enough for any model tokenyard serves, said out loud when used.
ASSUMED_WINDOW = 32_768
ASSUMED_MAX_TOKENS = 4096
# OpenClaw's tool surfaces. Full: its `coding` profile (files, shell, web, sessions,
# memory…). Lean: the four a coding turn needs (`allow: ["write"]` also brings
# apply_patch where the model suits it). Either way with direct schemas: open models
# call a tool they can see far more reliably than one found through tool search.
FULL_TOOLS: dict[str, Any] = {"profile": "coding", "toolSearch": False}
LEAN_TOOLS: dict[str, Any] = {"allow": ["exec", "read", "write", "edit"], "toolSearch": False}


def _model_entry(model: ServedModel, lean: bool) -> dict[str, Any]:
    """`maxTokens` is what OpenClaw asks for per request and keeps free below the
    window: the model's output budget, never the whole window. `reasoning` makes it
    send a thinking budget on top: only for a model that reasons."""
    return {
        "id": model.id,
        "name": model.id,
        "reasoning": model.thinking is not False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": model.context_window or ASSUMED_WINDOW,
        "maxTokens": model.output_budget(lean=lean) or ASSUMED_MAX_TOKENS,
    }


def openclaw_config(
    url: str, main: ServedModel, models: Sequence[ServedModel], *, lean: bool = False
) -> dict[str, Any]:
    return {
        "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{main.id}"}}},
        "tools": dict(LEAN_TOOLS if lean else FULL_TOOLS),
        "plugins": {"enabled": False},
        "models": {
            "mode": "merge",
            "providers": {
                PROVIDER: {
                    "baseUrl": url.rstrip("/"),
                    "apiKey": client_key(),
                    "api": "anthropic-messages",
                    "models": [_model_entry(m, lean) for m in models],
                }
            },
        },
    }


def configure(session: Session) -> ClientRun:
    url, main, models, profile = session.options.url, session.main, session.models, session.profile
    config = openclaw_config(url, main, models, lean=profile.lean)
    path = launcher_home("openclaw") / "openclaw.json"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if main.context_window is None:
        print(f"tokenyard openclaw: {url} states no context window; assuming {ASSUMED_WINDOW} tokens", file=sys.stderr)
    # OpenClaw keeps its state (a SQLite database, sessions) in OPENCLAW_STATE_DIR,
    # ~/.openclaw otherwise, even when OPENCLAW_CONFIG_PATH names the config.
    settings = {
        "OPENCLAW_CONFIG_PATH": str(path),
        "OPENCLAW_STATE_DIR": str(path.parent),
        "OPENCLAW_NO_AUTO_UPDATE": "1",  # no self-update checks against a local model
    }
    entry = config["models"]["providers"][PROVIDER]["models"][models.index(main)]
    tools = ", ".join(LEAN_TOOLS["allow"]) if profile.lean else "its coding profile"
    surface = f"tools {tools}; maxTokens {entry['maxTokens']}; reasoning {str(entry['reasoning']).lower()}"
    announced = {**settings, "model": f"{PROVIDER}/{main.id}"}
    return ClientRun(session.options.client_args, {**os.environ, **settings}, announced, surface)


def launch(argv: Sequence[str]) -> int:
    return launch_client(argv, "openclaw", configure)
