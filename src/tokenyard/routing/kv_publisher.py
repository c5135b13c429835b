"""A `KvEventSink` that publishes vLLM-format KV events over ZMQ, so a router in
another process (or this one) follows an engine that is not vLLM — the simulated
engine — through exactly the wire format it follows vLLM with.

As vLLM's `ZmqEventPublisher`: a PUB socket sends `(topic, seq, payload)`, `seq`
counting batches from 0; a ROUTER socket answers a replay request (a start
sequence number) with every buffered batch from there, then an end marker (seq -1).
Events reported within one turn of the event loop (one simulated scheduler step)
go out as one batch, as vLLM publishes one batch per step.

The engine block hashes on the wire are not tokenyard's: they are derived from them
by a salted digest, so a router that keyed its index by the engine's hashes instead
of recomputing them from the token ids would not find them. By default they are
unsigned 64-bit ints, as vLLM publishes them (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES`,
on by default: the last 8 bytes of its digest) and as Dynamo's indexer requires (it
rejects byte hashes); `hash_format="bytes"` sends 32-byte digests, as vLLM did
before.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Literal

import zmq
import zmq.asyncio

from ..kv_blocks import BlockHash
from .kv_events import (
    BlockRemoved,
    BlockStored,
    Encoding,
    EngineHash,
    EventBatch,
    KvEvent,
    encode_batch,
    encode_seq,
)

END_SEQ = encode_seq(-1)


class ZmqKvPublisher:
    """Publishes one engine's block stores and evictions. `endpoint` and
    `replay_endpoint` are ZMQ addresses to bind (`tcp://127.0.0.1:0` picks a free
    port; the bound addresses are in `endpoint` and `replay_endpoint` after `start`)."""

    def __init__(
        self,
        endpoint: str,
        *,
        replay_endpoint: str | None = None,
        topic: str = "",
        encoding: Encoding = "tagged",
        hash_format: Literal["bytes", "int"] = "int",
        buffer_steps: int = 10_000,
        salt: bytes = b"simulated",
    ):
        self.endpoint = endpoint
        self.replay_endpoint = replay_endpoint
        self._topic = topic.encode()
        self._encoding: Encoding = encoding
        self._hash_format = hash_format
        self._salt = salt
        self._buffer: deque[tuple[int, bytes]] = deque(maxlen=buffer_steps)
        self._pending: list[KvEvent] = []
        self._seq = 0
        self._pub: zmq.Socket[bytes] | None = None
        self._router: zmq.asyncio.Socket | None = None
        self._replay_task: asyncio.Task[None] | None = None

    def bind(self) -> None:
        """Bind the sockets (done by `start`; early when the bound addresses are needed first)."""
        if self._pub is not None:
            return
        self._pub = zmq.Context.instance().socket(zmq.PUB)
        self._pub.bind(self.endpoint)
        self.endpoint = self._pub.getsockopt_string(zmq.LAST_ENDPOINT)
        if self.replay_endpoint is not None:
            self._router = zmq.asyncio.Context.instance().socket(zmq.ROUTER)
            self._router.bind(self.replay_endpoint)
            self.replay_endpoint = self._router.getsockopt_string(zmq.LAST_ENDPOINT)

    async def start(self) -> None:
        self.bind()
        self._serve()

    def _serve(self) -> None:
        if self._router is not None and self._replay_task is None:
            self._replay_task = asyncio.get_running_loop().create_task(self._serve_replay())

    async def close(self) -> None:
        self.flush()
        if self._replay_task is not None:
            self._replay_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._replay_task
            self._replay_task = None
        for socket in (self._pub, self._router):
            if socket is not None:
                socket.close(linger=0)
        self._pub = self._router = None

    # ---- KvEventSink --------------------------------------------------------------------------

    def stored(self, hashes: Sequence[BlockHash], *, parent: BlockHash | None, token_ids: Sequence[int]) -> None:
        if not hashes:
            return
        self._add(
            BlockStored(
                block_hashes=[self.engine_hash(h) for h in hashes],
                parent_block_hash=None if parent is None else self.engine_hash(parent),
                token_ids=list(token_ids),
                block_size=len(token_ids) // len(hashes),
            )
        )

    def removed(self, hashes: Iterable[BlockHash]) -> None:
        engine_hashes = [self.engine_hash(h) for h in hashes]
        if engine_hashes:
            self._add(BlockRemoved(engine_hashes))

    # ---- publishing -----------------------------------------------------------------------------

    def engine_hash(self, ours: BlockHash) -> EngineHash:
        digest = hashlib.sha256(self._salt + ours.to_bytes(16, "little")).digest()
        return digest if self._hash_format == "bytes" else int.from_bytes(digest[:8], "big")

    def flush(self) -> None:
        """Publish what was reported since the last batch."""
        if not self._pending or self._pub is None:
            return
        events, self._pending = self._pending, []
        payload = encode_batch(EventBatch(time.time(), events, 0), self._encoding)
        seq, self._seq = self._seq, self._seq + 1
        self._buffer.append((seq, payload))
        self._pub.send_multipart((self._topic, encode_seq(seq), payload))

    def _add(self, event: KvEvent) -> None:
        if not self._pending:
            with contextlib.suppress(RuntimeError):  # no running loop: flush() is called by hand
                asyncio.get_running_loop().call_soon(self.flush)
                self._serve()
        self._pending.append(event)

    async def _serve_replay(self) -> None:
        assert self._router is not None
        while True:
            frames = await self._router.recv_multipart()
            if len(frames) != 3:
                continue  # not a replay request (vLLM ignores these too)
            client, _, start = frames
            first = int.from_bytes(start, "big", signed=True)
            for seq, payload in list(self._buffer):
                if seq >= first:
                    await self._router.send_multipart((client, b"", self._topic, encode_seq(seq), payload))
            await self._router.send_multipart((client, b"", b"", END_SEQ, b""))
