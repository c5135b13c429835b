"""Assistant turns rendered by a model's real chat template, with transformers'
renderer (HF semantics, independent of tokenyard's prompt path), cut to what the
model itself would write: the text after the generation prompt, up to its stop
(with the reasoning block a template's history render drops put back where the
generation prompt opened it).

`render_turn` tries the richest turn first (reasoning, text, two calls) and steps
down only as far as the template requires (one call, string arguments, no text
beside calls, no reasoning), so each template is held to all it can render.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import product
from typing import Any

import jinja2
import pytest

from ..fixtures import fixtures_root

WEATHER_SCHEMA = {
    "type": "object",
    # Described parameters: Command R+'s template prints each one's description.
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "description": "Days ahead"},
    },
    "required": ["city"],
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather forecast", "parameters": WEATHER_SCHEMA},
    }
]
CALLS = (("get_weather", {"city": "Paris", "days": 3}), ("get_weather", {"city": "東京"}))
REASONING = "The user wants two forecasts."
TEXT = "Let me check both cities."
ANSWER = "Paris: sunny, 21 °C."
# Stands for the tokenizer's EOS: the engine stops at it and never passes it on.
EOS = "<<EOS>>"
# Every spelling of "thinking on" the templates read; a template ignores the rest.
THINKING_ON = {"enable_thinking": True, "thinking": True, "reasoning_effort": "high", "thinking_mode": "enabled"}

TEMPLATE_DIR = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"


@cache
def llama_cpp_templates() -> dict[str, str]:
    """Every `*.jinja` in llama.cpp's models/templates, by file name."""
    sdist = fixtures_root() / "downloads" / "llama_cpp_python-0.3.36.tar.gz"
    if not sdist.exists():
        pytest.skip("llama-cpp-python sdist not fetched; run `python scripts/build_fixtures.py`")
    found: dict[str, str] = {}
    with tarfile.open(sdist) as archive:
        for info in archive:
            if info.name.startswith(TEMPLATE_DIR) and info.name.endswith(".jinja"):
                member = archive.extractfile(info)
                assert member is not None
                found[info.name.removeprefix(TEMPLATE_DIR)] = member.read().decode("utf-8")
    return found


ReasoningBlock = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Turn:
    prompt: str  # the generation prompt, as the engine is given it
    output: str  # what the model writes after it, its stop token cut off
    calls: tuple[tuple[str, dict[str, Any]], ...]
    reasoning: str
    text: str


def _render(template: str, messages: list[dict[str, Any]], generation: bool, kwargs: dict[str, Any]) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        [messages],
        tools=TOOLS,
        chat_template=template,
        add_generation_prompt=generation,
        bos_token="<s>",
        eos_token=EOS,
        # FireFunction v2's template reads the tools as a `functions` JSON string
        # and the date as `datetime` (Fireworks' serving contract), not `tools`.
        functions=json.dumps([tool["function"] for tool in TOOLS], indent=4),
        datetime="2026-01-01",
        **kwargs,
    )
    return rendered[0]


def _variants(with_calls: bool, max_calls: int) -> Iterator[tuple[int, bool, bool | None, bool, bool, dict[str, Any]]]:
    """(calls, string arguments, text, reasoning, system, kwargs), richest first;
    text None: calls with `content: null` (some templates render calls only then)."""
    for reasoning, kwargs, calls, text, string_args, system in product(
        (True, False),
        (THINKING_ON, {}),
        range(max_calls, 0, -1) if with_calls else (0,),
        (True, False, None),
        (False, True),
        (True, False),
    ):
        if (with_calls or text) and (calls or text is not None):
            yield calls, string_args, text, reasoning, system, kwargs


def _inserted_turn(prompt: str, history: str, full: str) -> str | None:
    """The turn `full` inserts into `history` (the conversation before it, rendered
    without a generation prompt), less the header the generation prompt adds to
    `history`: a template that closes every render with instructions (Command R+)
    puts the finished turn before them, not at the end."""
    if not prompt.startswith(history):
        return None
    header = prompt[len(history) :]
    shared = next(i for i, (a, b) in enumerate(zip(f"{history}\0", f"{full}\1", strict=False)) if a != b)
    for at in range(shared, max(shared - len(header), 0) - 1, -1):
        end = len(full) - (len(history) - at)
        if full.endswith(history[at:]) and full[at:end].startswith(header):
            return full[at + len(header) : end]
    return None


def _model_output(template: str, prompt: str, full: str, block: ReasoningBlock, reasoning: bool) -> str | None:
    """What the model writes after `prompt`, given the template's render `full` of
    the whole conversation; None where `full` does not continue `prompt`.

    A generation prompt may open a reasoning block that the template's render of
    the finished turn leaves out (it shows the turn as history): the model wrote
    on from the opener, so its output is the render after the opener, with the
    reasoning the history drops (and the end marker the template strips, which
    its text must name) put back in front."""
    starts, ends = block
    rest = full[len(prompt) :] if full.startswith(prompt) else None
    opened = False
    for opener in starts:
        at = prompt.rfind(opener)
        if at < 0 or prompt[at + len(opener) :].strip():
            continue
        opened = True
        if rest is None and full.startswith(prompt[:at]):
            rest = full[at:]  # the render leaves out the opener (and maybe the block)
    if rest is None or not opened or REASONING in rest or not ends or ends[0] in rest or ends[0] not in template:
        return rest
    return f"{REASONING if reasoning else ''}\n{ends[0]}\n\n{rest}"


def render_turn(
    template: str, stop: tuple[str, ...], with_calls: bool, max_calls: int = 2, block: ReasoningBlock = ((), ())
) -> Turn | None:
    """The richest turn the template renders as a clean continuation of its own
    generation prompt, or None when it renders none (it refuses every variant).
    `block`: the family's reasoning start and end markers."""
    for n, string_args, text, reasoning, system, kwargs in _variants(with_calls, max_calls):
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": "You are a helpful assistant."}] if system else []
        )
        messages.append({"role": "user", "content": "Weather in Paris and Tokyo?"})
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": (TEXT if n else ANSWER) if text else None if text is None else "",
        }
        if reasoning:
            assistant["reasoning_content"] = REASONING
        if n:
            assistant["tool_calls"] = [
                {
                    "id": f"call{i:05d}",  # Mistral's templates want 9 alphanumerics
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(args, ensure_ascii=False) if string_args else args,
                    },
                }
                for i, (name, args) in enumerate(CALLS[:n])
            ]
        try:
            prompt = _render(template, messages, True, kwargs)
            full = _render(template, [*messages, assistant], False, kwargs)
            output = _model_output(template, prompt, full, block, reasoning)
            if output is None:
                output = _inserted_turn(prompt, _render(template, messages, False, kwargs), full)
        except (jinja2.TemplateError, TypeError, ValueError):
            continue
        if output is None:
            continue  # the generation prompt is not the turn's beginning here
        ends = [i for i in (output.find(s) for s in (*stop, EOS)) if i >= 0]
        output = output[: min(ends)] if ends else output
        shown_calls = tuple(CALLS[:n]) if n and "get_weather" in output else ()
        if n and not shown_calls:
            continue  # the template drops the calls: try a shape it shows
        body = assistant["content"]
        return Turn(
            prompt,
            output,
            shown_calls,
            REASONING if reasoning and REASONING in output else "",
            body if body and body in output else "",
        )
    return None
