"""The formats of Solar Open 100B, Apriel 1.5/1.6, Command R+, Functionary v3.1/v3.2
and FireFunction v2, read from what their real chat templates (llama.cpp's
models/templates, in the llama-cpp-python sdist the fixtures fetch) write for an
assistant turn: rendered with jinja2 under Hugging Face's semantics (not
tokenyard's prompt path), then parsed back whole and split at every character
boundary, and cut and broken where a model breaks them."""

from __future__ import annotations

import datetime
import json
import tarfile
from dataclasses import dataclass
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokenyard.conversation import ToolSpec
from tokenyard.events import ToolCallReady

from ..fixtures import fixtures_root
from .support import parse, splitter_factory, summary

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city."},
            "days": {"type": "integer", "description": "How many days."},
        },
        "required": ["city"],
    },
)
SEARCH = ToolSpec(
    name="search",
    description="Search the web.",
    parameters={"type": "object", "properties": {"query": {"type": "string", "description": "What to find."}}},
)
CALLS = [("get_weather", {"city": '東京 "centre"', "days": 3}), ("search", {"query": "</function> >>>all"})]


@dataclass(frozen=True)
class Family:
    template: str
    tool: str
    reasoning: str | None
    # What the template writes after the turn that the engine stops on (not parsed).
    turn_end: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any], ...] = ()
    # The template concatenates `arguments` as the OpenAI wire's JSON string; the
    # others take Hugging Face's dict (and `tojson` it).
    string_arguments: bool = False
    # Where the template puts more after the assistant's turn than its end (Command
    # R+ repeats its instructions last): the turn runs from after `opener` to `closer`.
    opener: str = ""
    closer: str = ""


FAMILIES = {
    "solar_open": Family("upstage-Solar-Open-100B.jinja", "solar_open", "solar_open"),
    "apriel_1_5": Family("unsloth-Apriel-1.5.jinja", "apriel", None, ("</s>", "\n<|end|>\n")),
    "apriel_1_6": Family("Apriel-1.6-15b-Thinker-fixed.jinja", "apriel", "apriel", (), (("add_thoughts", True),)),
    "command_r_plus": Family(
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        "cohere_command_r",
        None,
        opener="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        closer="<|START_OF_TURN_TOKEN|>",
    ),
    "functionary_v3_1": Family("meetkai-functionary-medium-v3.1.jinja", "functionary_v3_1", None, ("<|eom_id|>",)),
    "functionary_v3_2": Family(
        "meetkai-functionary-medium-v3.2.jinja", "functionary_v3_2", None, ("<|eot_id|>",), string_arguments=True
    ),
    "firefunction_v2": Family(
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        "firefunction_v2",
        None,
        # The template writes the generation prompt whether asked or not.
        ("<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"),
        (("functions", ""), ("datetime", "")),
    ),
}


def _template(name: str) -> str:
    sdist = fixtures_root() / "downloads" / "llama_cpp_python-0.3.36.tar.gz"
    if not sdist.exists():
        pytest.skip("llama-cpp-python sdist not fetched; run `python scripts/build_fixtures.py`")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(f"llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/{name}")
        assert member is not None
        return member.read().decode("utf-8")


def _environment() -> jinja2.Environment:
    # Hugging Face's chat-template semantics (transformers' `_compile_jinja_template`).
    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, **_: Any) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.date(2026, 1, 1).strftime(fmt)
    return env


def _assistant_output(
    family: Family, content: str, calls: list[tuple[str, dict[str, Any]]], reasoning: str = "Weigh it."
) -> str:
    """What the model writes for one assistant turn: the template's rendering of it
    after the generation prompt, less the end-of-turn text the engine stops on."""
    template = _environment().from_string(_template(family.template))
    tools = [
        {"type": "function", "function": {"name": t.name, "description": "", "parameters": t.parameters}}
        for t in (WEATHER, SEARCH)
    ]
    user = {"role": "user", "content": "Weather in Tokyo?"}
    # Reasoning under both keys templates read (templates of families without
    # reasoning ignore them).
    assistant: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    assistant["reasoning"] = reasoning
    if calls:
        assistant["tool_calls"] = [
            {
                "id": f"a1b2c3d4e{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args) if family.string_arguments else args},
            }
            for n, (name, args) in enumerate(calls)
        ]
    common = {"tools": tools, "bos_token": "<s>", "eos_token": "</s>", **dict(family.extra)}
    prompt = template.render(messages=[user], add_generation_prompt=True, **common)
    turn = template.render(messages=[user, assistant], add_generation_prompt=False, **common)
    if family.opener:
        start = turn.index(family.opener) + len(family.opener)
        return turn[start : turn.index(family.closer, start)].rstrip("\n").removesuffix("<|END_OF_TURN_TOKEN|>")
    for reprompt in (prompt, prompt.rstrip("\n")):
        if turn.startswith(reprompt):
            output = turn[len(reprompt) :]
            break
    else:
        # The generation prompt opens a block the history spells otherwise: the turn
        # begins where the two renderings part.
        at = next(i for i, (a, b) in enumerate(zip(prompt, turn, strict=False)) if a != b)
        output = turn[at:]
    for end in family.turn_end:
        output = output.removesuffix(end)
    return output


def _expected_calls() -> list[tuple]:
    return [("call", name, args) for name, args in CALLS]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_real_templates_calls_parse_back_at_every_split(family):
    fam = FAMILIES[family]
    output = _assistant_output(fam, "Let me check.", CALLS)
    events = parse(splitter_factory(fam.reasoning, fam.tool, [WEATHER, SEARCH]), output)
    got = summary(events)
    assert [s for s in got if s[0] == "call"] == _expected_calls(), output
    if fam.reasoning:
        assert [s for s in got if s[0] == "reasoning"] == [("reasoning", "Weigh it.")], output
    assert "".join(s[1] for s in got if s[0] == "text").replace("\n", "").strip() in ("Let me check.", ""), output
    assert not [s for s in got if s[0] == "incomplete"]


@pytest.mark.parametrize("family", ["solar_open", "apriel_1_6", "command_r_plus", "functionary_v3_2"])
def test_a_plain_answer_is_content(family):
    fam = FAMILIES[family]
    output = _assistant_output(fam, "It is sunny.", [])
    events = parse(splitter_factory(fam.reasoning, fam.tool, [WEATHER, SEARCH]), output)
    assert [s for s in summary(events) if s[0] != "reasoning"] == [("text", "It is sunny.")], output
    assert [s for s in summary(events) if s[0] == "reasoning"] == (
        [("reasoning", "Weigh it.")] if fam.reasoning else []
    )


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_cut_or_broken_call_is_never_dispatched_and_keeps_its_text(family):
    fam = FAMILIES[family]
    output = _assistant_output(fam, "", [("get_weather", {"city": "Tokyo"})])
    cut = output[: output.index("Tokyo") + 2]
    events = parse(splitter_factory(fam.reasoning, fam.tool, [WEATHER]), cut)
    assert not [e for e in events if isinstance(e, ToolCallReady)]
    assert [s for s in summary(events) if s[0] == "incomplete"] == [("incomplete", "get_weather", "truncated")]
    broken = output.replace('"Tokyo"', "Tokyo")  # arguments that are no JSON
    events = parse(splitter_factory(fam.reasoning, fam.tool, [WEATHER]), broken)
    assert not [e for e in events if isinstance(e, ToolCallReady)]
    assert "Tokyo" in "".join(getattr(e, "raw", getattr(e, "text", "")) for e in events), (
        "the broken call's text is kept"
    )


def test_functionary_v3_2_prose_after_a_prompt_marker_is_text():
    make = splitter_factory(None, "functionary_v3_2", [WEATHER])
    text = "all\nIn Python:\n>>> print(1)\n1"
    assert summary(parse(make, text)) == [("text", "In Python:\n>>> print(1)\n1")]


def test_functionary_v3_1_markers_inside_a_value_are_the_values_text():
    make = splitter_factory(None, "functionary_v3_1", [SEARCH])
    text = '<function=search>{"query": "</function><function=x>"}</function>Done.'
    assert summary(parse(make, text)) == [("call", "search", {"query": "</function><function=x>"}), ("text", "Done.")]


def test_solar_open_keeps_the_models_call_id():
    make = splitter_factory("solar_open", "solar_open", [WEATHER])
    output = _assistant_output(FAMILIES["solar_open"], "", [("get_weather", {"city": "Tokyo"})])
    ready = [e for e in parse(make, output) if isinstance(e, ToolCallReady)]
    assert [r.id for r in ready] == ["a1b2c3d4e0"]


def test_command_r_plus_action_prose_is_text():
    make = splitter_factory(None, "cohere_command_r", [WEATHER])
    assert summary(parse(make, "Action: none needed.")) == [("text", "Action: none needed.")]
