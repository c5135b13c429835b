"""Fenced-call recovery (parsing/fenced_calls.py): a ```json fence holding a call to a
declared tool, at the very end of the output, becomes a call; every other fence
stays text. Every case is parsed split at every character boundary (support.parse),
with conservation and the call-event contract checked."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenyard.conversation import ToolSpec
from tokenyard.events import TextDelta, ToolCallReady, check_events

from .support import WEATHER, merge, parse, run_chunks, splitter_factory, summary

BASH = ToolSpec(
    name="Bash",
    description="Run a shell command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
TOOLS = [BASH, WEATHER]
CALL = '{"name": "Bash", "arguments": {"command": "ls -la"}}'
FENCE = f"```json\n{CALL}\n```"
recovering = splitter_factory(None, "hermes", TOOLS, recover_fenced_calls=True)


def call(name="Bash", **arguments):
    return ("call", name, arguments or {"command": "ls -la"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FENCE, [call()]),
        (FENCE + "\n", [call()]),
        (f"I'll list the files.\n{FENCE}\n\n", [("text", "I'll list the files."), call()]),
        (f"Let me check.\n\n```json  \n\n  {CALL}  \n  ```  \n", [("text", "Let me check."), call()]),
        (
            '```json\n{"arguments": {"city": "Oslo", "days": 2}, "name": "get_weather"}\n```',
            [call("get_weather", city="Oslo", days=2)],
        ),
        (
            '```json\n{\n  "name": "Bash",\n  "arguments": {\n    "command": "printf \'a\\\\nb\'"\n  }\n}\n```',
            [call(command="printf 'a\\nb'")],
        ),
        ('```json\n{"name": "Bash", "arguments": {}}\n```', [("call", "Bash", {})]),
    ],
)
def test_a_final_fenced_call_to_a_declared_tool_is_a_call(text, expected):
    assert summary(parse(recovering, text)) == expected


def test_the_recovered_call_keeps_its_exact_text():
    events = parse(recovering, f"Listing.\n{FENCE}\n")
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.raw == FENCE
    assert json.loads(ready.arguments) == {"command": "ls -la"}
    assert ready.declared


def test_a_raw_newline_in_an_argument_string_is_escaped():
    events = parse(recovering, '```json\n{"name": "Bash", "arguments": {"command": "echo a\necho b"}}\n```')
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.input() == {"command": "echo a\necho b"}


@pytest.mark.parametrize(
    "text",
    [
        # A model showing a call: text after the fence.
        f"To list files you would send:\n{FENCE}\nand the tool runs it.",
        f"{FENCE}\n\nThat is the call format.",
        f"{FENCE}.",
        # A fence in the middle of the answer.
        f"First:\n{FENCE}\nthen:\n```bash\nls\n```\n",
        # Undeclared tool, other keys, wrong shapes.
        '```json\n{"name": "Read", "arguments": {"path": "a"}}\n```',
        '```json\n{"name": "Bash", "arguments": {"command": "ls"}, "id": 1}\n```',
        '```json\n{"name": "Bash", "parameters": {"command": "ls"}}\n```',
        '```json\n{"name": "Bash", "arguments": "ls"}\n```',
        '```json\n{"name": "Bash"}\n```',
        '```json\n{"name": "Bash", "name": "Bash", "arguments": {}}\n```',
        '```json\n[{"name": "Bash", "arguments": {"command": "ls"}}]\n```',
        '```json\n{"type": "object", "properties": {}}\n```',
        # Invalid JSON.
        '```json\n{"name": "Bash", "arguments": {"command": ls}}\n```',
        '```json\n{"name": "Bash", "arguments": {"command": "ls"}\n```',
        '```json\n{"name": "Bash", "arguments": {"command": "ls"}}}\n```',
        # Not a json fence, or not opening a line, or never closed.
        FENCE.replace("```json", "```"),
        FENCE.replace("```json", "```jsonc"),
        FENCE.replace("```json", "```python"),
        f"see {FENCE}",
        FENCE[:-3],
        FENCE[:-1],
        f"{FENCE}`",
        f"{FENCE}json",
    ],
)
def test_everything_else_stays_text(text):
    assert summary(parse(recovering, text)) == [("text", text.strip())]


def test_a_fence_before_a_real_call_stays_text():
    real = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert summary(parse(recovering, f"{FENCE}\n{real}")) == [("text", FENCE), call("get_weather", city="Oslo")]


def test_a_real_call_then_a_final_fence_numbers_calls_in_order():
    real = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    events = parse(recovering, f"{real}\n{FENCE}")
    assert summary(events) == [call("get_weather", city="Oslo"), call()]
    assert [e.index for e in events if isinstance(e, ToolCallReady)] == [0, 1]


def test_only_the_fence_that_ends_the_output_is_recovered():
    text = f"For example:\n{FENCE.replace('ls -la', 'pwd')}\nNow for real:\n{FENCE}"
    assert summary(parse(recovering, text)) == [
        ("text", f"For example:\n{FENCE.replace('ls -la', 'pwd')}\nNow for real:"),
        call(),
    ]


def test_off_by_default_and_without_declared_tools():
    assert summary(parse(splitter_factory(None, "hermes", TOOLS), FENCE)) == [("text", FENCE)]
    no_tools = splitter_factory(None, "hermes", None, recover_fenced_calls=True)
    assert summary(parse(no_tools, FENCE)) == [("text", FENCE)]
    no_parser = splitter_factory(None, None, TOOLS, recover_fenced_calls=True)
    assert summary(parse(no_parser, f"ok\n{FENCE}")) == [("text", "ok"), call()]


def test_after_reasoning_a_final_fence_is_still_recovered():
    make = splitter_factory("qwen3", "hermes", TOOLS, recover_fenced_calls=True)
    assert summary(parse(make, f"<think>\nls it\n</think>\n\n{FENCE}")) == [("reasoning", "ls it"), call()]


def streamed_text(chunks: list[str]) -> str:
    """The text a client sees before the output ends."""
    splitter = recovering()
    return "".join(e.text for chunk in chunks for e in splitter.feed(chunk) if isinstance(e, TextDelta))


def test_text_is_held_only_while_it_can_still_be_a_final_call():
    # A possible call is held to the end...
    assert streamed_text(["Listing.\n", "```js", "on\n", CALL[:20], CALL[20:], "\n```\n"]) == "Listing."
    # ...but a fence that can not be one streams on as soon as that is clear.
    assert '```json\n{"type"' in streamed_text(["Schema:\n```json\n", '{"type"', ": 1"])
    assert '"name": "Read"' in streamed_text(['```json\n{"name": "Read"', ', "arguments": {}}'])
    assert "```python\n" in streamed_text(["```python\n", "print(1)"])
    assert "\nmore" in streamed_text([FENCE, "\nmore"])
    # Text before a line that may open a fence is never held.
    assert streamed_text(["No fence here ``", "` inline"]) == "No fence here ``` inline"
    assert streamed_text(["line\n", "``"]) == "line"  # the newline is held as block-edge whitespace


PIECES = [FENCE, CALL, "```json\n", "```", "\n", " ", "`", "{", "}", '"', "Bash", "name", "arguments", "text", ":", ","]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=5)), max_size=12).map("".join),
    cuts=st.lists(st.integers(0, 300), max_size=10),
)
def test_any_text_any_chunking_conserves_and_agrees(text, cuts):
    points = sorted({c % (len(text) + 1) for c in cuts})
    bounds = [0, *points, len(text)]
    chunks = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    events = run_chunks(recovering, chunks)
    check_events(events, text)
    assert merge(events) == merge(run_chunks(recovering, [text])), "the chunking changed the events"


def test_several_calls_in_one_final_fence_are_parallel_calls():
    """Qwen2.5-Coder writes parallel calls as objects one after another in one fence."""
    weather = '{\n  "name": "get_weather",\n  "arguments": {"city": "Oslo"}\n}'
    text = f"Both:\n```json\n{CALL}\n{weather}\n```\n"
    assert summary(parse(recovering, text)) == [("text", "Both:"), call(), call("get_weather", city="Oslo")]
    ready = [e for e in parse(recovering, text) if isinstance(e, ToolCallReady)]
    assert [r.raw for r in ready] == [f"```json\n{CALL}", f"\n{weather}\n```"]
    # One object that is not a call makes the whole fence text.
    assert [k for k, *_ in summary(parse(recovering, f'```json\n{CALL}\n{{"x": 1}}\n```'))] == ["text"]
    assert [k for k, *_ in summary(parse(recovering, f"```json\n{CALL}\n{weather}\n```\nDone."))] == ["text"]


def test_a_fence_held_past_the_bound_is_released_as_text():
    # A fenced call is held until the fence can no longer be one; past the splitter's
    # bound (MAX_HELD_CHARS) it is text, and a fence after it is still recovered.
    from tokenyard.parsing.tools.base import MAX_HELD_CHARS

    long = '```json\n{"name": "Bash", "arguments": {"command": "' + "a" * (MAX_HELD_CHARS + 1000) + '"}}\n```\n'
    text = long + "Then:\n" + FENCE
    splitter = recovering()
    events = [e for at in range(0, len(text), 64) for e in splitter.feed(text[at : at + 64])]
    events += splitter.finish()
    check_events(events, text)
    assert splitter.released_holds == 1
    assert [s for s in summary(merge(events)) if s[0] == "call"] == [call()]
