"""GGUF files: their metadata, read without touching tensor data, and the
tokenizer embedded in them rebuilt as an equivalent HF `tokenizers` tokenizer
(byte-level BPE as llama.cpp's pre-tokenizers define it, or SentencePiece BPE)."""

from __future__ import annotations

import os
import struct
from typing import Any, BinaryIO

from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from ..prompting.tokenizer import SPM_SPACE, Tokenizer


def load_gguf_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """The tokenizer embedded in the GGUF file at `path`."""
    with open(path, "rb") as f:
        metadata = read_gguf_metadata(f)
    return tokenizer_from_gguf_metadata(metadata)


# GGUF token types (llama.cpp's llama_token_type).
_GGUF_NORMAL, _GGUF_UNKNOWN, _GGUF_CONTROL, _GGUF_USER_DEFINED, _GGUF_UNUSED, _GGUF_BYTE = 1, 2, 3, 4, 5, 6

_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN35_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# `tokenizer.ggml.pre` -> (pre-tokenizer split regexes applied in order, ignore_merges),
# as llama.cpp's llama-vocab.cpp defines them.
_GGUF_PRE_TOKENIZERS: dict[str, tuple[tuple[str, ...], bool]] = {
    "default": ((_GPT2_SPLIT,), False),
    "gpt-2": ((_GPT2_SPLIT,), False),
    "smollm": ((r"\p{N}", _GPT2_SPLIT), False),
    "starcoder": ((r"\p{N}", _GPT2_SPLIT), False),
    "llama3": ((_LLAMA3_SPLIT,), True),
    "llama-v3": ((_LLAMA3_SPLIT,), True),
    "llama-bpe": ((_LLAMA3_SPLIT,), True),
    "qwen2": ((_QWEN2_SPLIT,), False),
    "qwen35": ((_QWEN35_SPLIT,), False),
}


def read_gguf_metadata(f: BinaryIO) -> dict[str, Any]:
    """The key/value section of a GGUF file (tensor data is never touched).

    gguf's GGUFReader builds a numpy view per array element, which takes ~10 s for
    a 150K-token vocabulary; this reads the same values in a fraction of a second."""
    from gguf import GGUF_MAGIC, GGUFValueType  # the format's constants, from its reference package

    scalar_formats = {
        GGUFValueType.UINT8: "<B",
        GGUFValueType.INT8: "<b",
        GGUFValueType.UINT16: "<H",
        GGUFValueType.INT16: "<h",
        GGUFValueType.UINT32: "<I",
        GGUFValueType.INT32: "<i",
        GGUFValueType.FLOAT32: "<f",
        GGUFValueType.BOOL: "<?",
        GGUFValueType.UINT64: "<Q",
        GGUFValueType.INT64: "<q",
        GGUFValueType.FLOAT64: "<d",
    }
    magic, version = struct.unpack("<II", f.read(8))
    if magic != GGUF_MAGIC or version < 2:
        raise ValueError(f"not a GGUF v2+ file: {getattr(f, 'name', f)!r}")
    _tensor_count, kv_count = struct.unpack("<QQ", f.read(16))

    def read(fmt: str) -> Any:
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

    def read_string() -> str:
        return f.read(read("<Q")).decode("utf-8")

    def read_value(value_type: int) -> Any:
        if value_type == GGUFValueType.STRING:
            return read_string()
        if value_type == GGUFValueType.ARRAY:
            item_type, count = read("<I"), read("<Q")
            if item_type in scalar_formats:
                fmt = scalar_formats[item_type]
                return list(struct.unpack(f"<{count}{fmt[1]}", f.read(count * struct.calcsize(fmt))))
            return [read_value(item_type) for _ in range(count)]
        return read(scalar_formats[GGUFValueType(value_type)])

    metadata = {}
    for _ in range(kv_count):
        key = read_string()
        metadata[key] = read_value(read("<I"))
    return metadata


def tokenizer_from_gguf_metadata(metadata: dict[str, Any]) -> Tokenizer:
    """Build a `Tokenizer` from a GGUF file's `tokenizer.*` metadata."""
    value = metadata.get
    kind = value("tokenizer.ggml.model")
    tokens: list[str] = list(value("tokenizer.ggml.tokens", []))
    types: list[int] = list(value("tokenizer.ggml.token_type", [_GGUF_NORMAL] * len(tokens)))
    if kind == "gpt2":
        backend = _gguf_byte_level_bpe(
            tokens, list(value("tokenizer.ggml.merges", [])), value("tokenizer.ggml.pre", "default")
        )
    elif kind == "llama":
        backend = _gguf_sentencepiece_bpe(
            tokens, list(value("tokenizer.ggml.scores", [])), types, value("tokenizer.ggml.add_space_prefix", True)
        )
    else:
        raise ValueError(f"unsupported GGUF tokenizer model {kind!r} (supported: gpt2, llama)")
    # Control and user-defined tokens are matched whole in input text, as llama.cpp does.
    backend.add_special_tokens(
        [AddedToken(tokens[i], special=True, normalized=False) for i, t in enumerate(types) if t == _GGUF_CONTROL]
    )
    backend.add_tokens(
        [AddedToken(tokens[i], special=False, normalized=False) for i, t in enumerate(types) if t == _GGUF_USER_DEFINED]
    )
    bos_id, eos_id = value("tokenizer.ggml.bos_token_id"), value("tokenizer.ggml.eos_token_id")
    return Tokenizer(
        backend,
        bos_token=tokens[bos_id] if bos_id is not None else None,
        eos_token=tokens[eos_id] if eos_id is not None else None,
        chat_template=value("tokenizer.chat_template"),
    )


def _gguf_byte_level_bpe(tokens: list[str], merges: list[str], pre: str) -> HFTokenizer:
    if pre not in _GGUF_PRE_TOKENIZERS:
        raise ValueError(f"unsupported GGUF pre-tokenizer {pre!r} (supported: {', '.join(_GGUF_PRE_TOKENIZERS)})")
    splits, ignore_merges = _GGUF_PRE_TOKENIZERS[pre]
    model = models.BPE(
        vocab={t: i for i, t in enumerate(tokens)},
        merges=[(left, right) for left, _, right in (m.partition(" ") for m in merges)],
        ignore_merges=ignore_merges,
    )
    backend = HFTokenizer(model)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in splits]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    backend.decoder = decoders.ByteLevel()
    return backend


def _gguf_sentencepiece_bpe(
    tokens: list[str], scores: list[float], types: list[int], add_space_prefix: bool
) -> HFTokenizer:
    """SentencePiece BPE as HF models it: byte-fallback BPE whose merges are ranked by
    the merged piece's score (transformers' SentencePieceExtractor does the same)."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges: list[tuple[str, str, float]] = []
    for piece, score in zip(tokens, scores, strict=False):
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
        merges.extend((left, right, score) for left, right in local)
    merges.sort(key=lambda merge: merge[2], reverse=True)
    unknown = next((tokens[i] for i, t in enumerate(types) if t == _GGUF_UNKNOWN), None)
    backend = HFTokenizer(
        models.BPE(
            vocab=vocab, merges=[(a, b) for a, b, _ in merges], unk_token=unknown, byte_fallback=True, fuse_unk=True
        )
    )
    steps = [normalizers.Prepend(SPM_SPACE)] if add_space_prefix else []
    backend.normalizer = normalizers.Sequence(steps + [normalizers.Replace(" ", SPM_SPACE)])
    backend.decoder = decoders.Sequence(
        [decoders.Replace(SPM_SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
        + ([decoders.Strip(" ", 1, 0)] if add_space_prefix else [])
    )
    return backend
