"""Access to the real tokenizer/template fixtures built by scripts/build_fixtures.py.

Tests that need them call `model_dir(family)`; when the fixtures were not built the
test is skipped with the command that builds them (CI always builds them first).
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_COMMAND = "python scripts/build_fixtures.py"

# Families with a tokenizer.json + chat template folder (see FIXTURE.json in each).
TOKENIZER_FAMILIES = (
    "qwen3",
    "qwen3-coder",
    "qwen3.5",
    "deepseek-v3",
    "deepseek-v3.1",
    "deepseek-v3.2",
    "deepseek-v4",
    "llama-3.1",
    "gpt-oss",
    "glm-4.7",
    "kimi-k2",
    "kimi-k2-thinking",
    "minimax-m3",
    "seed-oss",
    "step3.5",
    "granite-4",
    "apertus",
    "cohere-command3",
    "cohere-command4",
    "gigachat3",
    "gigachat3.1",
    "granite-3",
    "hy3",
    "lfm2.5",
    "laguna",
    "minicpm5",
    "muse-glimmer",
    "ling-3",
    "spark-2.5",
)
# GGUF files whose embedded tokenizer is rebuilt by tokenyard.models.gguf.
GGUF_FILES = (
    "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "vocab-gguf/ggml-vocab-qwen2.gguf",
    "vocab-gguf/ggml-vocab-qwen35.gguf",
    "vocab-gguf/ggml-vocab-llama-bpe.gguf",
    "vocab-gguf/ggml-vocab-llama-spm.gguf",
)


def fixtures_root() -> Path:
    return Path(os.environ.get("TOKENYARD_FIXTURES") or REPO_ROOT / ".fixtures")


def model_dir(family: str) -> Path:
    """The fixture folder of `family`, skipping the calling test if it is not built."""
    folder = fixtures_root() / "models" / family
    if not (folder / "FIXTURE.json").exists():
        pytest.skip(f"fixture {family!r} not built; run `{BUILD_COMMAND}`")
    return folder


def model_file(relative: str) -> Path:
    """A file inside a fixture folder, e.g. 'smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'."""
    family, _, name = relative.partition("/")
    return model_dir(family) / name


def fixture_note(family: str) -> dict:
    return json.loads((model_dir(family) / "FIXTURE.json").read_text(encoding="utf-8"))


@cache
def _load_tokenizer(source: str):
    from tokenyard.models.gguf import load_gguf_tokenizer
    from tokenyard.prompting.tokenizer import Tokenizer

    return load_gguf_tokenizer(source) if source.endswith(".gguf") else Tokenizer.from_model_dir(source)


def load_tokenizer(family_or_gguf: str):
    """A Tokenizer for a family folder or a GGUF path relative to the models folder,
    loaded once per test session."""
    path = model_file(family_or_gguf) if family_or_gguf.endswith(".gguf") else model_dir(family_or_gguf)
    return _load_tokenizer(str(path))
