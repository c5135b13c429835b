"""Server-side tool search: deferred tools stay out of the tools section, are listed
by name, and are defined inside the tool result that references them, so the
prompt before the search is untouched (prefix stability across the search) and
the discovered tool is declared from then on (parsed and typed by its schema)."""

from __future__ import annotations

import json

import pytest

from tokenyard.conversation import (
    Conversation,
    Message,
    Reasoning,
    Text,
    ThinkingControl,
    ToolCall,
    ToolReference,
    ToolResult,
    ToolSpec,
)
from tokenyard.events import ToolCallReady
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds
from tokenyard.prompting.deferred_tools import LISTING_HEADING, deferred_listing, functions_block

from .test_prefix_stability import NOW, SYSTEM, model_output, parse_output, setup_family

BASH = ToolSpec(
    name="Bash",
    description="Run a shell command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
SEARCH = ToolSpec(
    name="ToolSearch",
    description="Fetches full schema definitions for deferred tools so they can be called.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "max_results": {"type": "number"}},
        "required": ["query", "max_results"],
    },
)
PLACEHOLDER = ToolSpec(name="DeferredToolPlaceholder", description="Never call this tool.", deferred=True)
LIST_DIR = ToolSpec(
    name="mcp__fs__list_directory",
    description="List the entries of a directory.\nSecond line of detail.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}},
        "required": ["path", "depth"],
    },
    deferred=True,
)
FAMILIES = ["qwen3", "qwen3-coder", "qwen3.5", "glm-4.7", "deepseek-v3.1", "deepseek-v4", "gpt-oss", "kimi-k2"]


def session(tools, messages) -> Conversation:
    return Conversation(
        model="m", system=[Text(text=SYSTEM)], messages=messages, tools=tools, thinking=ThinkingControl(mode="adaptive")
    )


def test_definitions_use_one_fixed_text_form():
    block = functions_block(["mcp__fs__list_directory", "unknown_tool"], [LIST_DIR])
    lines = block.split("\n")
    assert lines[0] == "<functions>" and lines[-1] == "</functions>"
    assert json.loads(lines[1].removeprefix("<function>").removesuffix("</function>")) == {
        "description": LIST_DIR.description,
        "name": LIST_DIR.name,
        "parameters": LIST_DIR.parameters,
    }
    assert lines[2] == '<function>{"name": "unknown_tool"}</function>'


def test_listing_names_the_deferred_tools_no_search_returned_yet():
    ask = Message(role="user", parts=[Text(text="list it")])
    listing = deferred_listing(session([BASH, PLACEHOLDER, LIST_DIR], [ask]))
    assert listing.startswith(LISTING_HEADING)
    assert "- mcp__fs__list_directory: List the entries of a directory.\n" not in listing  # first line only
    assert listing.endswith("- mcp__fs__list_directory: List the entries of a directory.")
    found = Message(role="user", parts=[ToolResult(tool_call_id="c", content=[ToolReference(tool_name=LIST_DIR.name)])])
    assert "mcp__fs__list_directory" not in deferred_listing(session([BASH, PLACEHOLDER, LIST_DIR], [ask, found]))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_search_appends_the_definition_and_keeps_the_prefix(family):
    tokenizer, _, profile, renderer = setup_family(family)
    question = Message(role="user", parts=[Text(text="List the project directory.")])
    # Before the search Claude Code sends only the placeholder as deferred.
    before_search = session([BASH, SEARCH, PLACEHOLDER], [question])
    prompt = renderer.render(before_search, now=NOW)
    assert "mcp__fs__list_directory" not in prompt.text
    assert "Never call this tool" in prompt.text  # a deferred tool is listed, not declared
    planned = [
        Reasoning(text="The directory tool is deferred; search for it."),
        ToolCall(id="call_0", name="ToolSearch", arguments='{"query": "select:mcp__fs__list_directory"}'),
    ]
    raw = model_output(renderer, before_search, planned)
    stop = next((s for s in profile.stop if raw.endswith(s)), "")
    message = parse_output(profile, raw, prompt, stop)
    message = Message(
        role="assistant",
        parts=[p.model_copy(update={"id": "call_0"}) if isinstance(p, ToolCall) else p for p in message.parts],
    )
    result = ToolResult(tool_call_id="call_0", content=[ToolReference(tool_name=LIST_DIR.name)])
    # After it, the discovered tool joins the client's tools list (deferred) in its sorted place.
    after_search = session(
        [BASH, PLACEHOLDER, SEARCH, LIST_DIR], [question, message, Message(role="user", parts=[result])]
    )
    following = renderer.render(after_search, now=NOW)
    before = tokenizer.encode(prompt.text + raw)
    matched = 0
    while matched < min(len(before), len(following.token_ids)) and before[matched] == following.token_ids[matched]:
        matched += 1
    assert matched == len(before), tokenizer.decode(following.token_ids[matched - 5 : matched + 15])
    appended = following.text[len(prompt.text + raw) - 1 :]
    assert '"name": "mcp__fs__list_directory"' in appended or '\\"name\\": \\"mcp__fs__list_directory\\"' in appended
    assert "mcp__fs__list_directory" not in following.text[: len(prompt.text)]


def test_a_discovered_tool_is_parsed_and_typed_by_its_schema():
    splitter = OutputSplitter(None, "qwen3_coder", tools=[BASH, SEARCH, LIST_DIR], call_ids=CallIds(nonce="t"))
    raw = (
        "<tool_call>\n<function=mcp__fs__list_directory>\n<parameter=path>\n/src\n</parameter>\n"
        "<parameter=depth>\n2\n</parameter>\n</function>\n</tool_call>"
    )
    events = splitter.feed(raw) + splitter.finish()
    [ready] = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready.name == "mcp__fs__list_directory" and json.loads(ready.arguments) == {"path": "/src", "depth": 2}
