"""Dynamo's selection service as the engine pool's routing oracle (`--router-policy
dynamo=URL`): `python -m dynamo.select_service` from the ai-dynamo-runtime wheel,
runtime-free, runs Dynamo's KV router (its own indexer fed by the workers' KV events,
its cost of overlap against active load) over HTTP and books each request's load, so
that several tokenyard replicas in front of the same engines share one view of it.

The protocol (Dynamo's "Standalone Selection Service", checked against 1.6.1):
- `POST /workers` registers (upserts) a worker: `worker_id` (an integer, service-wide),
  `model_name`, `endpoint`, `block_size`, `kv_events_endpoint` (ZMQ, vLLM's format; the
  service subscribes itself), `replay_endpoint`. A worker without a KV-event endpoint
  is never schedulable there, so only workers with events are registered.
- `POST /select_and_reserve` `{selection_id, model_name, token_ids, session_id,
  allowed_worker_ids}` answers the worker (`worker_id`), its cached prefix
  (`overlap.gpu`, tokens) and `effective_prefill_tokens`, and books the request.
- `POST /reservations/{id}/prefill_complete` at the first chunk, `DELETE
  /reservations/{id}` when the stream ends (finished, failed or aborted).

When the service does not answer (or answers an error), `select` returns None and the
pool routes with its own router; the warning is logged once per outage. Worker ids
are a hash of the model, the worker's URL and its event endpoint, so every replica
registers the same worker under the same id.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

log = logging.getLogger("tokenyard.dynamo")

# `--router-policy dynamo=URL`
POLICY_PREFIX = "dynamo="


@dataclass(frozen=True)
class DynamoWorker:
    """A pool worker as the selection service registers it."""

    name: str
    endpoint: str
    kv_events: str
    replay: str | None
    block_size: int


@dataclass(frozen=True)
class Selection:
    worker: str
    selection_id: str
    # Prompt tokens the service found cached on the worker.
    overlap_tokens: int
    # The prompt tokens the worker is booked to prefill.
    prefill_tokens: int


def worker_id(model: str, worker: DynamoWorker) -> int:
    digest = hashlib.sha256(f"{model}\0{worker.endpoint}\0{worker.kv_events}".encode()).digest()
    return int.from_bytes(digest[:6], "big")  # 48 bits: exact in any JSON reader


class DynamoSelector:
    def __init__(self, url: str, model: str, *, timeout: float = 2.0, retry_after: float = 5.0):
        self.url = url.rstrip("/")
        self.model = model
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._retry_after = retry_after
        self._session: aiohttp.ClientSession | None = None
        # What the service was told, by worker id (forgotten when it stops answering:
        # it may come back empty).
        self._registered: dict[int, DynamoWorker] = {}
        self._names: dict[int, str] = {}
        self._down_since: float | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def available(self) -> bool:
        return self._down_since is None

    async def select(
        self, workers: Sequence[DynamoWorker], prompt: Sequence[int], session: str | None
    ) -> Selection | None:
        """Ask the service which of `workers` serves `prompt` and book it there; None:
        the service cannot say (down, erring, or none of these workers registered)."""
        if not workers:
            return None
        if self._down_since is not None and time.monotonic() - self._down_since < self._retry_after:
            return None
        try:
            await self._register(workers)
            body: dict[str, Any] = {
                "selection_id": uuid.uuid4().hex,
                "model_name": self.model,
                "token_ids": list(prompt),
                "allowed_worker_ids": [worker_id(self.model, w) for w in workers],
            }
            if session:
                body["session_id"] = session
            answer = await self._call("POST", "/select_and_reserve", body)
            name = self._names.get(answer["worker_id"])
            if name is None:
                self.free(str(answer["selection_id"]))
                raise DynamoUnavailable(f"it chose worker {answer['worker_id']}, which is not in the pool")
            selection = Selection(
                name,
                str(answer["selection_id"]),
                int(answer.get("overlap", {}).get("gpu", 0)),
                int(answer.get("effective_prefill_tokens", len(prompt))),
            )
        except (DynamoUnavailable, KeyError, TypeError, ValueError) as error:
            self._went_down(error)
            return None
        if self._down_since is not None:
            log.info("Dynamo's selection service at %s answers again; it routes again", self.url)
            self._down_since = None
        return selection

    def prefill_complete(self, selection_id: str) -> None:
        self._background("POST", f"/reservations/{selection_id}/prefill_complete")

    def free(self, selection_id: str) -> None:
        self._background("DELETE", f"/reservations/{selection_id}")

    async def close(self) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self._timeout.total)
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _register(self, workers: Sequence[DynamoWorker]) -> None:
        for worker in workers:
            wid = worker_id(self.model, worker)
            if self._registered.get(wid) == worker:
                continue
            body = {
                "worker_id": wid,
                "model_name": self.model,
                "endpoint": worker.endpoint,
                "block_size": worker.block_size,
                "kv_events_endpoint": worker.kv_events,
                "replay_endpoint": worker.replay,
            }
            await self._call("POST", "/workers", body)
            self._registered[wid] = worker
            self._names[wid] = worker.name
            log.info("registered worker %s with Dynamo's selection service as %d", worker.name, wid)

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.request(method, self.url + path, json=body) as response:
                if response.status >= 400:
                    detail = (await response.text())[:300]
                    if response.status == 503:
                        # Possibly restarted without our workers: register them again.
                        self._registered.clear()
                    raise DynamoUnavailable(f"{method} {path}: {response.status} {detail}")
                return await response.json()
        except (aiohttp.ClientError, TimeoutError) as error:
            self._registered.clear()
            raise DynamoUnavailable(f"{method} {path}: {type(error).__name__}: {error}") from error

    def _background(self, method: str, path: str) -> None:
        # Not awaited by the stream: a client's abort must not wait on the service;
        # what fails here, the service's own request expiry reclaims.
        async def call() -> None:
            try:
                await self._call(method, path)
            except DynamoUnavailable as error:
                log.debug("Dynamo's selection service: %s", error)

        task = asyncio.get_running_loop().create_task(call())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _went_down(self, error: Exception) -> None:
        if self._down_since is None:
            log.warning(
                "Dynamo's selection service at %s is unavailable (%s); routing with tokenyard's own router",
                self.url,
                error,
            )
        self._down_since = time.monotonic()


class DynamoUnavailable(Exception):
    """The selection service did not answer, or answered an error."""
