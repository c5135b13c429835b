"""Completeness of the family catalog: every record has every fact its family
needs, checked over all records, so a new record missing one fails here instead of
falling back silently.

- its parsers exist;
- a family with tools can be forced to call (`tool_choice` required or named): its
  format has a call opener for engines without guided decoding;
- a thinking family honours `thinking.budget_tokens`: the pipeline knows the marker
  that ends its reasoning block, and the budget it sends the engine ends with it;
- every parser is reachable: some record selects it, or it is listed as name-only
  (selected by `--tool-call-parser` / `--reasoning-parser` alone) with the reason.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from tokenyard.conversation import Conversation, Message, Text, ThinkingControl, ToolChoice, ToolSpec
from tokenyard.engines.base import ReasoningBudgetTracker
from tokenyard.families.call_syntax import call_syntax
from tokenyard.families.catalog import BY_NAME, DERIVED, FAMILIES
from tokenyard.families.reasoning import REASONING_BY_NAME, REASONING_FORMATS
from tokenyard.parsing.reasoning.parser import HARMONY_REASONING_NAMES
from tokenyard.parsing.registry import check_tool_parser_name, tool_parser_names
from tokenyard.prompting.profiles import PROFILES
from tokenyard.server.pipeline import Pipeline

NAMES = [family.name for family in FAMILIES]
TOOL_FAMILIES = [f.name for f in FAMILIES if f.tool_format]
THINKING_FAMILIES = [f.name for f in FAMILIES if f.reasoning]

# Parsers no record selects: users name them (as vLLM's, SGLang's and Dynamo's
# users do) for checkpoints whose family the catalog does not detect.
# Formats a forced call can not be prefilled in: the generation prompt already ends
# inside the call's header, whose rest is the model's own.
UNSTEERABLE = {
    "functionary_v3_2": "the prompt ends with `>>>`: the recipient (a tool or `all`) is the model's first word",
    "solar_open": "each call carries an id the model writes (`<|tool_call:begin|>ID<|tool_call:name|>`)",
}
NAME_ONLY_TOOL_PARSERS = {
    "generic_json": "any model told to answer with a bare JSON call; nothing in a template says so",
    "granite_20b_fc": "Granite 20B FunctionCalling (2024); no template in the fixtures to detect it by",
    "solar_open2": "Solar Open 2; its template is not public",
}
NAME_ONLY_REASONING = {
    "granite": "Granite 3.2's prose markers, switched on by a request flag, not by the family",
    "kimi": "Kimi-VL's ◁think▷ markers; the catalog has no Kimi-VL record",
    "minimax_append_think": "vLLM's variant that keeps MiniMax M2's reasoning in content",
    "solar_open2": "Solar Open 2's think channel; its template is not public",
}


def test_names_are_unique_and_profiles_are_the_records():
    assert len(set(NAMES)) == len(NAMES) == len(BY_NAME)
    assert sorted(PROFILES) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_a_record_names_parsers_that_exist(name):
    family = BY_NAME[name]
    if family.tool_format:
        check_tool_parser_name(family.tool_format)
    if family.reasoning:
        assert family.reasoning in REASONING_BY_NAME or family.reasoning in HARMONY_REASONING_NAMES
    # Replay markers are stated only where they differ from the syntax's own.
    syntax = REASONING_BY_NAME.get(family.reasoning or "")
    if syntax and family.replay_markers != DERIVED:
        assert family.replay_markers != (syntax.start[0], syntax.end[0]), "state nothing: it derives"


@pytest.mark.parametrize("name", TOOL_FAMILIES)
def test_forced_tool_choice_steers_every_family_with_tools(name):
    fmt = check_tool_parser_name(BY_NAME[name].tool_format or "")
    if fmt in UNSTEERABLE:
        assert call_syntax(fmt) is None
        pytest.skip(UNSTEERABLE[fmt])
    syntax = call_syntax(fmt)
    assert syntax is not None, f"{name}: no call opener for tool_choice required/named"
    pipeline = _pipeline(name)
    for choice in (ToolChoice(mode="required"), ToolChoice(mode="named", name="get_weather")):
        prefill = pipeline._prefill_for(_conversation(tool_choice=choice))
        assert prefill is not None
        text = prefill(False, False)
        assert text.endswith(syntax.opener(choice.name, 0)) and text.startswith(syntax.trigger)


@pytest.mark.parametrize("name", THINKING_FAMILIES)
def test_budget_tokens_is_enforced_for_every_thinking_family(name):
    pipeline = _pipeline(name)
    prompt = SimpleNamespace(thinking_enabled=True, prefill="", opened_reasoning=True)
    budget = pipeline._reasoning_budget(
        _conversation(thinking=ThinkingControl(mode="enabled", budget_tokens=8)), prompt
    )
    assert budget is not None, f"{name}: budget_tokens would be ignored"
    end = "".join(map(chr, budget.end_token_ids))
    assert budget.tokens == 8 and budget.inside
    reasoning = BY_NAME[name].reasoning
    # gpt-oss's analysis message ends as any harmony message does.
    ends = ("<|end|>",) if reasoning in HARMONY_REASONING_NAMES else REASONING_BY_NAME[reasoning].end
    assert any(end.startswith(marker) for marker in ends)
    # Where the model opens the block itself, the engine sees it open and counts.
    tracker = ReasoningBudgetTracker(replace(budget, inside=False))
    for token in [*budget.start_token_ids, *map(ord, "x" * 8)]:
        assert not tracker.exhausted
        tracker.push(token)
    assert tracker.exhausted


def test_every_parser_is_reachable_from_a_record_or_documented_name_only():
    selected = {check_tool_parser_name(f.tool_format) for f in FAMILIES if f.tool_format}
    ours = {check_tool_parser_name(n) for n in tool_parser_names()}
    assert ours - selected == set(NAME_ONLY_TOOL_PARSERS)
    thinking = {REASONING_BY_NAME[f.reasoning].name for f in FAMILIES if f.reasoning in REASONING_BY_NAME}
    assert {fmt.name for fmt in REASONING_FORMATS} - thinking == set(NAME_ONLY_REASONING)


def _pipeline(name: str) -> Pipeline:
    # The real pipeline over the family's profile; a tokenizer that spells each
    # character as its code point, so token ids read back as the marker text.
    model = SimpleNamespace(
        profile=PROFILES[name],
        tokenizer=SimpleNamespace(encode=lambda text: [ord(c) for c in text]),
        stop_token_ids=lambda: [],
        control_tokens=lambda: {},
        stop_texts=lambda: [],
    )
    return Pipeline(model, SimpleNamespace(info=lambda: SimpleNamespace(guided_decoding=False)))  # type: ignore[arg-type]


def _conversation(**fields) -> Conversation:
    return Conversation(
        model="test/model",
        messages=[Message(role="user", parts=[Text(text="Weather in Paris?")])],
        tools=[ToolSpec(name="get_weather", parameters={"type": "object", "properties": {}})],
        **fields,
    )
