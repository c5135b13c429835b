"""The cache root: `$TOKENYARD_CACHE`, else `~/.cache/tokenyard`. Converted models,
downloads, the vLLM venv and the server key live under it."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("TOKENYARD_CACHE") or Path.home() / ".cache" / "tokenyard")


def ensure_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
