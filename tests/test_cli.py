import json
import subprocess
import sys

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
]
RAW = (
    "<think>\nplan\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
)


def run(args, stdin):
    return subprocess.run(
        [sys.executable, "-m", "tokenyard.cli", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_parse_prints_event_json_lines(tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    done = run(
        [
            "parse",
            "--reasoning-parser",
            "qwen3",
            "--tool-call-parser",
            "qwen3_coder",
            "--tools",
            str(tools),
            "--chunk-size",
            "3",
            "--merge",
        ],
        RAW,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types.index("ReasoningDelta") < types.index("ToolCallStart") < types.index("ToolCallReady")
    ready = next(e for e in events if e["type"] == "ToolCallReady")
    assert ready["arguments"] == '{"city": "Tokyo", "days": 3}' and ready["declared"] is True
    # Conservation is visible to the user too.
    text = "".join(
        e.get("text", "") or e.get("raw", "")
        for e in events
        if e["type"] in ("Marker", "ReasoningDelta", "TextDelta", "ToolCallReady")
    )
    assert text == RAW


def test_unknown_parser_is_a_clear_error_listing_known_names():
    done = run(["parse", "--tool-call-parser", "qwen4"], "")
    assert done.returncode == 2
    assert "unknown tool-call parser 'qwen4'" in done.stderr and "hermes" in done.stderr


def test_list():
    done = run(["parse", "--list"], "")
    assert "deepseek_r1" in done.stdout and "qwen3_coder" in done.stdout


def test_codex_catalog_writes_an_entry_per_served_id(tmp_path):
    from tests.apis.test_catalogs import PROFILE

    models, out = tmp_path / "bundled.json", tmp_path / "catalog.json"
    models.write_text(json.dumps({"models": [PROFILE]}))
    args = ["codex-catalog", "--served-model-name", "own/model", "--served-model-name", "alias"]
    done = run([*args, "--context-window", "65536", "--codex-models", str(models), "-o", str(out)], "")
    assert done.returncode == 0, done.stderr
    catalog = json.loads(out.read_text())
    assert [(m["slug"], m["context_window"]) for m in catalog["models"]] == [("own/model", 65536), ("alias", 65536)]
    assert catalog["models"][0]["model_messages"] == PROFILE["model_messages"]
    unknown = run([*args, "--context-window", "1", "--codex-models", str(models), "--codex-profile", "gpt-9"], "")
    assert unknown.returncode == 2 and "no model 'gpt-9' in the Codex catalog" in unknown.stderr


def test_serve_without_the_embedded_extra_says_what_to_install(monkeypatch, capsys):
    import importlib.util

    from tokenyard import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert cli.main(["serve"]) == 2
    hint = capsys.readouterr().err
    assert "needs torch" in hint and "download.pytorch.org/whl/cpu" in hint and "--engine remote" in hint


def test_codex_profile_finds_codex_where_the_launchers_do(tmp_path):
    """`--codex-profile` without `--codex-models` runs the Codex that
    $TOKENYARD_CLIENTS holds (not only ~/.cache's), and says what to do when there is
    none instead of a bare `[Errno 2]`."""
    import os

    from tests.e2e.harness import clients_dir, codex_binary

    codex_binary()  # skips without the installed Codex
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TOKENYARD_CACHE": str(tmp_path / "cache")}
    env.update({k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "VIRTUAL_ENV")})
    args = [
        sys.executable,
        "-m",
        "tokenyard.cli",
        "codex-catalog",
        "--served-model-name",
        "m",
        "--context-window",
        "4096",
    ]
    found = subprocess.run(
        args, env={**env, "TOKENYARD_CLIENTS": str(clients_dir())}, capture_output=True, text=True, timeout=60
    )
    assert found.returncode == 0, found.stderr
    assert [m["slug"] for m in json.loads(found.stdout)["models"]] == ["m"]
    missing = subprocess.run(
        args, env={**env, "TOKENYARD_CLIENTS": str(tmp_path / "none")}, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "Errno" not in missing.stderr
    assert "`codex` is not installed" in missing.stderr and "--codex-models FILE" in missing.stderr


def test_serve_default_max_tokens_comes_from_the_flag_or_the_environment(monkeypatch):
    from tokenyard.cli import build_parser
    from tokenyard.settings import DEFAULT_MAX_TOKENS

    assert build_parser().parse_args(["serve"]).default_max_tokens == DEFAULT_MAX_TOKENS
    assert build_parser().parse_args(["serve", "--default-max-tokens", "512"]).default_max_tokens == 512
    monkeypatch.setenv("TOKENYARD_DEFAULT_MAX_TOKENS", "256")
    assert build_parser().parse_args(["serve"]).default_max_tokens == 256
