"""The embedded engine's JSON guide (llguidance token masks) over Qwen3's real
vocabulary, token by token, without running a model: the reasoning block is free,
the answer after it (or from the start) is only what the schema allows, then only
the stop token."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch", reason="the embedded engine needs torch")
pytest.importorskip("llguidance", reason="the embedded engine's guide needs: pip install -e '.[embedded]'")

import torch  # noqa: E402
from llguidance import LLTokenizer  # noqa: E402

from tokenyard.engines.base import OutputGuide  # noqa: E402
from tokenyard.engines.embedded import _AnswerGuide  # noqa: E402

from ..fixtures import load_tokenizer, model_dir  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "unit": {"enum": ["m", "km"]}},
    "required": ["answer", "unit"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def qwen3():
    tokenizer = load_tokenizer("qwen3")
    stop = tokenizer.token_to_id("<|im_end|>")
    text = (model_dir("qwen3") / "tokenizer.json").read_text(encoding="utf-8")
    vocabulary = LLTokenizer(text, eos_token=[stop])
    return tokenizer, vocabulary, stop


def allowed(guide: _AnswerGuide, size: int) -> torch.Tensor:
    return guide.mask(torch.zeros(size)) > float("-inf")


def test_reasoning_is_free_and_the_answer_follows_the_schema(qwen3):
    tokenizer, vocabulary, stop = qwen3
    encode = tokenizer.encode
    size = vocabulary.vocab_size
    guide = _AnswerGuide(
        OutputGuide(
            SCHEMA,
            reasoning_start="<think>",
            reasoning_end="</think>",
            reasoning_start_ids=tuple(encode("<think>")),
            reasoning_end_ids=tuple(encode("</think>")),
        ),
        vocabulary,
    )
    [think] = encode("<think>")
    first = allowed(guide, size)
    assert first[think] and first[encode("{")[0]] and not first[encode("Hello")[0]]
    guide.push(think)
    for token in encode("\nThe user wants a distance. Hello {not json}\n</think>"):
        assert allowed(guide, size).all(), "the reasoning block is free"
        guide.push(token)
    after = allowed(guide, size)
    assert not after[encode("Hello")[0]] and not after[stop]
    for token in encode('\n\n{"answer":42,"unit":"km"}'):
        assert allowed(guide, size)[token], tokenizer.decode([token])
        guide.push(token)
    final = allowed(guide, size)
    assert final[stop] and int(final.sum()) == 1, "after the JSON only the stop token"


def test_without_reasoning_the_answer_starts_at_once(qwen3):
    tokenizer, vocabulary, _ = qwen3
    guide = _AnswerGuide(OutputGuide(None), vocabulary)
    first = allowed(guide, vocabulary.vocab_size)
    assert first[tokenizer.encode("{")[0]] and not first[tokenizer.encode("[")[0]]  # json_object: an object
    assert not first[tokenizer.encode("<think>")[0]]
    text = json.dumps({"a": [1, 2]}, separators=(",", ":"))
    for token in tokenizer.encode(text):
        assert allowed(guide, vocabulary.vocab_size)[token]
        guide.push(token)


def test_a_turn_that_may_call_begins_a_call_or_the_json(qwen3):
    tokenizer, vocabulary, _ = qwen3
    [opener] = tokenizer.encode("<tool_call>")
    guide = _AnswerGuide(OutputGuide(None, call_trigger="<tool_call>", call_trigger_ids=(opener,)), vocabulary)
    size = vocabulary.vocab_size
    guide.push(tokenizer.encode("\n")[0])  # newlines still leave the choice open
    assert allowed(guide, size)[opener] and not allowed(guide, size)[tokenizer.encode("Hello")[0]]
    guide.push(opener)
    assert allowed(guide, size).all(), "a call began: nothing is guided"

    answer = _AnswerGuide(OutputGuide(None, call_trigger="<tool_call>", call_trigger_ids=(opener,)), vocabulary)
    answer.push(tokenizer.encode("{")[0])
    assert not allowed(answer, size)[opener], "the JSON began: no call any more"
