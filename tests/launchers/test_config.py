"""What each launcher writes and sets, without running a client."""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from tokenyard.launchers import claude, codex, openclaw
from tokenyard.launchers.common import (
    CLIENT_KEY_ENV,
    LaunchError,
    LaunchOptions,
    ServedModel,
    choose_models,
    parse_launch_args,
)

MAIN = ServedModel("tokenyard/qwen3-coder", context_window=32_768, max_output_tokens=8192)
SMALL = ServedModel("tokenyard/smollm2", context_window=8192, max_output_tokens=1024)


def test_launcher_flags_come_first_and_the_rest_reaches_the_client_untouched():
    options = parse_launch_args(
        ["--url", "http://127.0.0.1:9000", "--model=m", "--serve-arg", "--engine", "-p", "--model", "x"]
    )
    assert (options.url, options.model, options.serve_args) == ("http://127.0.0.1:9000", "m", ["--engine"])
    assert options.client_args == ["-p", "--model", "x"]
    assert parse_launch_args(["--no-start", "--", "--url", "y"]).client_args == ["--url", "y"]
    assert parse_launch_args(["--no-start"]).start_server is False
    with pytest.raises(LaunchError, match="--url needs a value"):
        parse_launch_args(["--url"])


def test_models_are_chosen_from_what_the_server_serves():
    # A second served model is the small/fast one; an alias of the main model is not.
    alias = ServedModel("claude-sonnet-4-6", context_window=32_768, model=MAIN.id)
    assert choose_models([MAIN, SMALL], LaunchOptions()) == (MAIN, SMALL)
    assert choose_models([MAIN, alias, SMALL], LaunchOptions()) == (MAIN, SMALL)
    assert choose_models([MAIN, alias], LaunchOptions()) == (MAIN, MAIN)
    assert choose_models([MAIN], LaunchOptions()) == (MAIN, MAIN)
    assert choose_models([MAIN, SMALL], LaunchOptions(small_model=MAIN.id)) == (MAIN, MAIN)
    assert choose_models([MAIN, SMALL], LaunchOptions(model=SMALL.id)) == (SMALL, MAIN)
    with pytest.raises(LaunchError, match="not served"):
        choose_models([MAIN], LaunchOptions(model="claude-opus"))


def test_claude_settings_name_the_models_and_a_tokenyard_owned_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-the-users-real-key")
    folder = claude.prepare_config_dir(tmp_path)
    settings = claude.claude_settings("http://127.0.0.1:8000", MAIN, SMALL, folder)
    assert settings["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8000"
    assert settings["ANTHROPIC_MODEL"] == MAIN.id
    assert settings["ANTHROPIC_SMALL_FAST_MODEL"] == settings["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == SMALL.id
    assert settings["CLAUDE_CONFIG_DIR"] == str(tmp_path)
    assert settings["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    # The real window, through what Claude Code 2.1.330 reads (CLAUDE_CODE_NOTES.md): one
    # value for both models, so the smaller one's (a subagent on the small model once got
    # `prompt is too long: 17981 > 16384`); the output budget leaves room below it (a
    # twelfth of the window, at most either model's cap).
    assert settings["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "8192"
    assert settings["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == str(8192 // 12)
    alone = claude.claude_settings("http://127.0.0.1:8000", MAIN, MAIN, folder)
    assert alone["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "32768"
    assert alone["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == str(32_768 // 12)
    assert "CLAUDE_CODE_AUTO_COMPACT_WINDOW" not in settings, "clamped to >= 100K by Claude Code: not the window"
    env = claude.client_environment(settings)
    assert "ANTHROPIC_API_KEY" not in env, "a real Anthropic key must never be sent to the local server"
    assert env["ANTHROPIC_AUTH_TOKEN"] == settings["ANTHROPIC_AUTH_TOKEN"]


def test_claude_window_is_left_unset_when_the_server_does_not_state_one(tmp_path):
    settings = claude.claude_settings("http://127.0.0.1:8000", ServedModel("m"), ServedModel("m"), tmp_path)
    assert "CLAUDE_CODE_MAX_CONTEXT_TOKENS" not in settings
    small_cap = claude.window_settings(ServedModel("m", context_window=1_000_000, max_output_tokens=4096))
    assert small_cap["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "4096"
    # A window only one model states is the one to keep; every stated cap holds.
    both = claude.window_settings(ServedModel("m", 65_536, 60_000), ServedModel("s", None, 2048))
    assert both == {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "65536", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "2048"}


def test_claude_onboarding_is_marked_done_and_other_state_is_kept(tmp_path):
    (tmp_path / ".claude.json").write_text(json.dumps({"projects": {"/p": {"hasTrustDialogAccepted": True}}}))
    claude.prepare_config_dir(tmp_path)
    state = json.loads((tmp_path / ".claude.json").read_text())
    assert state == {"projects": {"/p": {"hasTrustDialogAccepted": True}}, "hasCompletedOnboarding": True}


def test_codex_config_is_valid_toml_with_a_tokenyard_provider():
    config = tomllib.loads(codex.codex_config("http://127.0.0.1:8000", MAIN, catalog=False))
    assert config["model"] == MAIN.id
    assert config["model_provider"] == "tokenyard"
    assert config["model_context_window"] == MAIN.context_window
    provider = config["model_providers"]["tokenyard"]
    assert provider == {
        "name": "tokenyard",
        "base_url": "http://127.0.0.1:8000/v1",
        "wire_api": "responses",
        "env_key": CLIENT_KEY_ENV,
        # minutes of silence (a cold CPU prefill, a long call held until complete) must not end the stream
        "stream_idle_timeout_ms": codex.STREAM_IDLE_TIMEOUT_MS,
    }
    assert codex.STREAM_IDLE_TIMEOUT_MS > 5 * 60 * 1000
    assert config["features"]["daemon_auto_start"] is False, "no app-server daemon outliving the launcher"
    assert CLIENT_KEY_ENV != "TOKENYARD_API_KEY", "the client key must not switch on the server's own key check"


def test_codex_config_points_at_the_catalog_when_the_server_offers_one():
    config = tomllib.loads(codex.codex_config("http://127.0.0.1:8000/", MAIN, catalog=True))
    assert config["model_providers"]["tokenyard"]["model_catalog_url"] == "http://127.0.0.1:8000/v1/models"
    assert "model_context_window" not in config, "the catalog states the window"


def test_codex_exec_outside_a_git_repository_may_run(tmp_path):
    assert codex.client_arguments(["exec", "hi"], tmp_path) == ["exec", "--skip-git-repo-check", "hi"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert codex.client_arguments(["exec", "hi"], tmp_path) == ["exec", "hi"]
    assert codex.client_arguments(["resume"], tmp_path) == ["resume"]


def test_openclaw_config_carries_the_real_window_and_output_cap():
    config = openclaw.openclaw_config("http://127.0.0.1:8000", MAIN, [MAIN, SMALL])
    provider = config["models"]["providers"]["tokenyard"]
    assert provider["api"] == "anthropic-messages"
    assert provider["baseUrl"] == "http://127.0.0.1:8000"
    assert [(m["id"], m["contextWindow"], m["maxTokens"]) for m in provider["models"]] == [
        (MAIN.id, 32_768, 8192),
        (SMALL.id, 8192, 1024),
    ]
    assert config["agents"]["defaults"]["model"]["primary"] == f"tokenyard/{MAIN.id}"


def test_a_server_the_codex_launcher_starts_offers_the_catalog():
    assert codex.serve_arguments(["--engine", "scripted"]) == ["--engine", "scripted", "--codex-profile", "gpt-5.5"]
    assert codex.serve_arguments(["--codex-profile=gpt-5.4"]) == ["--codex-profile=gpt-5.4"]


def test_openclaw_assumes_a_small_window_only_when_the_server_states_none():
    config = openclaw.openclaw_config("http://127.0.0.1:8000", ServedModel("m"), [ServedModel("m")])
    entry = config["models"]["providers"]["tokenyard"]["models"][0]
    assert (entry["contextWindow"], entry["maxTokens"]) == (openclaw.ASSUMED_WINDOW, openclaw.ASSUMED_MAX_TOKENS)
    assert "allow" not in config["tools"], "the launcher offers OpenClaw's own tool set"


def test_run_client_relays_stderr_less_the_dropped_lines(capfd):
    import sys

    from tokenyard.launchers.common import RunningServer, run_client

    script = "import sys; sys.stderr.write('[drop] me\\nkept line\\n[drop]x\\n'); print('out')"
    code = run_client([sys.executable, "-c", script], {}, RunningServer("http://x"), drop_stderr=b"[drop] ")
    out, err = capfd.readouterr()
    assert code == 0 and out == "out\n"
    assert err == "kept line\n[drop]x\n"


def test_claude_auto_modes_own_classifier_asks_the_served_model(tmp_path):
    """With CLAUDE_CODE_AUTO_MODE_SERVER=0 Claude Code classifies locally, with the
    model CLAUDE_CODE_AUTO_MODE_MODEL names (else claude-sonnet-5: not served)."""
    settings = claude.claude_settings("http://127.0.0.1:8000", MAIN, SMALL, tmp_path)
    assert settings["CLAUDE_CODE_AUTO_MODE_MODEL"] == MAIN.id
