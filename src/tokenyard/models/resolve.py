"""What `--model` names — a HF model directory, a `.gguf` file, or a built-in model
— turned into what the server needs: a tokenizer, and a model directory for engines
that load weights."""

from __future__ import annotations

from pathlib import Path

from ..prompting.tokenizer import Tokenizer
from .builtin import BUILTIN_MODELS, builtin_gguf, builtin_source
from .cache import cache_root
from .conversion import convert_gguf, is_converted
from .downloads import sha256_of
from .gguf import load_gguf_tokenizer


def resolve_model_dir(spec: str, cache_dir: Path | None = None) -> Path:
    """The HF model directory for `spec`: a model directory as is, a `.gguf` file or
    a built-in model converted once to a bf16 directory under
    `<cache_dir or the cache root>/models/`."""
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    models = root / "models"
    if spec in BUILTIN_MODELS:
        target = models / BUILTIN_MODELS[spec].folder
        if not is_converted(target):
            convert_gguf(builtin_gguf(spec, root), target, source_label=builtin_source(spec))
        return target
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "config.json").exists():
        return path
    if path.is_file() and path.suffix == ".gguf":
        target = models / f"{path.stem}-{sha256_of(path)[:12]}-bf16"
        if not is_converted(target):
            convert_gguf(path, target, source_label=str(path.resolve()))
        return target
    raise ValueError(
        f"model {spec!r} is not a model directory (with config.json), a .gguf file, "
        f"or a built-in model ({', '.join(BUILTIN_MODELS)})"
    )


def load_model_tokenizer(spec: str, *, needs_weights: bool) -> tuple[Tokenizer, Path | None]:
    """The tokenizer for `spec`, and the HF model directory when there is one.
    `needs_weights` (the embedded engine): a GGUF or built-in model is converted;
    otherwise only its embedded tokenizer is read."""
    if spec in BUILTIN_MODELS or spec.endswith(".gguf"):
        if needs_weights:
            folder = resolve_model_dir(spec)
            return Tokenizer.from_model_dir(folder), folder
        gguf = builtin_gguf(spec) if spec in BUILTIN_MODELS else Path(spec)
        return load_gguf_tokenizer(gguf), None
    folder = Path(spec)
    if not folder.is_dir():
        raise ValueError(
            f"--model {spec!r}: not a model directory, a .gguf file, or one of {', '.join(BUILTIN_MODELS)}"
        )
    return Tokenizer.from_model_dir(folder), folder
