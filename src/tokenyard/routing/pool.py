"""Several engines serving one model, behind one `Engine`: the pipeline sees a single
engine; each request goes to the worker the router picks.

Health: a worker whose engine fails to start, or fails a request, is taken out;
new requests go to the others. A request that failed before its first chunk is
retried on another worker (nothing reached the client yet); one that fails
mid-stream ends with the engine's error, which the pipeline turns into the API's
error event. A worker with a health URL (remote servers' `/health`) is probed every
`health_interval` seconds and comes back when it answers; one without is tried
again `retry_after` seconds after it failed.

Load: each worker's in-flight requests and their load tokens, what they still cost:
the uncached prompt from dispatch to the first chunk, the expected output from
dispatch to the end of the stream.

With an oracle (Dynamo's selection service, `dynamo.py`), each request's worker is the
oracle's, booked there until the stream ends; when it cannot answer, the router picks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

import aiohttp

from ..engines.base import Engine, EngineChunk, EngineInfo, EngineRequest
from ..faults import EngineError, PromptTooLong
from .dynamo import DynamoSelector, DynamoWorker
from .kv_publisher import ZmqKvPublisher
from .kv_subscriber import KvEventSubscriber
from .router import Candidate, Decision, Router, WorkerLoad

log = logging.getLogger("tokenyard.pool")


@dataclass
class Worker:
    name: str
    engine: Engine
    # Where it serves (a remote server's base URL), as an oracle is told.
    url: str | None = None
    # Its KV-event stream, when it publishes one.
    events: KvEventSubscriber | None = None
    # GET this (a server's /health) to tell whether it is up.
    health_url: str | None = None
    # An in-process engine's KV-event publisher (simulated workers), closed with the pool.
    publisher: ZmqKvPublisher | None = None
    load: WorkerLoad = field(default_factory=WorkerLoad)
    healthy: bool = True
    down_since: float = 0.0
    errors: int = 0

    @property
    def block_size(self) -> int | None:
        return self.events.mirror.block_size if self.events is not None else None


@dataclass
class PoolStats:
    # (worker, reason) -> requests routed.
    decisions: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Prompt tokens routed to a worker expected to hold them, per worker.
    overlap_tokens: Counter[str] = field(default_factory=Counter)
    prompt_tokens: Counter[str] = field(default_factory=Counter)
    retries: int = 0


class EnginePool:
    def __init__(
        self,
        workers: Sequence[Worker],
        router: Router,
        *,
        health_interval: float = 5.0,
        retry_after: float = 10.0,
        name: str = "pool",
        oracle: DynamoSelector | None = None,
    ):
        if not workers:
            raise ValueError("an engine pool needs at least one worker")
        names = [w.name for w in workers]
        if len(set(names)) != len(names):
            raise ValueError(f"worker names must be unique: {names}")
        self.workers = {w.name: w for w in workers}
        self.router = router
        self.stats = PoolStats()
        self._health_interval = health_interval
        self._retry_after = retry_after
        self._name = name
        self.oracle = oracle
        # The block size the oracle indexes this model at.
        self._block_size: int | None = None
        self._info: EngineInfo | None = None
        self._health_task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        # Told each worker's time from dispatch to first chunk (metrics).
        self.on_first_chunk: Callable[[str, float], None] | None = None

    def info(self) -> EngineInfo:
        if self._info is None:
            raise EngineError("the engine pool is not started")
        return self._info

    async def start(self) -> None:
        started = []
        for worker in self.workers.values():
            try:
                await worker.engine.start()
                started.append(worker.engine.info())
            except EngineError as error:
                self._take_out(worker, error)
            if worker.events is not None:
                await worker.events.start()
        if not started:
            raise EngineError("no engine of the pool could be started")
        # One model: the smallest window fits every worker.
        self._info = EngineInfo(f"{self._name}:{len(self.workers)}", min(i.max_model_len for i in started))
        if any(w.health_url for w in self.workers.values()):
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2.0))
            self._health_task = asyncio.get_running_loop().create_task(self._check_health())

    async def close(self) -> None:
        if self.oracle is not None:
            await self.oracle.close()
        if self._health_task is not None:
            self._health_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._health_task
            self._health_task = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        for worker in self.workers.values():
            if worker.events is not None:
                await worker.events.close()
            await worker.engine.close()
            if worker.publisher is not None:
                await worker.publisher.close()

    def healthy(self) -> list[Worker]:
        now = time.monotonic()
        for worker in self.workers.values():
            if not worker.healthy and worker.health_url is None and now - worker.down_since >= self._retry_after:
                worker.healthy = True  # no way to probe it: give it another chance
        return [w for w in self.workers.values() if w.healthy]

    def route(self, request: EngineRequest, exclude: frozenset[str] | set[str] = frozenset()) -> Decision:
        candidates = [Candidate(w.name, w.load, w.block_size) for w in self.healthy() if w.name not in exclude]
        if not candidates:
            raise EngineError("no healthy engine in the pool: every worker is down")
        conversation = request.conversation
        session = conversation.affinity_key if conversation is not None else None
        osl = conversation.hints.osl if conversation is not None else None
        return self.router.choose(candidates, request.prompt_token_ids, session, osl)

    async def decide(self, request: EngineRequest, exclude: set[str]) -> tuple[Decision, str | None]:
        """The worker for `request`, and the oracle's booking there when the oracle chose it.

        The oracle is offered the healthy workers that publish KV events. It indexes a
        model at one block size: the first one a worker's events tell (one model, one
        engine configuration); a worker whose events tell another is not offered, and
        until any has told, the router decides."""
        oracle = self.oracle
        if oracle is not None and self._block_size is None:
            self._block_size = next((w.block_size for w in self.workers.values() if w.block_size is not None), None)
        if oracle is not None and self._block_size is not None:
            offered = [
                self._oracle_view(w, self._block_size)
                for w in self.healthy()
                if w.name not in exclude and w.events is not None and w.block_size in (None, self._block_size)
            ]
            conversation = request.conversation
            session = conversation.affinity_key if conversation is not None else None
            selection = await oracle.select(offered, request.prompt_token_ids, session)
            if selection is not None:
                osl = conversation.hints.osl if conversation is not None else None
                output = self.router.default_osl if osl is None else osl
                prefill = selection.prefill_tokens
                decision = Decision(selection.worker, "dynamo", selection.overlap_tokens, prefill + output, prefill)
                return decision, selection.selection_id
        return self.route(request, exclude), None

    async def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        tried: set[str] = set()
        while True:
            decision, booking = await self.decide(request, tried)
            worker = self.workers[decision.worker]
            self._dispatched(request, decision)
            stream = worker.engine.generate(request)
            started = False
            dispatched = time.monotonic()
            try:
                async for chunk in stream:
                    if not started:
                        started = True
                        worker.load.tokens -= decision.prefill_tokens
                        if booking is not None and self.oracle is not None:
                            self.oracle.prefill_complete(booking)
                        if self.on_first_chunk is not None:
                            self.on_first_chunk(worker.name, time.monotonic() - dispatched)
                    yield chunk
                return
            except PromptTooLong:
                raise
            except EngineError as error:
                self._take_out(worker, error)
                if started:
                    raise
                tried.add(worker.name)
                self.stats.retries += 1
            finally:
                if isinstance(stream, AsyncGenerator):
                    await stream.aclose()
                worker.load.requests -= 1
                worker.load.tokens -= decision.load_tokens - (decision.prefill_tokens if started else 0)
                if booking is not None and self.oracle is not None:
                    self.oracle.free(booking)

    def _dispatched(self, request: EngineRequest, decision: Decision) -> None:
        worker = self.workers[decision.worker]
        worker.load.requests += 1
        worker.load.tokens += decision.load_tokens
        conversation = request.conversation
        self.router.routed(conversation.affinity_key if conversation else None, worker.name, request.prompt_token_ids)
        self.stats.decisions[(worker.name, decision.reason)] += 1
        self.stats.overlap_tokens[worker.name] += decision.overlap_tokens
        self.stats.prompt_tokens[worker.name] += len(request.prompt_token_ids)

    def _oracle_view(self, worker: Worker, block_size: int) -> DynamoWorker:
        assert worker.events is not None
        events = worker.events
        return DynamoWorker(worker.name, worker.url or worker.name, events.endpoint, events.replay_endpoint, block_size)

    def _take_out(self, worker: Worker, error: Exception) -> None:
        worker.errors += 1
        if worker.healthy:
            log.warning("worker %s taken out of the pool: %s", worker.name, error)
        worker.healthy = False
        worker.down_since = time.monotonic()
        if worker.events is None:
            # Its cache is unknown from here; affinity to it is stale.
            self.router.forget_worker(worker.name)

    async def _check_health(self) -> None:
        assert self._session is not None
        while True:
            for worker in self.workers.values():
                if worker.health_url is None:
                    continue
                try:
                    async with self._session.get(worker.health_url) as response:
                        up = response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    up = False
                if up and not worker.healthy:
                    try:
                        await worker.engine.start()  # a no-op if it started before it went down
                    except EngineError:
                        continue
                    log.info("worker %s is back", worker.name)
                    worker.healthy = True
                elif not up and worker.healthy:
                    self._take_out(worker, EngineError(f"{worker.health_url} does not answer"))
            await asyncio.sleep(self._health_interval)
