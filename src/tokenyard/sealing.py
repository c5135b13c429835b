"""Reasoning that survives the round trip through a client.

Clients echo our reasoning back on the next turn — Anthropic `thinking` blocks with
their `signature`, Codex `reasoning` items with `encrypted_content` — sometimes
without the text (Claude Code asks for `display: "omitted"`). We seal the exact
reasoning into that opaque field with authenticated encryption under a server key,
so the next prompt carries it byte for byte (prefix stability), a tampered or
foreign value is recognised as not ours, and nothing readable leaks.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .models.cache import cache_root

_PREFIX = "tky1."


class ReasoningSeal:
    def __init__(self, key: bytes):
        if len(key) != 32:
            raise ValueError("the server key must be 32 bytes")
        self._aead = AESGCM(key)
        # A separate key for tags (never the encryption key itself).
        self._tag_key = hmac.new(key, b"tokenyard tag key", hashlib.sha256).digest()

    def seal(self, reasoning: str, context: str = "") -> str:
        nonce = secrets.token_bytes(12)
        sealed = self._aead.encrypt(nonce, reasoning.encode("utf-8"), context.encode("utf-8"))
        return _PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def tag(self, text: str, length: int) -> str:
        """`length` hex digits authenticating `text` under the key: the same on every
        replica sharing it, unguessable without it."""
        return hmac.digest(self._tag_key, text.encode("utf-8"), "sha256").hex()[:length]

    def open(self, token: str | None, context: str = "") -> str | None:
        """The reasoning sealed in `token`, or None if it is not ours, or altered."""
        if not token or not token.startswith(_PREFIX):
            return None
        try:
            raw = base64.urlsafe_b64decode(token[len(_PREFIX) :].encode("ascii"))
            return self._aead.decrypt(raw[:12], raw[12:], context.encode("utf-8")).decode("utf-8")
        except (ValueError, InvalidTag, UnicodeDecodeError):
            return None


def load_server_key(
    explicit: str | None = None, cache_dir: Path | None = None, *, key_file: Path | None = None
) -> bytes:
    """The key given (the `server_key` setting: its flag or variables), or the file
    `key_file` names (64 hex digits are the key itself; any other text is hashed into
    one), else one kept in the cache folder so a restarted server still opens what it
    sealed before. Replicas that share a key open each other's seals."""
    value = explicit
    if not value and key_file is not None:
        value = key_file.read_text(encoding="utf-8").strip()
        if not value:
            raise ValueError(f"{key_file}: the sealing key file is empty")
    if value:
        try:
            return bytes.fromhex(value) if len(value) == 64 else hashlib.sha256(value.encode("utf-8")).digest()
        except ValueError:
            return hashlib.sha256(value.encode("utf-8")).digest()
    folder = cache_dir or cache_root()
    path = folder / "server.key"
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key
    except OSError:
        pass
    key = secrets.token_bytes(32)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(key)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: the key lives as long as the process
    return key
