"""What `tokenyard serve` serves: `--model`, `--serve-model NAME=MODEL[,KEY=VALUE…]`
and a `--models-config` file, with engine-wide flags inherited by every entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenyard import cli
from tokenyard.server.models_config import ModelsConfigError, parse_serve_model
from tokenyard.settings import DEFAULT_MODEL


def settings(*argv: str):
    args = cli.build_parser().parse_args(["serve", *argv])
    return cli.model_settings(args)


def test_the_single_model_form_is_unchanged():
    (only,) = settings("--model", "m", "--served-model-name", "a", "--served-model-name", "b")
    assert (only.model, only.served_model_names, only.engine) == ("m", ("a", "b"), "embedded")
    (default,) = settings()
    assert default.model == DEFAULT_MODEL


def test_serve_model_adds_models_that_inherit_engine_wide_flags():
    main, fast = settings(
        "--engine",
        "remote",
        "--engine-url",
        "http://127.0.0.1:8001",
        "--engine-api-key",
        "secret",
        "--model",
        "/models/coder",
        "--tool-call-parser",
        "qwen3_coder",
        "--serve-model",
        "fast=/models/small,engine-url=http://127.0.0.1:8002,alias=claude-haiku-4-5,max-model-len=8192",
    )
    assert main.engine_urls == ("http://127.0.0.1:8001",) and main.tool_call_parser == "qwen3_coder"
    assert fast.model == "/models/small" and fast.served_model_names == ("fast", "claude-haiku-4-5")
    assert fast.engine_urls == ("http://127.0.0.1:8002",) and fast.max_model_len == 8192
    # Engine-wide: inherited; what names the --model model: not.
    assert (fast.engine, fast.engine_api_key) == ("remote", "secret")
    assert fast.tool_call_parser is None


def test_a_models_file_alone_names_every_model(tmp_path):
    toml = tmp_path / "models.toml"
    toml.write_text(
        """
[[models]]
name = "coder"
model = "/models/coder"
aliases = ["claude-sonnet-4-6"]
engine_url = ["http://gpu1:8001", "http://gpu2:8001"]
kv_events = ["tcp://gpu1:5557", "tcp://gpu2:5557"]
reasoning_parser = "qwen3"

[[models]]
name = "fast"
model = "/models/small"
engine = "simulated"
keep_anthropic_preamble = true
chat_template = "~/small.jinja"
"""
    )
    coder, fast = settings("--engine", "remote", "--models-config", str(toml))
    assert coder.served_model_names == ("coder", "claude-sonnet-4-6")
    assert coder.engine_urls == ("http://gpu1:8001", "http://gpu2:8001") and len(coder.kv_events) == 2
    assert coder.engine == "remote" and coder.reasoning_parser == "qwen3"
    assert fast.engine == "simulated" and fast.keep_anthropic_preamble is True
    assert fast.chat_template == Path("~/small.jinja").expanduser()
    json_file = tmp_path / "models.json"
    json_file.write_text('{"models": [{"name": "a", "model": "/m", "max_model_len": 4096}]}')
    (only,) = settings("--models-config", str(json_file))
    assert only.max_model_len == 4096


@pytest.mark.parametrize(
    "body,message",
    [
        ('[[models]]\nname = "x"\n', "`model`"),
        ('[[models]]\nmodel = "/m"\ncolour = "red"\n', "unknown key"),
        ('[[models]]\nmodel = "/m"\nmax_model_len = "big"\n', "max_model_len"),
        ('[[models]]\nmodel = "/m"\naliases = ["x"]\n', "needs a `name`"),
        ("models = 3\n", "`models` list"),
        ("[[models\n", "models.toml"),
    ],
)
def test_a_bad_models_file_says_where_and_why(tmp_path, body, message):
    path = tmp_path / "models.toml"
    path.write_text(body)
    with pytest.raises(ModelsConfigError, match=message):
        settings("--models-config", str(path))


def test_bad_serve_model_values_and_stray_model_flags():
    with pytest.raises(ModelsConfigError, match="NAME=MODEL"):
        parse_serve_model("just-a-path")
    with pytest.raises(ModelsConfigError, match="KEY=VALUE"):
        parse_serve_model("fast=/m,oops")
    with pytest.raises(ValueError, match="--engine-url"):
        settings("--engine-url", "http://x", "--serve-model", "fast=/m")


def test_serve_reports_a_bad_models_file_as_a_usage_error(tmp_path, capsys):
    path = tmp_path / "models.toml"
    path.write_text("[[models]]\n")
    assert cli.main(["serve", "--engine", "scripted", "--models-config", str(path)]) == 2
    assert "`model`" in capsys.readouterr().err
