"""Settings declared once (settings.py): each declaration is a flag, a TOKENYARD_*
variable, a models-file key and a README row, and a bad value is one line, exit 2."""

import argparse
from pathlib import Path

import pytest

from tokenyard import cli
from tokenyard.launchers.common import LaunchError, serve_settings, serves_embedded
from tokenyard.server.models_config import KNOWN_KEYS, ModelsConfigError, entry_settings
from tokenyard.settings import SERVE_SETTINGS, ModelSettings, declared, with_flag_tables

README = Path(__file__).parents[1] / "README.md"
# A value each kind of setting can read, and what it reads as.
SAMPLES = {int: ("7", 7), float: ("2.5", 2.5), bool: ("1", True), Path: ("/tmp/x", Path("/tmp/x")), str: ("v", "v")}


def parse(*argv):
    return cli.build_parser().parse_args(["serve", *argv])


def test_the_readme_flag_tables_are_the_declarations():
    text = README.read_text(encoding="utf-8")
    assert "<!-- settings: serve -->" in text and "<!-- settings: scale-out -->" in text
    assert with_flag_tables(text) == text, "README is stale: python -m tokenyard.settings README.md"
    for item in SERVE_SETTINGS:
        assert f"`{item.flag}" in text and f"`{item.env}`" in text


@pytest.mark.parametrize("item", SERVE_SETTINGS, ids=lambda item: item.name)
def test_each_setting_is_a_flag_and_a_variable(item, monkeypatch):
    text, value = (item.spec.choices[-1], item.spec.choices[-1]) if item.spec.choices else SAMPLES[item.kind]
    expected = (value,) if item.many else value
    assert getattr(parse(), item.name) == item.default
    monkeypatch.setenv(item.env, text)
    assert getattr(parse(), item.name) == expected
    if item.switch:
        negated = [f"--no-{item.flag[2:]}"] if item.default is not False else []
        if negated:
            assert getattr(parse(*negated), item.name) is False, "a flag beats the environment"
    else:
        assert getattr(parse(item.flag, text), item.name) == expected


def test_list_settings_repeat_and_split_their_variable(monkeypatch):
    args = parse("--engine-url", "http://a", "--engine-url", "http://b")
    assert args.engine_urls == ("http://a", "http://b")
    monkeypatch.setenv("TOKENYARD_ENGINE_URL", "http://a,http://b")
    monkeypatch.setenv("TOKENYARD_SERVE_MODEL", "a=/m,alias=x;b=/n")
    args = parse()
    assert args.engine_urls == ("http://a", "http://b") and args.serve_model == ("a=/m,alias=x", "b=/n")


def test_older_variable_names_still_work(monkeypatch):
    monkeypatch.setenv("TOKENYARD_SEAL_KEY", "k" * 64)
    assert parse().server_key == "k" * 64


def test_every_model_setting_is_a_models_file_key():
    keys = {item.key for item in declared(ModelSettings)} - {"served_model_names"}
    assert keys | {"name", "aliases"} == KNOWN_KEYS


@pytest.mark.parametrize(
    ("argv", "env", "names"),
    [
        (["serve", "--port", "abc"], {}, ("--port", "'abc'", "integer")),
        (["serve", "--engine", "gpu"], {}, ("--engine", "'gpu'", "remote")),
        (["serve"], {"TOKENYARD_PORT": "abc"}, ("TOKENYARD_PORT", "--port", "integer")),
        (["serve"], {"TOKENYARD_KEEP_ANTHROPIC_PREAMBLE": "maybe"}, ("TOKENYARD_KEEP_ANTHROPIC_PREAMBLE", "true")),
        (["serve"], {"TOKENYARD_MAX_QUEUE_WAIT": "soon"}, ("TOKENYARD_MAX_QUEUE_WAIT", "number")),
        # Out of the declared range: a server that started would refuse or hang on every request.
        (["serve", "--max-concurrency", "0"], {}, ("--max-concurrency", "'0'", "integer of at least 1")),
        (["serve", "--max-model-len", "-5"], {}, ("--max-model-len", "'-5'", "integer of at least 1")),
        (["serve", "--port", "99999"], {}, ("--port", "'99999'", "integer from 1 to 65535")),
        (["serve"], {"TOKENYARD_SEND_TIMEOUT": "0"}, ("TOKENYARD_SEND_TIMEOUT", "--send-timeout", "number above 0")),
        (["serve", "--engine-timeout", "nan"], {}, ("--engine-timeout", "'nan'", "number of at least 0")),
        (["serve", "--max-queue-wait", "inf"], {}, ("--max-queue-wait", "'inf'")),
        (["serve", "--no-such-flag"], {}, ("--no-such-flag",)),
        (["codex-catalog", "--context-window", "big", "--served-model-name", "m"], {}, ("--context-window",)),
        (["codex-catalog", "--context-window", "8"], {}, ("--served-model-name",)),
        (["codex-catalog", "--context-window", "0", "--served-model-name", "m"], {}, ("'0'", "at least 1")),
        (["parse", "--chunk-size", "-3"], {}, ("--chunk-size", "'-3'", "integer of at least 0")),
        # `parse` names its parsers as `serve` does: flag or TOKENYARD_*.
        (["parse"], {"TOKENYARD_TOOL_CALL_PARSER": "no-such"}, ("tokenyard parse", "'no-such'")),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(argv, env, names, monkeypatch, capsys):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "usage:" not in err, err
    for name in names:
        assert name in err


@pytest.mark.parametrize("item", [i for i in SERVE_SETTINGS if i.kind in (int, float)], ids=lambda item: item.name)
def test_each_number_declares_its_range_and_its_default_is_in_it(item):
    low, above, high = item.spec.at_least, item.spec.above, item.spec.at_most
    assert (low is None) != (above is None), "declare the range a number setting takes"
    assert item.default is None or item.within(item.default)
    refused = [above - 1, above] if above is not None else [low - 1]
    for value in refused:
        with pytest.raises(cli.CommandLineError, match=item.flag):
            parse(item.flag, f"{value:g}")
    if low is not None:
        assert getattr(parse(item.flag, f"{low:g}"), item.name) == low
    if high is not None:
        assert getattr(parse(item.flag, f"{high:g}"), item.name) == high
        with pytest.raises(cli.CommandLineError, match=item.flag):
            parse(item.flag, f"{high + 1:g}")


def test_a_serve_setting_in_the_environment_does_not_break_other_commands(monkeypatch, capsys):
    monkeypatch.setenv("TOKENYARD_PORT", "abc")
    assert cli.main(["parse", "--list"]) == 0
    assert "tool-call parsers:" in capsys.readouterr().out


def test_a_bad_models_file_value_names_the_entry_and_the_key():
    with pytest.raises(ModelsConfigError, match=r"models\[0\]: `max_model_len`: 'big' is not an integer"):
        entry_settings({"model": "/m", "max_model_len": "big"}, ModelSettings(), "f.toml: models[0]")
    with pytest.raises(ModelsConfigError, match=r"`engine` = 3 is not one of"):
        entry_settings({"model": "/m", "engine": 3}, ModelSettings(), "f.toml: models[0]")
    # Out of range, as the file's own numbers (TOML reads `nan` as a float) and as text.
    for key, value in (("max_model_len", 0), ("time_scale", -1.0), ("token_delay", float("nan")), ("workers", "0")):
        with pytest.raises(ModelsConfigError, match=rf"models\[0\]: `{key}`.* is not an? \w+ (of at least|above)"):
            entry_settings({"model": "/m", key: value}, ModelSettings(), "f.toml: models[0]")
    read = entry_settings({"model": "/m", "time_scale": 2, "forward_priority": "on"}, ModelSettings(), "f")
    assert read.time_scale == 2.0 and read.forward_priority is True


def test_the_launchers_read_serve_settings(monkeypatch):
    assert serves_embedded([]) and not serves_embedded(["--engine", "remote"])
    monkeypatch.setenv("TOKENYARD_ENGINE", "scripted")
    assert not serves_embedded([]) and serve_settings(["--engine=embedded"]).engine == "embedded"
    monkeypatch.setenv("TOKENYARD_PORT", "abc")
    with pytest.raises(LaunchError, match="TOKENYARD_PORT=abc"):
        serve_settings([])


def test_a_launcher_refuses_a_bad_serve_setting_before_starting_a_server(monkeypatch, capsys):
    from tokenyard.launchers import common

    monkeypatch.setattr(common.subprocess, "Popen", lambda *a, **k: pytest.fail("a server was started"))
    monkeypatch.setenv("TOKENYARD_URL", "http://127.0.0.1:9")
    # The client is looked for first (a missing one is said before any server starts too).
    monkeypatch.setenv("TOKENYARD_CLAUDE_BIN", "/bin/true")
    assert cli.main(["claude", "--serve-arg=--max-concurrency=many", "-p", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-concurrency" in err and "integer" in err, err
    assert cli.main(["claude", "--serve-arg=--max-concurrency=0", "-p", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-concurrency" in err and "at least 1" in err, err


def test_no_command_takes_a_number_without_a_range():
    """Every number flag of every command refuses what it cannot use (a serve
    setting's range, or `whole_number`'s), never a bare `int`/`float`."""
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        for action in command._actions:
            assert action.type not in (int, float), f"tokenyard {name} {action.option_strings[0]}: no range"
