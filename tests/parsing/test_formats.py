"""The format table (parsing/tools/formats.py): each row is a parser under its name
and aliases, configured by its row alone; an engine's config also configures a
plugin."""

from dataclasses import fields, replace

import pytest

from tokenyard.parsing.registry import check_tool_parser_name, register_tool_parser, tool_parser_class
from tokenyard.parsing.tools.formats import FORMATS, Format, parser_class
from tokenyard.parsing.tools.hermes import HermesToolParser
from tokenyard.parsing.tools.invoke_xml import InvokeToolParser
from tokenyard.parsing.tools.json_call_list import JsonCallListConfig

from .support import WEATHER, parse, splitter_factory, summary


@pytest.mark.parametrize("row", FORMATS, ids=lambda row: row.name)
def test_a_row_is_a_parser_under_its_names(row):
    cls = tool_parser_class(row.name)
    assert issubclass(cls, row.engine) and cls.config is row.config
    for name in (row.name, *row.aliases):
        assert check_tool_parser_name(name) == row.name
    for f in fields(row.config):  # the config alone sets the parser's attributes
        assert getattr(cls, f.name) == getattr(row.config, f.name), f.name


def test_rows_have_distinct_names():
    names = [name for row in FORMATS for name in (row.name, *row.aliases)]
    assert len(names) == len(set(names))


def test_a_config_of_another_engine_is_refused():
    with pytest.raises(TypeError, match="does not configure"):
        parser_class(Format("mixed", (), InvokeToolParser, JsonCallListConfig(start_markers=("<x>",))))


class PipeTags(HermesToolParser):
    """A plugin that is a config only: hermes calls under tags of its own."""

    name = "pipe_tags"
    config = replace(HermesToolParser.config, start_markers=("<|call|>",), close_tag="<|/call|>")


def test_a_plugin_configures_an_engine(monkeypatch):
    monkeypatch.setattr("tokenyard.parsing.registry._PLUGIN_TOOLS", {})
    assert register_tool_parser(PipeTags) == "pipe_tags"
    text = 'Sure.<|call|>{"name": "get_weather", "arguments": {"city": "Oslo"}}<|/call|>'
    assert summary(parse(splitter_factory(None, "pipe_tags", [WEATHER]), text)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "Oslo"}),
    ]
