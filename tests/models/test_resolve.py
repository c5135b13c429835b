"""What `--model` names becomes a model directory and a tokenizer: the built-in
SmolLM2 converted once (GGUF → bf16 HF directory with the GGUF's own tokenizer and a
32K window), a `.gguf` file converted once, a directory used as is."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fixtures import fixtures_root, model_file
from tokenyard.models import builtin, conversion, resolve
from tokenyard.models.builtin import BUILTIN_MODELS
from tokenyard.models.gguf import load_gguf_tokenizer
from tokenyard.models.resolve import load_model_tokenizer, resolve_model_dir
from tokenyard.prompting.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def smollm2_dir() -> Path:
    pytest.importorskip("torch", reason="converting needs torch: pip install torch==2.13.0")
    started = time.monotonic()
    folder = resolve_model_dir("smollm2", fixtures_root() / "embedded-cache")
    print(f"\nresolve smollm2: {time.monotonic() - started:.1f}s -> {folder}")
    return folder


@pytest.mark.slow
def test_the_converted_dir_has_the_gguf_tokenizer_and_a_32k_window(smollm2_dir: Path):
    tokenizer = Tokenizer.from_model_dir(smollm2_dir)
    from_gguf = load_gguf_tokenizer(model_file("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    for text in (
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
        "naïve café 1234567 ✓",
        "def add(a, b):\n    return a + b\n",
    ):
        assert tokenizer.encode(text) == from_gguf.encode(text)
    assert tokenizer.encode("<|im_start|>") == [tokenizer.token_to_id("<|im_start|>")]
    assert tokenizer.chat_template is not None and "<|im_start|>" in tokenizer.chat_template
    config = (smollm2_dir / "config.json").read_text(encoding="utf-8")
    assert f'"max_position_embeddings": {conversion.EXTENDED_CONTEXT}' in config


@pytest.mark.slow
def test_a_second_resolve_reuses_the_conversion(smollm2_dir: Path, monkeypatch):
    def no_conversion(*args, **kwargs):
        raise AssertionError("converted or fetched a second time")

    monkeypatch.setattr(resolve, "convert_gguf", no_conversion)
    monkeypatch.setattr(builtin, "fetch", no_conversion)
    assert resolve_model_dir("smollm2", fixtures_root() / "embedded-cache") == smollm2_dir
    assert resolve_model_dir(str(smollm2_dir)) == smollm2_dir


def test_a_gguf_file_is_converted_once(tmp_path: Path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF stand-in")
    conversions = []

    def fake_convert(source: Path, target: Path, *, source_label: str) -> None:
        conversions.append(source)
        target.mkdir(parents=True)
        (target / conversion.CONVERSION_NOTE).write_text(f'{{"recipe": {conversion.CONVERSION_RECIPE}}}')

    monkeypatch.setattr(resolve, "convert_gguf", fake_convert)
    first = resolve_model_dir(str(gguf), tmp_path / "cache")
    assert resolve_model_dir(str(gguf), tmp_path / "cache") == first
    assert conversions == [gguf] and first.parent == tmp_path / "cache" / "models"
    with pytest.raises(ValueError, match="not a model directory"):
        resolve_model_dir(str(tmp_path / "missing"), tmp_path / "cache")


def test_a_model_directory_or_gguf_gives_its_tokenizer(tmp_path: Path):
    folder = model_file("qwen3/tokenizer.json").parent
    tokenizer, found = load_model_tokenizer(str(folder), needs_weights=False)
    assert found == folder and tokenizer.chat_template
    gguf = model_file("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    tokenizer, found = load_model_tokenizer(str(gguf), needs_weights=False)
    assert found is None and tokenizer.encode("<|im_start|>") == [tokenizer.token_to_id("<|im_start|>")]
    with pytest.raises(ValueError, match="not a model directory"):
        load_model_tokenizer(str(tmp_path / "nothing"), needs_weights=False)
    assert "smollm2" in BUILTIN_MODELS
