"""Chained block hashes of token prefixes: one definition shared by the simulated engine
and the router.

A token sequence is cut into fixed-size blocks. Block i's hash chains block i-1's
hash with block i's tokens, so it stands for every token from the start to the end
of block i: equal hashes mean equal prefixes, and a change in block 0 changes every
later hash. This is vLLM's prefix-caching key and Dynamo's KV-router key. Only full
blocks are hashed; a partial last block can still grow, so it is never cached.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Sequence
from typing import Protocol

BlockHash = int

# The parent of block 0.
ROOT_HASH: BlockHash = 0


def hash_block(parent: BlockHash, tokens: Sequence[int]) -> BlockHash:
    """The hash of a block of `tokens` following the prefix whose last block hashed to `parent`."""
    # blake2b rather than hash(): stable across processes and Python versions, so
    # workers and a router in other processes agree on it.
    digest = hashlib.blake2b(parent.to_bytes(16, "little"), digest_size=16)
    digest.update(array("I", tokens).tobytes())
    return int.from_bytes(digest.digest(), "little")


def extend_block_hashes(hashes: list[BlockHash], tokens: Sequence[int], block_size: int) -> list[BlockHash]:
    """Append to `hashes` (the hashes of `tokens`' first full blocks, possibly none)
    the hash of every further full block of `tokens`; returns `hashes`."""
    parent = hashes[-1] if hashes else ROOT_HASH
    for start in range(len(hashes) * block_size, len(tokens) - block_size + 1, block_size):
        parent = hash_block(parent, tokens[start : start + block_size])
        hashes.append(parent)
    return hashes


def block_hashes(tokens: Sequence[int], block_size: int) -> list[BlockHash]:
    """The chained hash of every full block of `tokens`."""
    return extend_block_hashes([], tokens, block_size)


class KvEventSink(Protocol):
    """Where an engine reports the blocks it caches and evicts: a publisher of KV
    events to the routers that follow it (`routing.kv_publisher`)."""

    def stored(self, hashes: Sequence[BlockHash], *, parent: BlockHash | None, token_ids: Sequence[int]) -> None:
        """`hashes` are consecutive blocks following `parent` (None: they start the
        sequence); `token_ids` their tokens."""
        ...

    def removed(self, hashes: Iterable[BlockHash]) -> None: ...
