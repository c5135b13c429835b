"""vLLM's KV-cache events (`--kv-events-config`), decoded and encoded (sans-IO).

The wire format (vLLM `vllm/distributed/kv_events.py`; SGLang publishes the same):
a ZMQ PUB multipart message `(topic, seq, payload)`, `seq` an 8-byte big-endian
counter, `payload` a msgpack array `[ts, [event, ...], data_parallel_rank]` (the
rank was added later; older publishers send two elements). Each event is, in the
older encoding, a positional array tagged by its first element:

    ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name?]
    ["BlockRemoved", block_hashes, medium]
    ["AllBlocksCleared"]

and since vLLM's 2026 switch a map tagged by `"type"` with the same field names
plus optional ones (`extra_keys`, `group_idx`, `kv_cache_spec_kind`, `locality`,
`session_id`, ...), defaults omitted. Block hashes are ints or bytes (sha256
digests), depending on the engine's settings; tokenyard never interprets them,
it only maps them to its own hashes (`kv_blocks`) recomputed from `token_ids`, so
a change of the engine's hash function changes nothing here.

`KvMirror` applies one worker's events to a `KvIndex`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import msgpack

from ..kv_blocks import ROOT_HASH, BlockHash, hash_block
from .kv_index import KvIndex

EngineHash = int | bytes
Encoding = Literal["tagged", "array"]

# The tiers whose blocks a request can hit without loading them first; blocks an
# engine offloads to CPU memory or storage (vLLM's "CPU", "STORAGE") are not counted.
DEVICE_MEDIUMS = frozenset({None, "GPU"})


class KvEventError(ValueError):
    """A payload that is not a vLLM KV-event batch."""


@dataclass(frozen=True)
class BlockStored:
    block_hashes: list[EngineHash]
    parent_block_hash: EngineHash | None
    token_ids: list[int]
    block_size: int
    medium: str | None = "GPU"
    lora_name: str | None = None
    # Per block: the LoRA/multimodal/cache-salt keys that entered the engine's hash.
    extra_keys: list[Any] | None = None
    group_idx: int | None = None


@dataclass(frozen=True)
class BlockRemoved:
    block_hashes: list[EngineHash]
    medium: str | None = "GPU"
    group_idx: int | None = None


@dataclass(frozen=True)
class AllBlocksCleared:
    pass


KvEvent = BlockStored | BlockRemoved | AllBlocksCleared


@dataclass(frozen=True)
class EventBatch:
    ts: float
    events: list[KvEvent]
    data_parallel_rank: int | None = None


# ---- decoding ------------------------------------------------------------------------------


def decode_seq(raw: bytes) -> int:
    if len(raw) != 8:
        raise KvEventError(f"a sequence number is 8 bytes, got {len(raw)}")
    return int.from_bytes(raw, "big", signed=True)


def decode_batch(payload: bytes) -> EventBatch:
    """One published payload, in either encoding (they may even be mixed)."""
    try:
        data = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as error:
        raise KvEventError(f"not msgpack: {error}") from error
    if not isinstance(data, list) or len(data) not in (2, 3) or not isinstance(data[1], list):
        raise KvEventError("an event batch is [ts, events] or [ts, events, data_parallel_rank]")
    ts, raw_events = data[0], data[1]
    rank = data[2] if len(data) == 3 else None
    if not isinstance(ts, (int, float)) or (rank is not None and not isinstance(rank, int)):
        raise KvEventError("an event batch's timestamp is a number and its rank an integer")
    return EventBatch(float(ts), [_decode_event(e) for e in raw_events], rank)


def _decode_event(raw: Any) -> KvEvent:
    if isinstance(raw, dict):
        tag, fields = raw.get("type"), raw
    elif isinstance(raw, list) and raw:
        tag, fields = raw[0], _positional(raw)
    else:
        raise KvEventError(f"an event is a tagged map or array, got {type(raw).__name__}")
    try:
        if tag == "BlockStored":
            return BlockStored(
                block_hashes=_hashes(fields["block_hashes"]),
                parent_block_hash=_hash_or_none(fields.get("parent_block_hash")),
                token_ids=_ints(fields["token_ids"]),
                block_size=_positive(fields["block_size"]),
                medium=fields.get("medium"),
                lora_name=fields.get("lora_name"),
                extra_keys=fields.get("extra_keys"),
                group_idx=fields.get("group_idx"),
            )
        if tag == "BlockRemoved":
            return BlockRemoved(_hashes(fields["block_hashes"]), fields.get("medium"), fields.get("group_idx"))
    except KeyError as error:
        raise KvEventError(f"{tag} lacks {error.args[0]}") from None
    if tag == "AllBlocksCleared":
        return AllBlocksCleared()
    raise KvEventError(f"unknown KV event type {tag!r}")


_ARRAY_FIELDS = {
    "BlockStored": ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"),
    "BlockRemoved": ("block_hashes", "medium"),
    "AllBlocksCleared": (),
}


def _positional(raw: list[Any]) -> dict[str, Any]:
    names = _ARRAY_FIELDS.get(raw[0])
    if names is None:
        raise KvEventError(f"unknown KV event type {raw[0]!r}")
    # Fields added later are appended (lora_name); older publishers send fewer.
    return dict(zip(names, raw[1:], strict=False))


def _hashes(value: Any) -> list[EngineHash]:
    if not isinstance(value, list) or not all(isinstance(h, (int, bytes)) for h in value):
        raise KvEventError("block_hashes is a list of integers or byte strings")
    return value


def _hash_or_none(value: Any) -> EngineHash | None:
    if value is not None and not isinstance(value, (int, bytes)):
        raise KvEventError("parent_block_hash is an integer, a byte string or nil")
    return value


def _ints(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(type(t) is int for t in value):
        raise KvEventError("token_ids is a list of integers")
    return value


def _positive(value: Any) -> int:
    if type(value) is not int or value < 1:
        raise KvEventError("block_size is a positive integer")
    return value


# ---- encoding (the simulated engine's publisher; tests) ------------------------------------


def encode_batch(batch: EventBatch, encoding: Encoding = "tagged") -> bytes:
    events = [_encode_event(e, encoding) for e in batch.events]
    body: list[Any] = [batch.ts, events]
    if batch.data_parallel_rank is not None:
        body.append(batch.data_parallel_rank)
    return msgpack.packb(body, use_bin_type=True)  # type: ignore[no-any-return]  # untyped library


def encode_seq(seq: int) -> bytes:
    return seq.to_bytes(8, "big", signed=True)


def _encode_event(event: KvEvent, encoding: Encoding) -> Any:
    if isinstance(event, BlockStored):
        values: dict[str, Any] = {
            "block_hashes": event.block_hashes,
            "parent_block_hash": event.parent_block_hash,
            "token_ids": event.token_ids,
            "block_size": event.block_size,
            "lora_id": None,
            "medium": event.medium,
            "lora_name": event.lora_name,
        }
        extra = {"extra_keys": event.extra_keys, "group_idx": event.group_idx}
        tag = "BlockStored"
    elif isinstance(event, BlockRemoved):
        values = {"block_hashes": event.block_hashes, "medium": event.medium}
        extra = {"group_idx": event.group_idx}
        tag = "BlockRemoved"
    else:
        values, extra, tag = {}, {}, "AllBlocksCleared"
    if encoding == "array":
        return [tag, *values.values()]
    # As msgspec's omit_defaults: optional fields left at their default are not sent.
    return {"type": tag, **values, **{k: v for k, v in extra.items() if v is not None}}


# ---- one worker's events applied to the index ------------------------------------------------


@dataclass
class MirrorStats:
    """Blocks that could not be keyed: the parent was never seen (events missed), or
    the engine hashed in keys a plain token prompt never has (LoRA, images, salt)."""

    unplaced_blocks: int = 0
    skipped_blocks: int = 0


@dataclass
class KvMirror:
    """What one worker holds, from its events: each engine block hash mapped to the
    `kv_blocks` hash of the same prefix, recomputed from the event's token ids and
    its parent's mapping, and entered into the shared index under `worker`."""

    worker: str
    index: KvIndex
    stats: MirrorStats = field(default_factory=MirrorStats)
    # The engine's block size, once an event has told it.
    block_size: int | None = None
    _ours: dict[EngineHash, BlockHash] = field(default_factory=dict)
    # How many engine blocks stand for each of our hashes (two engine hashes can
    # name one prefix, e.g. after the engine changed its hash function).
    _refs: Counter[BlockHash] = field(default_factory=Counter)

    def apply(self, batch: EventBatch) -> None:
        for event in batch.events:
            if isinstance(event, BlockStored):
                self._stored(event)
            elif isinstance(event, BlockRemoved):
                self._removed(event)
            else:
                self.clear()

    def clear(self) -> None:
        self.index.clear(self.worker)
        self._ours.clear()
        self._refs.clear()

    def _stored(self, event: BlockStored) -> None:
        count = len(event.block_hashes)
        if (
            event.medium not in DEVICE_MEDIUMS
            or event.group_idx not in (None, 0)
            or event.lora_name is not None
            or (event.extra_keys and any(k for k in event.extra_keys))
        ):
            self.stats.skipped_blocks += count
            return
        size = event.block_size
        if len(event.token_ids) != size * count:
            self.stats.skipped_blocks += count
            return
        self.block_size = size
        if event.parent_block_hash is None:
            parent = ROOT_HASH
        elif event.parent_block_hash in self._ours:
            parent = self._ours[event.parent_block_hash]
        else:
            self.stats.unplaced_blocks += count
            return
        added = []
        for i, engine_hash in enumerate(event.block_hashes):
            parent = hash_block(parent, event.token_ids[i * size : (i + 1) * size])
            if engine_hash in self._ours:
                continue  # vLLM re-announces blocks a request reused from its cache
            self._ours[engine_hash] = parent
            self._refs[parent] += 1
            if self._refs[parent] == 1:
                added.append(parent)
        self.index.stored(self.worker, added)

    def _removed(self, event: BlockRemoved) -> None:
        if event.medium not in DEVICE_MEDIUMS or event.group_idx not in (None, 0):
            return
        gone = []
        for engine_hash in event.block_hashes:
            ours = self._ours.pop(engine_hash, None)
            if ours is None:
                continue
            self._refs[ours] -= 1
            if self._refs[ours] <= 0:
                del self._refs[ours]
                gone.append(ours)
        self.index.removed(self.worker, gone)
