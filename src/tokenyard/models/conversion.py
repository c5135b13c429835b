"""A GGUF file converted once into a bf16 HF model directory (the embedded engine
loads it with transformers), with its tokenizer and chat template, and RoPE scaling
up to `EXTENDED_CONTEXT`.

Context window: SmolLM2-135M is trained to 8K tokens, and an agent harness's system
prompt and tools alone are ~10K+. A converted GGUF whose trained window is shorter
than `EXTENDED_CONTEXT` (32K) gets YaRN RoPE scaling written into its config. YaRN
rather than linear or dynamic NTK: it is static (the same frequencies at every
length, so KV reused from a shorter request is exactly what a cold prefill would
compute, which dynamic NTK breaks), and it leaves the high-frequency dimensions that
carry local order untouched, which linear interpolation squeezes. Measured on
SmolLM2-135M-Instruct, greedy, a ChatML prompt of English/markdown design notes then
"Write a short poem about the sea.": at 12,022 prompt tokens YaRN x4 answers with an
on-topic poem ("The sea, a mystic, a mystic sea, / A life of endless wonder, ..."),
repetitive as greedy decoding of a 135M model is, and likewise at 18,291; the unscaled
model at 12,022 emits degenerate markdown (lines of "* `*", then "* server-side" repeated).
At 62 tokens the YaRN and unscaled models both write a fluent poem.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..prompting.tokenizer import Tokenizer
from .cache import ensure_dir
from .gguf import load_gguf_tokenizer

# Bump when the conversion recipe changes so cached conversions are redone.
CONVERSION_RECIPE = 1
CONVERSION_NOTE = "tokenyard-conversion.json"
EXTENDED_CONTEXT = 32768

# Strings whose token ids must survive the GGUF -> tokenizer.json conversion unchanged.
TOKENIZER_PROBES = (
    "<|im_start|>system\nYou are helpful.<|im_end|>\n",
    "Hello, world! 12345 café  \t\n",
    "def f(x):\n    return x ** 2  # ünïcödé ✓",
    "<|im_start|>assistant\n<|endoftext|>",
)


class ConversionError(RuntimeError):
    """A conversion produced something that does not match its source."""


def progress(message: str) -> None:
    print(f"tokenyard: {message}", file=sys.stderr, flush=True)


def is_converted(target: Path) -> bool:
    note = target / CONVERSION_NOTE
    try:
        return bool(json.loads(note.read_text(encoding="utf-8")).get("recipe") == CONVERSION_RECIPE)
    except (OSError, ValueError):
        return False


def convert_gguf(gguf: Path, target: Path, *, source_label: str) -> None:
    """Dequantize `gguf` into a bf16 HF model directory at `target`, with its tokenizer
    and chat template, and RoPE scaling up to `EXTENDED_CONTEXT`. Written into a
    temporary sibling and renamed into place: an interrupted conversion leaves no
    folder that looks complete."""
    import torch
    from transformers import AutoModelForCausalLM, GgufConfig

    started = time.monotonic()
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=ensure_dir(target.parent)))
    try:
        progress(f"converting {gguf.name} to a bf16 model in {target} (once) [1/3 dequantize]")
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16, quantization_config=GgufConfig(dequantize=True)
        )
        rope = _extend_context(model.config)
        progress("[2/3] writing weights")
        model.save_pretrained(staging)
        del model

        progress("[3/3] writing and checking the tokenizer")
        tokenizer = load_gguf_tokenizer(gguf)
        tokenizer.backend.save(str(staging / "tokenizer.json"))
        config = {
            "bos_token": tokenizer.bos_token,
            "eos_token": tokenizer.eos_token,
            "chat_template": tokenizer.chat_template,
        }
        (staging / "tokenizer_config.json").write_text(
            json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8"
        )
        saved = Tokenizer.from_model_dir(staging)
        for probe in TOKENIZER_PROBES:
            if saved.encode(probe) != tokenizer.encode(probe):
                raise ConversionError(f"converted tokenizer disagrees with the GGUF's on {probe!r}")

        note = {
            "recipe": CONVERSION_RECIPE,
            "source": source_label,
            "rope_parameters": rope,
            "max_position_embeddings": EXTENDED_CONTEXT if rope else None,
            "seconds": round(time.monotonic() - started, 1),
        }
        (staging / CONVERSION_NOTE).write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")
        if is_converted(target):
            # A concurrent conversion (another process, a parallel test worker) finished
            # first: its folder may be in use, so it stays and this copy is dropped.
            return
        if target.exists():  # an older recipe
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(f"converted in {time.monotonic() - started:.0f}s")


def _extend_context(config: Any) -> dict[str, Any] | None:
    """Give a model trained to fewer than EXTENDED_CONTEXT tokens YaRN RoPE scaling
    (see the module docstring for why YaRN). Returns the new RoPE parameters."""
    trained = config.max_position_embeddings
    if trained >= EXTENDED_CONTEXT:
        return None
    rope = dict(config.rope_parameters)
    rope.update(rope_type="yarn", factor=EXTENDED_CONTEXT / trained, original_max_position_embeddings=trained)
    config.rope_parameters = rope
    config.max_position_embeddings = EXTENDED_CONTEXT
    return rope
