"""Which worker holds which cached blocks (keyed by `kv_blocks` hashes).

Engines report what they store and evict as KV events, which `kv_events.KvMirror`
enters here; a router asks the index which worker already holds the longest prefix
of a new prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..kv_blocks import BlockHash


class KvIndex:
    """Which workers hold which blocks, as the workers report storing and evicting them."""

    def __init__(self) -> None:
        self._holders: dict[BlockHash, set[str]] = {}
        self._held: dict[str, set[BlockHash]] = {}

    def stored(self, worker: str, hashes: Iterable[BlockHash]) -> None:
        held = self._held.setdefault(worker, set())
        for block in hashes:
            self._holders.setdefault(block, set()).add(worker)
            held.add(block)

    def removed(self, worker: str, hashes: Iterable[BlockHash]) -> None:
        held = self._held.get(worker, set())
        for block in hashes:
            held.discard(block)
            holders = self._holders.get(block)
            if holders is not None:
                holders.discard(worker)
                if not holders:
                    del self._holders[block]

    def clear(self, worker: str) -> None:
        """Forget everything `worker` holds (its cache was reset, or it left)."""
        self.removed(worker, list(self._held.pop(worker, ())))

    def block_count(self, worker: str) -> int:
        return len(self._held.get(worker, ()))

    def overlaps(self, hashes: Sequence[BlockHash]) -> dict[str, int]:
        """For each worker holding block 0 of `hashes`, how many leading blocks it holds
        (a block past a missing one is useless: its KV needs the missing one's)."""
        matched: dict[str, int] = {}
        alive: set[str] | None = None
        for depth, block in enumerate(hashes, start=1):
            holders = self._holders.get(block, set())
            alive = set(holders) if alive is None else alive & holders
            if not alive:
                break
            for worker in alive:
                matched[worker] = depth
        return matched
