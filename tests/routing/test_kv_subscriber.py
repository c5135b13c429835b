"""The simulated engine's KV events over real ZMQ on loopback, followed by a
subscriber: the index sees what the engine caches, in both encodings, and batches
missed before joining come back from the replay endpoint."""

from __future__ import annotations

import asyncio

import pytest
import zmq

from tokenyard.kv_blocks import block_hashes
from tokenyard.routing.kv_events import BlockStored, KvMirror, decode_batch
from tokenyard.routing.kv_index import KvIndex
from tokenyard.routing.kv_publisher import ZmqKvPublisher
from tokenyard.routing.kv_subscriber import KvEventSubscriber

from ..engines.test_simulated import collect, make_engine, request


async def until(condition, timeout: float = 5.0) -> None:
    """Wait for another socket's messages to arrive (bounded; not a timing assertion)."""
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def engine_prefix(engine, prompt) -> int:
    return len(engine.pool.cached_prefix(block_hashes(prompt, 4)))


async def subscribed(engine, subscriber) -> None:
    """A SUB socket's subscription takes effect a while after it connects: publish
    (a new one-block prompt each time) until one batch lands."""
    turn = 0
    while not subscriber.has_events:
        await collect(engine, request(f"warm-{turn}", [1, 2, turn + 3]))
        turn += 1
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("encoding", ["tagged", "array"])
@pytest.mark.parametrize("hash_format", ["bytes", "int"])
def test_the_index_follows_the_simulated_engine_over_zmq(tmp_path, encoding, hash_format):
    async def scenario():
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", encoding=encoding, hash_format=hash_format)
        await publisher.start()
        index = KvIndex()
        subscriber = KvEventSubscriber(KvMirror("w0", index), publisher.endpoint)
        await subscriber.start()
        engine = make_engine(tmp_path, answer="ok", block_size=4, num_blocks=12, max_model_len=48, kv_events=publisher)
        prompts = [list(range(start, start + 16)) for start in (1000, 2000, 3000)]
        try:
            await subscribed(engine, subscriber)
            for n, prompt in enumerate(prompts):
                await collect(engine, request(str(n), prompt))
            assert engine.stats.evicted_blocks > 0
            # The index says what the engine's prefix cache says, evictions included.
            for prompt in prompts:
                await until(
                    lambda p=prompt: index.overlaps(block_hashes(p, 4)).get("w0", 0) == engine_prefix(engine, p)
                )
            assert engine_prefix(engine, prompts[2]) == 4
        finally:
            await subscriber.close()
            await engine.close()
            await publisher.close()

    asyncio.run(scenario())


def test_a_subscriber_joining_a_serving_engine_catches_up_from_the_replay_endpoint(tmp_path):
    async def scenario():
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", replay_endpoint="tcp://127.0.0.1:0")
        await publisher.start()
        engine = make_engine(tmp_path, answer="ok", block_size=4, num_blocks=64, max_model_len=48, kv_events=publisher)
        early = list(range(100, 116))
        index = KvIndex()
        subscriber = KvEventSubscriber(
            KvMirror("w0", index), publisher.endpoint, replay_endpoint=publisher.replay_endpoint
        )
        try:
            await collect(engine, request("early", early))
            await asyncio.sleep(0)  # published to nobody
            await subscriber.start()
            await until(lambda: index.overlaps(block_hashes(early, 4)) == {"w0": 4})
            assert subscriber.stats.replayed_batches >= 1
        finally:
            await subscriber.close()
            await engine.close()
            await publisher.close()

    asyncio.run(scenario())


def published(publisher: ZmqKvPublisher, prompts: list[list[int]]) -> list[list[bytes]]:
    """One batch of one block per prompt, published; each as the SUB socket delivers it."""
    frames = []
    for prompt in prompts:
        publisher.stored(block_hashes(prompt, 4), parent=None, token_ids=prompt)
        publisher.flush()
        seq, payload = publisher._buffer[-1]
        frames.append([b"", seq.to_bytes(8, "big"), payload])
    return frames


def replaying_subscriber(publisher: ZmqKvPublisher, index: KvIndex) -> KvEventSubscriber:
    return KvEventSubscriber(KvMirror("w0", index), publisher.endpoint, replay_endpoint=publisher.replay_endpoint)


def test_a_sequence_gap_is_filled_from_the_replay_endpoint_and_a_restart_clears_the_worker():
    async def scenario():
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", replay_endpoint="tcp://127.0.0.1:0")
        await publisher.start()
        prompts = [list(range(start, start + 4)) for start in (10, 20, 30, 40)]
        frames = published(publisher, prompts)
        index = KvIndex()
        subscriber = replaying_subscriber(publisher, index)
        try:
            await subscriber._receive(frames[0])
            await subscriber._receive(frames[3])  # 1 and 2 were lost
            assert subscriber.stats.gaps == 1 and subscriber.stats.replayed_batches == 2
            assert all(index.overlaps(block_hashes(p, 4)) == {"w0": 1} for p in prompts)
            await subscriber._receive(frames[0])  # seq 0 again: the engine restarted, its cache is empty
            assert subscriber.stats.restarts == 1 and index.block_count("w0") == 1
        finally:
            await publisher.close()

    asyncio.run(scenario())


def test_batches_published_while_a_joining_subscriber_replays_are_not_a_restart():
    async def scenario():
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", replay_endpoint="tcp://127.0.0.1:0")
        await publisher.start()
        frames = published(publisher, [list(range(start, start + 4)) for start in (10, 20, 30)])
        index = KvIndex()
        subscriber = replaying_subscriber(publisher, index)
        try:
            await subscriber._replay(0, None)  # joining: everything so far, from the replay
            # The SUB socket had joined meanwhile: it delivers the same batches again.
            for frame in frames:
                await subscriber._receive(frame)
            assert subscriber.stats.restarts == 0 and index.block_count("w0") == 3
            await subscriber._receive(frames[0])  # the live numbering went back: a restart
            assert subscriber.stats.restarts == 1 and index.block_count("w0") == 1
        finally:
            await publisher.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(("hash_format", "kind"), [(None, int), ("int", int), ("bytes", bytes)])
def test_block_hashes_on_the_wire_are_unsigned_64_bit_ints_by_default(hash_format, kind):
    # vLLM publishes ints (and Dynamo's indexer refuses byte hashes); bytes on request.
    options = {} if hash_format is None else {"hash_format": hash_format}
    publisher = ZmqKvPublisher("tcp://127.0.0.1:0", **options)
    publisher.bind()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(publisher.endpoint)
    hashes = block_hashes(list(range(8)), 4)
    try:
        for _ in range(500):  # a SUB socket's subscription lands a while after it connects
            publisher.stored(hashes[1:], parent=hashes[0], token_ids=list(range(4, 8)))
            publisher.flush()
            if sub.poll(10):
                break
        else:
            raise AssertionError("no batch arrived")
        _, _, payload = sub.recv_multipart()
    finally:
        sub.close(linger=0)
        asyncio.run(publisher.close())
    (event,) = decode_batch(payload).events
    assert isinstance(event, BlockStored)
    for value in (*event.block_hashes, event.parent_block_hash):
        assert type(value) is kind
        if kind is int:
            assert 0 <= value < 2**64
        else:
            assert len(value) == 32
