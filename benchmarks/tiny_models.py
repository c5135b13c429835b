"""A tiny random-weight Qwen3 with the real Qwen3 tokenizer and chat template: a real
transformers model the embedded CPU engine can prefill 16K+ tokens with in seconds,
for measuring prefix reuse on a real engine (its outputs are noise)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from common import fixture_model

RECIPE = 1


def tiny_qwen3() -> Path:
    """Build once into the cache folder; return the model directory."""
    import torch  # noqa: F401  (the embedded extra; ImportError tells the caller)
    from transformers import Qwen3Config, Qwen3ForCausalLM

    root = Path(os.environ.get("TOKENYARD_CACHE") or Path.home() / ".cache" / "tokenyard") / "models"
    target = root / f"tiny-random-qwen3-r{RECIPE}"
    if (target / "config.json").exists():
        return target
    source = fixture_model("qwen3")
    vocab = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    size = max(max(vocab["model"]["vocab"].values()), *(t["id"] for t in vocab["added_tokens"])) + 1
    config = Qwen3Config(
        vocab_size=size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=65536,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=151645,
    )
    staging = target.with_suffix(".partial")
    shutil.rmtree(staging, ignore_errors=True)
    Qwen3ForCausalLM(config).save_pretrained(staging)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(source / name, staging / name)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
