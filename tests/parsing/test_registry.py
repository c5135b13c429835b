"""Every parser name users type resolves: ours, their kebab/squashed spellings, and
vLLM's, SGLang's and Dynamo's registry names; plugins add formats from outside."""

import io
import json
import sys

import pytest

from tokenyard import cli
from tokenyard.families.peer_names import PEER_REASONING_NAMES, PEER_TOOL_NAMES, PEERS
from tokenyard.parsing.reasoning.parser import canonical_reasoning_name, reasoning_format, reasoning_parser_names
from tokenyard.parsing.registry import (
    HARMONY_TOOL_NAMES,
    UnknownParserError,
    check_tool_parser_name,
    tool_parser_class,
    tool_parser_names,
)
from tokenyard.parsing.splitter import OutputSplitter

from .support import WEATHER, parse, splitter_factory, summary


def peer_cases(tables):
    return [(peer, name, ours) for peer in PEERS for name, ours in sorted(tables[peer].items())]


@pytest.mark.parametrize("peer,name,ours", peer_cases(PEER_TOOL_NAMES))
def test_peer_tool_names(peer, name, ours):
    if ours is not None and ours in tool_parser_names():
        got = check_tool_parser_name(name)
        assert got == ("harmony" if ours in HARMONY_TOOL_NAMES else tool_parser_class(ours).name)
        return
    # Not parsed here (yet): a clear error that says so and how to plug one in.
    with pytest.raises(UnknownParserError, match="does not parse yet.*--tool-parser-plugin"):
        check_tool_parser_name(name)


@pytest.mark.parametrize("peer,name,ours", peer_cases(PEER_REASONING_NAMES))
def test_peer_reasoning_names(peer, name, ours):
    if ours is not None and ours in reasoning_parser_names():
        got = canonical_reasoning_name(name)
        assert got == ours or reasoning_format(got) == reasoning_format(ours)  # ours, or an alias of it
        return
    with pytest.raises(UnknownParserError, match="does not parse yet.*--reasoning-parser-plugin"):
        canonical_reasoning_name(name)


def test_names_the_brief_lists_build_a_splitter():
    for reasoning, tool in [
        ("openai_gptoss", "openai"),
        ("gpt-oss", "gpt-oss"),
        ("minimax_m2_append_think", "minimax-m2"),
        ("nemotron_v3", "nemotron_nano"),
        ("kimi_k2", "kimi_k2"),
        ("deepseek_v31", "deepseek_v31"),
        ("deepseek_v32", "deepseek_v32"),
        ("deepseek-v4", "deepseek-v4"),
        ("gemma4", "gemma-4"),
        ("minimax-m3", "minimax-m3"),
        ("seed_oss", "seed_oss"),
        ("step3p5", "step3p5"),
        (None, "granite4"),
        # Dynamo's own spellings.
        ("minimax_m3_nom", "minimax-m3-nom"),
        ("kimi-k3", "kimi-k3"),
        ("inkling", "inkling"),
        ("deepseekv4", "deepseekv4"),
        ("gemma-4", "gemma-4"),
        ("gpt_oss", "harmony_text"),
        ("nemotron_v3", "default"),
    ]:
        OutputSplitter(reasoning, tool)


def test_dynamo_names_build_the_config_they_name():
    """Each Dynamo name resolves to the parser that reads the markers its config
    (`tool_calling/config.rs`, `reasoning/mod.rs`) names."""
    assert check_tool_parser_name("minimax_m3_nom") == "minimax_m3"  # `]<]minimax[>[<tool_call>`
    assert check_tool_parser_name("kimi-k3") == "kimi_k3"  # `<|open|>tools<|sep|>`
    assert check_tool_parser_name("inkling") == "inkling"  # `<|content_invoke_tool_json|>`
    assert check_tool_parser_name("default") == "generic_json"  # bare, `<TOOLCALL>`, `<|python_tag|>`
    assert reasoning_format("minimax-m3-nom").start == ("<mm:think>",)
    assert reasoning_format("kimi-k3").start == ("<|open|>think<|sep|>",)
    # Dynamo reads V3.x thinking as R1 does: reasoning from the first token.
    assert reasoning_format("deepseek_v3_2") == reasoning_format("deepseek_r1")
    assert reasoning_format("deepseek_v3_2").force


def test_dynamo_default_reads_its_fallback_shapes():
    make = splitter_factory(None, "default")
    for text in (
        '{"name": "hello", "parameters": {"x": 1}}',
        '[{"name": "hello", "arguments": {"x": 1}}]',
        'Hi. <TOOLCALL>[{"name": "hello", "arguments": {"x": 1}}]</TOOLCALL>',
        'Hi. <|python_tag|>{"name": "hello", "arguments": {"x": 1}}',
    ):
        assert [s for s in summary(parse(make, text)) if s[0] == "call"] == [("call", "hello", {"x": 1})], text


def test_peers_agree_where_they_share_a_name():
    for tables in (PEER_TOOL_NAMES, PEER_REASONING_NAMES):
        meanings: dict[str, set] = {}
        for peer in PEERS:
            for name, ours in tables[peer].items():
                meanings.setdefault(name, set()).add(ours)
        assert {n: m for n, m in meanings.items() if len(m) > 1} == {}


def test_our_own_names_resolve_to_their_format():
    # Every turn resolves its parsers' names, so ours take a shortcut: an alias still
    # becomes its format's own name, and the same name spelled otherwise still resolves.
    for name in reasoning_parser_names():
        assert canonical_reasoning_name(name) == name == canonical_reasoning_name(f" {name.upper()} ")
    for name in tool_parser_names():
        own = "harmony" if name in HARMONY_TOOL_NAMES else tool_parser_class(name).name
        assert check_tool_parser_name(name) == own == check_tool_parser_name(name.upper())


def test_kebab_dotted_and_cased_spellings():
    assert check_tool_parser_name("Qwen3-Coder") == "qwen3_coder"
    assert check_tool_parser_name("deepseek-v3.1") == "deepseek_v3_1"
    assert check_tool_parser_name(" GEMMA-4 ") == "gemma4"
    assert canonical_reasoning_name("DeepSeek-R1") == "deepseek_r1"
    with pytest.raises(UnknownParserError, match="unknown tool-call parser 'qwen9'"):
        check_tool_parser_name("qwen9")


def test_a_peer_name_parses_like_ours():
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_call>'
    assert summary(parse(splitter_factory("qwen3", "qwen25", [WEATHER]), text)) == [
        ("call", "get_weather", {"city": "Tokyo", "days": 3})
    ]


PLUGIN = '''
from tokenyard.families.reasoning import ReasoningFormat
from tokenyard.parsing.tools.hermes import HermesToolParser


class PipeCalls(HermesToolParser):
    """A format from outside the tree: hermes JSON calls, a name of their own."""

    name = "pipe_calls"
    aliases = ("pipe-calls-v1",)


class PipeThinking:
    name = "pipe_thinking"
    start = ("<|reason|>",)
    end = ("<|/reason|>",)


AS_INSTANCE = ReasoningFormat("pipe_instance", ("[[",), ("]]",))
'''


@pytest.fixture
def own_plugins(monkeypatch):
    """Plugins a test loads stay the test's: later tests see the tree's formats only."""
    monkeypatch.setattr("tokenyard.parsing.registry._PLUGIN_TOOLS", {})
    monkeypatch.setattr("tokenyard.parsing.reasoning.parser._PLUGIN_FORMATS", {})


def run_cli(argv, stdin, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(argv)
    return code, capsys.readouterr()


def test_plugins_load_from_a_module(tmp_path, monkeypatch, capsys, own_plugins):
    (tmp_path / "my_parsers_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_weather", "parameters": WEATHER.parameters}]))
    raw = '<|reason|>plan<|/reason|>Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    code, out = run_cli(
        [
            "parse",
            "--tool-parser-plugin",
            "my_parsers_plugin:PipeCalls",
            "--reasoning-parser-plugin",
            "my_parsers_plugin:PipeThinking",
            "--tool-call-parser",
            "pipe-calls-v1",
            "--reasoning-parser",
            "pipe_thinking",
            "--tools",
            str(tools),
            "--merge",
        ],
        raw,
        monkeypatch,
        capsys,
    )
    assert code == 0, out.err
    events = [json.loads(line) for line in out.out.splitlines()]
    assert [(e["type"], e.get("text") or e.get("name")) for e in events if e["type"] != "Marker"][:3] == [
        ("ReasoningDelta", "plan"),
        ("TextDelta", "Sure."),
        ("ToolCallStart", "get_weather"),
    ]
    assert "pipe_calls" in tool_parser_names() and "pipe_thinking" in reasoning_parser_names()
    code, out = run_cli(
        ["parse", "--reasoning-parser-plugin", "my_parsers_plugin:AS_INSTANCE", "--reasoning-parser", "pipe_instance"],
        "[[a]]b",
        monkeypatch,
        capsys,
    )
    assert code == 0 and '"ReasoningDelta", "text": "a"' in out.out


def test_bad_plugins_are_clear_errors(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_bad_plugin.py").write_text("class NotAParser:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec, message in [
        ("my_bad_plugin", "expected module:Class"),
        ("no_such_module_xyz:Cls", "cannot import"),
        ("my_bad_plugin:Missing", "has no 'Missing'"),
        ("my_bad_plugin:NotAParser", "not a tokenyard.parsing.tools.base.ToolParser subclass"),
    ]:
        code, out = run_cli(["parse", "--tool-parser-plugin", spec, "--list"], "", monkeypatch, capsys)
        assert code == 2 and message in out.err, out.err


def test_list_shows_where_peer_names_map(monkeypatch, capsys):
    code, out = run_cli(["parse", "--list"], "", monkeypatch, capsys)
    assert code == 0
    lines = out.out.splitlines()
    assert any(line.startswith("vllm tool-call names:") and "qwen3_xml=qwen3_coder" in line for line in lines)
    assert any(
        line.startswith("sglang reasoning names:") and "minimax-append-think=minimax_append_think" in line
        for line in lines
    )
    assert any(line.startswith("dynamo tool-call names:") and "gemma-4=gemma4" in line for line in lines)
    assert any(line.startswith("dynamo tool-call names:") and "default=generic_json" in line for line in lines)
    assert any(line.startswith("dynamo reasoning names:") and "minimax_m3_nom=minimax_m3" in line for line in lines)
    assert any("cohere_command4=cohere_command4" in line for line in lines)
