"""The incremental detokenizer: exact, never early, never late, O(1) per token."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures import GGUF_FILES, TOKENIZER_FAMILIES, load_tokenizer

ALL_TOKENIZERS = TOKENIZER_FAMILIES + GGUF_FILES

TRICKY = [
    "日本語のトークナイザー、中文分词器。한국어 토크나이저",
    "emoji 🚀🔥👍🏽 family 👨‍👩‍👧‍👦 flags 🇯🇵🇺🇳🏴󠁧󠁢󠁳󠁣󠁴󠁿 keycap 1️⃣",
    "combining e\u0301 a\u0308\u0323 Z\u0336\u0335 ñ vs n\u0303; Hangul jamo \u1100\u1161\u11a8",
    "mixed: Ελληνικά русский עברית العربية हिन्दी ไทย ქართული 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀",
    "DeepSeek markers <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{}",
    '<think>\nreasoning 🤔\n</think>\n\n<tool_call>\n{"name": "f"}\n</tool_call><|im_end|>',
    "control \x00\x07\x1b[0m and zero-width \u200b\u200c\u200d\ufeff and rare \U0010fffd",
]


def stream(tokenizer, ids: list[int]) -> list[str]:
    detokenizer = tokenizer.detokenizer()
    return [detokenizer.push(i) for i in ids] + [detokenizer.flush()]


@pytest.mark.parametrize("source", ALL_TOKENIZERS)
def test_streamed_text_equals_full_decode_on_tricky_unicode(source):
    tokenizer = load_tokenizer(source)
    for text in TRICKY:
        ids = tokenizer.encode(text)
        pieces = stream(tokenizer, ids)
        assert "".join(pieces) == tokenizer.decode(ids)
        assert not any("\ufffd" in piece for piece in pieces), text


@pytest.mark.parametrize("source", [s for s in ALL_TOKENIZERS if "spm" not in s])
def test_byte_level_tokenizers_round_trip_the_text_itself(source):
    tokenizer = load_tokenizer(source)
    for text in TRICKY:
        normalizer = tokenizer.backend.normalizer  # Qwen's tokenizer.json normalizes to NFC
        expected = normalizer.normalize_str(text) if normalizer is not None else text
        assert "".join(stream(tokenizer, tokenizer.encode(text))) == expected


def test_a_split_character_is_emitted_whole_by_the_token_that_completes_it():
    tokenizer = load_tokenizer("llama-3.1")
    ids = tokenizer.encode("🦙")
    assert len(ids) > 1  # the emoji's four bytes span several byte-level tokens
    assert stream(tokenizer, ids) == [""] * (len(ids) - 1) + ["🦙", ""]


def test_sentencepiece_byte_fallback_tokens_join_into_one_character():
    tokenizer = load_tokenizer("vocab-gguf/ggml-vocab-llama-spm.gguf")
    ids = tokenizer.encode("a 🦙")
    pieces = [tokenizer.backend.id_to_token(i) for i in ids]
    assert pieces[-4:] == ["<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"]
    out = stream(tokenizer, ids)
    # The first piece '▁a' loses its prefix space, like the full decode.
    assert out[0] == "a" and out[-5:] == ["", "", "", "🦙", ""]


def test_special_tokens_stream_as_their_text():
    tokenizer = load_tokenizer("qwen3")
    think, end_think, call = (tokenizer.token_to_id(t) for t in ("<think>", "</think>", "<tool_call>"))
    detokenizer = tokenizer.detokenizer()
    assert detokenizer.push(think) == "<think>"
    assert detokenizer.push(end_think) == "</think>"
    assert detokenizer.push(call) == "<tool_call>"


def test_incomplete_tail_before_a_special_token_matches_full_decode():
    tokenizer = load_tokenizer("llama-3.1")
    emoji_ids = tokenizer.encode("🦙")
    ids = emoji_ids[:-1] + [tokenizer.token_to_id("<|eot_id|>")]
    assert "".join(stream(tokenizer, ids)) == tokenizer.decode(ids) == "\ufffd<|eot_id|>"


def test_cost_per_token_does_not_grow_with_the_stream():
    tokenizer = load_tokenizer("qwen3")
    ids = tokenizer.encode("".join(TRICKY) * 20)

    def seconds(n: int) -> float:
        detokenizer = tokenizer.detokenizer()
        started = time.perf_counter()
        for token_id in (ids * (n // len(ids) + 1))[:n]:
            detokenizer.push(token_id)
        return time.perf_counter() - started

    seconds(len(ids))  # warm the piece cache
    short, long = seconds(20_000), seconds(200_000)
    assert long < short * 25  # ~10x for linear; re-decoding the prefix would be ~100x


unicode_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd"), max_size=60)


@pytest.mark.parametrize("source", ["qwen3", "deepseek-v4", "gpt-oss", "vocab-gguf/ggml-vocab-llama-spm.gguf"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=unicode_text)
def test_property_streaming_equals_decode_and_never_yields_replacement(source, text):
    tokenizer = load_tokenizer(source)
    ids = tokenizer.encode(text)
    pieces = stream(tokenizer, ids)
    assert "".join(pieces) == tokenizer.decode(ids)
    assert not any("\ufffd" in piece for piece in pieces)
