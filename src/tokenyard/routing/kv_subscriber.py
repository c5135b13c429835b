"""Follows one worker's KV-event stream (ZMQ SUB) into its `KvMirror`.

Sequence numbers count the publisher's batches from 0. A gap (a batch lost to the
PUB socket's high-water mark, or to joining late) is filled from the worker's replay
endpoint when it has one (vLLM's `replay_endpoint`: a ROUTER answering a start
sequence number with the buffered batches from there, then seq -1); without one the
mirror goes on, possibly missing blocks (they are unplaced, never wrong). A live
sequence that goes back means the engine restarted: its cache is empty. A joining
subscriber's SUB socket may deliver again what the replay already applied: skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import zmq
import zmq.asyncio

from .kv_events import KvEventError, KvMirror, decode_batch, decode_seq, encode_seq

log = logging.getLogger("tokenyard.kv_events")


@dataclass
class SubscriberStats:
    gaps: int = 0
    replayed_batches: int = 0
    restarts: int = 0


class KvEventSubscriber:
    def __init__(
        self,
        mirror: KvMirror,
        endpoint: str,
        *,
        replay_endpoint: str | None = None,
        topic: str = "",
        replay_timeout: float = 2.0,
    ):
        self.mirror = mirror
        self.endpoint = endpoint
        self.replay_endpoint = replay_endpoint
        self.stats = SubscriberStats()
        self._topic = topic.encode()
        self._replay_timeout = replay_timeout
        self._last: int | None = None  # the last batch applied, live or replayed
        self._live_last: int | None = None  # the last batch the SUB socket delivered
        self._socket: zmq.asyncio.Socket | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def has_events(self) -> bool:
        """Whether the worker has published anything since we joined."""
        return self._last is not None

    async def start(self) -> None:
        if self._socket is not None:
            return
        self._socket = zmq.asyncio.Context.instance().socket(zmq.SUB)
        self._socket.setsockopt(zmq.SUBSCRIBE, self._topic)
        self._socket.connect(self.endpoint)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    async def _run(self) -> None:
        assert self._socket is not None
        # Joining an engine that is already serving: what it cached so far is in its
        # replay buffer (what is published while this runs arrives on the SUB socket).
        await self._replay(0, None)
        while True:
            frames = await self._socket.recv_multipart()
            try:
                await self._receive(frames)
            except KvEventError as error:
                log.warning("%s: KV event dropped: %s", self.mirror.worker, error)

    async def _receive(self, frames: list[bytes]) -> None:
        if len(frames) != 3:
            raise KvEventError(f"a KV event message has 3 frames (topic, seq, payload), got {len(frames)}")
        seq = decode_seq(frames[1])
        live_before, self._live_last = self._live_last, seq
        if live_before is not None and seq <= live_before:
            # The live numbering went back: the engine restarted, its cache is empty.
            self.stats.restarts += 1
            self.mirror.clear()
            self._last = None
        elif self._last is not None and seq <= self._last:
            return  # the live stream catching up with what the replay applied
        expected = 0 if self._last is None else self._last + 1
        if seq > expected:
            self.stats.gaps += 1
            await self._replay(expected, seq)
        self.mirror.apply(decode_batch(frames[2]))
        self._last = seq

    async def _replay(self, first: int, upto: int | None) -> None:
        """Apply the batches `first` .. `upto - 1` (None: all there are) from the replay endpoint."""
        if self.replay_endpoint is None:
            return
        dealer = zmq.asyncio.Context.instance().socket(zmq.DEALER)
        dealer.connect(self.replay_endpoint)
        try:
            await dealer.send_multipart((b"", encode_seq(first)))
            while True:
                # Not asyncio.wait_for: on 3.11 it can swallow a cancellation that lands as
                # the receive completes, and close() then waits forever on this task.
                async with asyncio.timeout(self._replay_timeout):
                    frames = await dealer.recv_multipart()
                if len(frames) != 4:
                    raise KvEventError("a replayed batch has 4 frames (empty, topic, seq, payload)")
                seq = decode_seq(frames[2])
                if seq < 0 or (upto is not None and seq >= upto):
                    break
                if self._last is None or seq > self._last:
                    self.mirror.apply(decode_batch(frames[3]))
                    self._last = seq
                    self.stats.replayed_batches += 1
        except TimeoutError:
            log.warning("%s: the replay endpoint %s did not answer", self.mirror.worker, self.replay_endpoint)
        finally:
            dealer.close(linger=0)
