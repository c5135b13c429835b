"""Control tokens a model writes mid-answer never come out as text.

A control token that is not a stop token (Qwen's `<|im_start|>`) is dropped by id
where the engine returns token ids, and cut out of the text where it returns only
text; the family's own output syntax (gpt-oss's `<|channel|>`, Kimi's call tokens)
is never taken for one. Real tokenizers from the fixtures: the Qwen2 vocabulary
that Qwen2.5 uses (`ggml-vocab-qwen2.gguf`) and the Qwen3 model folder (same
control tokens and ids), every split point of the output, and all three APIs,
streaming and not.
"""

from __future__ import annotations

import asyncio
import json
import re

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenyard.conversation import Conversation, Message, Text, ToolSpec
from tokenyard.engines.base import EngineChunk
from tokenyard.engines.wire import Call, Reasoning, render_output
from tokenyard.engines.wire import Text as TextSegment
from tokenyard.events import ReasoningDelta, TextDelta, ToolCallReady, merge_adjacent
from tokenyard.parsing.control_tokens import ControlTexts, ControlTokenFilter, control_texts, syntax_texts
from tokenyard.prompting.profiles import detect_profile
from tokenyard.server.pipeline import Pipeline

from ..fixtures import TOKENIZER_FAMILIES, load_tokenizer, model_dir
from .serving import WrappedEngine, running_server

IM_START = "<|im_start|>"
# Reasoning, text and a call's arguments, each with a control token written inside.
RAW = (
    f"<think>\nThe user wants{IM_START} the weather.\n</think>\n\nChecking{IM_START} now.\n"
    f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "Par{IM_START}is"}}}}\n</tool_call>'
)
CLEAN = RAW.replace(IM_START, "")
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def specials(tokenizer) -> list[str]:
    return list(tokenizer.special_tokens.values())


# ---- which special tokens are control tokens -------------------------------------------------


def test_qwen2_vocabulary_control_tokens():
    tokenizer = load_tokenizer("vocab-gguf/ggml-vocab-qwen2.gguf")
    profile = detect_profile(name="qwen2.5-coder")
    assert profile.family == "qwen2.5"
    controls = control_texts(specials(tokenizer), syntax_texts(profile.reasoning_parser, profile.tool_parser))
    assert controls == {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}


def test_output_syntax_is_never_a_control_token():
    tokenizer = load_tokenizer("gpt-oss")
    controls = control_texts(specials(tokenizer), syntax_texts("gpt_oss", "harmony"))
    assert not controls & {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>"}
    assert "<|reserved_200000|>" in controls
    kimi = control_texts(specials(load_tokenizer("kimi-k2")), syntax_texts(None, "kimi_k2"))
    assert "<|tool_call_begin|>" not in kimi and "<|tool_call_argument_begin|>" not in kimi
    assert "<|im_user|>" in kimi


@pytest.mark.parametrize("family", TOKENIZER_FAMILIES)
def test_no_control_token_in_the_familys_own_output(family):
    """wire.py (written from the formats, independently of the parsers) renders
    reasoning, text and calls: none of the special tokens it writes is a control
    token, so none is dropped."""
    tokenizer = load_tokenizer(family)
    profile = detect_profile(model_dir(family), tokenizer.chat_template)
    controls = control_texts(specials(tokenizer), syntax_texts(profile.reasoning_parser, profile.tool_parser))
    segments = [TextSegment("Hi."), Call("get", {"a": 1, "b": "x"}), Call("put", {"c": [1, {"d": None}]})]
    if profile.reasoning_parser:
        segments.insert(0, Reasoning("Think."))
    raw = render_output(segments, profile.tool_parser, profile.reasoning_parser)
    assert [c for c in controls if c in raw] == []


# ---- the text filter, sans-IO ------------------------------------------------------------------

FILTER = ControlTexts(["<|im_start|>", "<|endoftext|>"])


def filtered(pieces: list[str]) -> str:
    cut = ControlTokenFilter(FILTER)
    out = [cut.feed(p) for p in pieces]
    return "".join(out) + cut.feed("", final=True)


def test_filter_every_split_point():
    text = "a<|im_start|>b<|im_|<|endoftext|><|im_start|>c<|im"
    want = "ab<|im_|c<|im"
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            assert filtered([text[:i], text[i:j], text[j:]]) == want


@given(st.lists(st.sampled_from(["<|im_start|>", "<|", "im_start", "|>", "<|endoftext|>", "x", " ", "<"]), max_size=12))
@settings(max_examples=300, deadline=None)
def test_filter_any_chunking(parts):
    text = "".join(parts)
    # One pass, as written: what a cut leaves is not cut again.
    whole = re.sub(r"<\|im_start\|>|<\|endoftext\|>", "", text)
    assert filtered(parts) == whole == filtered(list(text)) == filtered([text])


# ---- the pipeline, ids and text, at every split point -----------------------------------------


class ReplayEngine(WrappedEngine):
    """Answers with fixed chunks of token ids or of text."""

    chunks: list[EngineChunk] = []

    async def generate(self, request):
        for chunk in self.chunks[:-1]:
            yield chunk
        yield self.chunks[-1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("c")) as (url, state):
        yield url, state


def conversation() -> Conversation:
    tool = ToolSpec(name="get_weather", description="Weather", parameters=WEATHER)
    return Conversation(model="m", messages=[Message(role="user", parts=[Text(text="Paris?")])], tools=[tool])


def answer(pipeline: Pipeline, chunks: list[EngineChunk]) -> list:
    pipeline.engine.chunks = chunks

    async def run():
        return [e async for e in pipeline.start(conversation()).events()]

    events = asyncio.run(asyncio.wait_for(run(), 30))
    return [
        (
            type(e).__name__,
            getattr(e, "text", None) or (e.name, e.arguments) if isinstance(e, ToolCallReady) else e.text,
        )
        for e in merge_adjacent([e for e in events if isinstance(e, (TextDelta, ReasoningDelta, ToolCallReady))])
    ]


def expected(pipeline: Pipeline) -> list:
    want = answer(pipeline, [EngineChunk(text=CLEAN, finish_reason="stop")])
    assert [kind for kind, _ in want] == ["ReasoningDelta", "TextDelta", "ToolCallReady"]
    assert want[2][1] == ("get_weather", json.dumps({"city": "Paris"}))
    return want


def test_ids_every_split_point(served):
    _, state = served
    pipeline = Pipeline(state.pipeline.model, ReplayEngine(state.pipeline.engine))
    want = expected(pipeline)
    ids = state.pipeline.model.tokenizer.encode(RAW)
    control = state.pipeline.model.tokenizer.token_to_id(IM_START)
    assert ids.count(control) == 3, "each control token is one special token id"
    for k in range(len(ids) + 1):
        chunks = [EngineChunk(token_ids=ids[:k]), EngineChunk(token_ids=ids[k:], finish_reason="stop")]
        assert answer(pipeline, chunks) == want, k


def test_text_every_split_point(served):
    _, state = served
    pipeline = Pipeline(state.pipeline.model, ReplayEngine(state.pipeline.engine))
    want = expected(pipeline)
    for k in range(len(RAW) + 1):
        chunks = [EngineChunk(text=RAW[:k]), EngineChunk(text=RAW[k:], finish_reason="stop")]
        assert answer(pipeline, chunks) == want, k


def test_the_same_spelling_in_ordinary_tokens_stays_text(served):
    """By id: `<|im_start|>` written with ordinary tokens is the model's text."""
    _, state = served
    pipeline = Pipeline(state.pipeline.model, ReplayEngine(state.pipeline.engine))
    tokenizer = state.pipeline.model.tokenizer
    plain = tokenizer.encode("</think>\n\nUse ") + [
        i for p in ("<|", "im", "_start", "|>") for i in tokenizer.encode(p)
    ]
    assert tokenizer.token_to_id(IM_START) not in plain
    events = answer(pipeline, [EngineChunk(token_ids=plain, finish_reason="stop")])
    assert events == [("TextDelta", f"Use {IM_START}")]


# ---- all three APIs, streaming and not ----------------------------------------------------------


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    script = [[{"raw": RAW}]]
    with running_server("qwen3", script=script, tmp_path=tmp_path_factory.mktemp("a")) as served:
        yield served


CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]


@pytest.mark.parametrize("text_only", [False, True], ids=["ids", "text"])
def test_every_api(api, text_only):
    url, state = api
    original = state.pipeline.engine
    if text_only:
        tokenizer = state.pipeline.model.tokenizer

        class TextOnly(WrappedEngine):
            async def generate(self, request):
                async for chunk in self.inner.generate(request):
                    text = tokenizer.decode(chunk.token_ids) if chunk.token_ids else None
                    yield EngineChunk(text=text or "", finish_reason=chunk.finish_reason)

        state.pipeline.engine = TextOnly(original)
    try:
        seen: list[str] = []
        o = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        params = {"model": "test/model", "messages": [{"role": "user", "content": "Paris?"}], "tools": CHAT_TOOLS}
        whole = o.chat.completions.create(**params).choices[0].message
        seen += [whole.content or "", getattr(whole, "reasoning_content", None) or ""]
        seen += [c.function.arguments for c in whole.tool_calls or []]
        assert json.loads(whole.tool_calls[0].function.arguments) == {"city": "Paris"}
        for chunk in o.chat.completions.create(**params, stream=True):
            seen.append(json.dumps(chunk.model_dump(), ensure_ascii=False))
        tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
        response = o.responses.create(model="test/model", input="Paris?", tools=tools, store=False)
        seen.append(json.dumps(response.model_dump(), ensure_ascii=False))
        for event in o.responses.create(model="test/model", input="Paris?", tools=tools, store=False, stream=True):
            seen.append(json.dumps(event.model_dump(), ensure_ascii=False))
        a = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        messages = {"model": "test/model", "max_tokens": 256, "messages": [{"role": "user", "content": "Paris?"}]}
        messages["tools"] = [{"name": "get_weather", "input_schema": WEATHER}]
        message = a.messages.create(**messages)
        assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
        seen.append(json.dumps(message.model_dump(), ensure_ascii=False))
        with a.messages.stream(**messages) as stream:
            seen += [json.dumps(e.model_dump(), ensure_ascii=False) for e in stream]
        assert all(IM_START not in s for s in seen)
        assert any("Checking now." in s for s in seen)
    finally:
        state.pipeline.engine = original
