import pytest

from tokenyard.events import Marker, ReasoningDelta, TextDelta
from tokenyard.families.reasoning import REASONING_FORMATS
from tokenyard.parsing.reasoning.parser import reasoning_format, reasoning_parser_names
from tokenyard.parsing.registry import UnknownParserError

from .support import parse, splitter_factory, summary

ALL_NAMES = [
    "basic",
    "qwen3",
    "nemotron_deci",
    "glm45",
    "deepseek_r1",
    "deepseek_v3",
    "deepseek_v3_1",
    "deepseek_v3_2",
    "deepseek_v4",
    "step3",
    "nemotron_nano",
    "nemotron3",
    "kimi",
    "kimi_k25",
    "kimi_k3",
    "minimax_m2",
    "minimax_append_think",
    "mistral",
    "granite",
    "gemma4",
    "gpt_oss",
]


def test_every_reference_name_is_registered():
    names = reasoning_parser_names()
    for name in ALL_NAMES:
        assert name in names
    assert reasoning_format("DeepSeek_V3_1").name == "deepseek_r1"  # case-insensitive alias


def test_unknown_name_lists_known_ones():
    with pytest.raises(UnknownParserError, match="known: .*qwen3"):
        reasoning_format("qwen9")


FORCED = {
    "deepseek_r1",
    "deepseek_v3",
    "deepseek_v3_1",
    "deepseek_v3_2",
    "step3",
    "nemotron_nano",
    "nemotron3",
    "kimi_k25",
    "minimax_m2",
    "minimax_append_think",
}


@pytest.mark.parametrize("fmt", REASONING_FORMATS, ids=lambda f: f.name)
def test_marked_block_then_text(fmt):
    text = f"{fmt.start[-1]}\nweigh options\n{fmt.end[0]}\n\nThe answer."
    assert summary(parse(splitter_factory(fmt.name, None), text)) == [
        ("reasoning", "weigh options"),
        ("text", "The answer."),
    ]


@pytest.mark.parametrize("fmt", REASONING_FORMATS, ids=lambda f: f.name)
def test_force_reasoning_without_start_marker(fmt):
    text = f"thinking first{fmt.end[0]}answer"
    got = summary(parse(splitter_factory(fmt.name, None), text))
    if fmt.force:
        assert got == [("reasoning", "thinking first"), ("text", "answer")]
    elif fmt.prose:
        # Prose markers (granite's) that close nothing are the model's words.
        assert got == [("text", text)]
    else:
        # Not forced: nothing before a start marker is reasoning; the stray end
        # marker is recognised, not shown.
        assert got == [("text", "thinking first"), ("text", "answer")]


@pytest.mark.parametrize("name", sorted(FORCED))
def test_forced_aliases_start_inside_reasoning(name):
    assert summary(
        parse(splitter_factory(name, None), "a</think>b".replace("</think>", reasoning_format(name).end[0]))
    ) == [
        ("reasoning", "a"),
        ("text", "b"),
    ]


def test_several_blocks_interleave_with_text():
    text = "<think>one</think>A<think>two</think>B"
    assert summary(parse(splitter_factory("qwen3", None), text)) == [
        ("reasoning", "one"),
        ("text", "A"),
        ("reasoning", "two"),
        ("text", "B"),
    ]


def test_prompt_already_opened_think():
    make = splitter_factory("qwen3", None, prompt_opened_reasoning=True)
    assert summary(parse(make, "inside</think>\n\nout")) == [("reasoning", "inside"), ("text", "out")]


def test_thinking_off_never_invents_reasoning():
    make = splitter_factory("deepseek_r1", None, thinking_enabled=False)
    assert summary(parse(make, "Just an answer.")) == [("text", "Just an answer.")]
    # Explicit markers the model still writes are honoured.
    assert summary(parse(make, "<think>x</think>y")) == [("reasoning", "x"), ("text", "y")]


def test_unclosed_reasoning_is_flushed_at_end():
    assert summary(parse(splitter_factory("qwen3", None), "<think>cut off mid-thou")) == [
        ("reasoning", "cut off mid-thou"),
    ]


def test_partial_marker_at_end_is_flushed_as_what_it_is():
    assert summary(parse(splitter_factory("qwen3", None), "<think>a</thi")) == [("reasoning", "a</thi")]
    assert summary(parse(splitter_factory("qwen3", None), "x <thin")) == [("text", "x <thin")]


def test_text_that_looks_like_a_marker_but_is_not():
    text = "Use <div> and <thinking> tags; a < b."
    assert summary(parse(splitter_factory("qwen3", None), text)) == [("text", text)]


def test_granite_text_markers():
    text = "Here's my thought process: compare. Here's my response: Done."
    assert summary(parse(splitter_factory("granite", None), text)) == [("reasoning", "compare."), ("text", "Done.")]
    alt = "Here is my thought process:x Here is my response:y"
    assert summary(parse(splitter_factory("granite", None), alt)) == [("reasoning", "x"), ("text", "y")]


def test_granite_repeated_prose_markers_are_text():
    # Granite's markers are plain words: written again, they are what the model wrote.
    start, end = "Here's my thought process:", "Here's my response:"
    repeated = f"{start} I think {start} is odd. {end} Done."
    assert summary(parse(splitter_factory("granite", None), repeated)) == [
        ("reasoning", f"I think {start} is odd."),
        ("text", "Done."),
    ]
    second_end = f"{start} Thinking {end} in the middle. {end} Real end."
    assert summary(parse(splitter_factory("granite", None), second_end)) == [
        ("reasoning", "Thinking"),
        ("text", f"in the middle. {end} Real end."),
    ]


def test_gemma4_channel_label_is_stripped():
    events = parse(splitter_factory("gemma4", None), "<|channel>thought\nplan it<channel|>Answer")
    assert summary(events) == [("reasoning", "plan it"), ("text", "Answer")]
    assert Marker("<|channel>thought\n") in events
    assert summary(parse(splitter_factory("gemma4", None), "<|channel>no label<channel|>A")) == [
        ("reasoning", "no label"),
        ("text", "A"),
    ]


def test_kimi_k3_markers():
    text = "<|open|>think<|sep|>hmm<|close|>think<|sep|>ok"
    assert summary(parse(splitter_factory("kimi_k3", None), text)) == [("reasoning", "hmm"), ("text", "ok")]


def test_kimi_legacy_markers():
    assert summary(parse(splitter_factory("kimi", None), "◁think▷hmm◁/think▷ok")) == [
        ("reasoning", "hmm"),
        ("text", "ok"),
    ]


def test_minimax_tool_call_ends_forced_reasoning_without_close():
    # With no tool parser configured the call section stays visible as text.
    events = parse(splitter_factory("minimax_m2", None), "plan<minimax:tool_call>x")
    assert summary(events) == [("reasoning", "plan"), ("text", "<minimax:tool_call>x")]


def test_block_edge_whitespace_is_marker_not_content():
    events = parse(splitter_factory("qwen3", None), "<think>\n\nr\n</think>\n\n  t  \n")
    assert [type(e) for e in events] == [Marker, ReasoningDelta, Marker, TextDelta, Marker]
    assert events[1].text == "r" and events[3].text == "t"
