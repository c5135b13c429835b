"""Which worker serves a request: the cached prefix it would reuse against the load it
already carries (sans-IO: the pool feeds it candidates and reports where it sent what).

KV-aware cost of a worker, in tokens of work ahead of the request's first token
(as Dynamo's KV router weighs prefill blocks against active blocks):

    cost = (prompt tokens − tokens of its longest cached prefix there) + load_weight · load tokens

where a worker's load is what its in-flight requests still cost: their uncached
prompt tokens until they are prefilled (their first chunk; as Dynamo's router drops
a request's prefill load at `prefill_complete`), their expected output (`osl` hint,
or `default_osl`) until they end. Prefill already done delays nobody: counted to the
end, it made a worker that had just taken a new session's long prompt look loaded
for the whole answer, and moved sessions off the worker holding their prefix, to
prefill it all again elsewhere (`benchmarks/agentic_fleet.py`). The cheapest
worker wins; ties go to the worker this session was last sent to, then to the one
with fewest requests, then in turn (the turn advances only when it decides). A worker that publishes no KV events has no index entries; its overlap
is then estimated from where this session went before: the prefix the session's
last prompt there shares with this one.

`least-loaded` and `round-robin` are there to be compared with (benchmarks).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..kv_blocks import block_hashes
from .kv_index import KvIndex

Policy = Literal["kv", "least-loaded", "round-robin"]
POLICIES: tuple[Policy, ...] = ("kv", "least-loaded", "round-robin")
# "dynamo": chosen by Dynamo's selection service (pool.py).
Reason = Literal["kv-overlap", "session-affinity", "least-loaded", "round-robin", "dynamo"]

DEFAULT_OSL = 256
# Sessions remembered for affinity (the oldest are forgotten first).
SESSION_MEMORY = 100_000


@dataclass
class WorkerLoad:
    requests: int = 0
    # What the requests in flight still cost: their uncached prompt until their first
    # chunk (prefill done), their expected output until they end.
    tokens: int = 0


@dataclass(frozen=True)
class Candidate:
    name: str
    load: WorkerLoad
    # The worker's KV block size, known once it has published events; None: it publishes none.
    block_size: int | None = None


@dataclass(frozen=True)
class Decision:
    worker: str
    reason: Reason
    # Prompt tokens the worker is expected to find in its cache.
    overlap_tokens: int = 0
    # Load tokens the request adds to the worker until it finishes.
    load_tokens: int = 0
    # Of those, its prompt tokens to prefill, owed until its first chunk.
    prefill_tokens: int = 0


@dataclass
class _Visit:
    worker: str
    tokens: list[int]


@dataclass
class Router:
    index: KvIndex
    policy: Policy = "kv"
    load_weight: float = 1.0
    default_osl: int = DEFAULT_OSL
    _sessions: OrderedDict[str, _Visit] = field(default_factory=OrderedDict)
    _turns: itertools.count[int] = field(default_factory=itertools.count)

    def choose(
        self,
        candidates: Sequence[Candidate],
        prompt: Sequence[int],
        session: str | None = None,
        osl: int | None = None,
    ) -> Decision:
        if not candidates:
            raise ValueError("no candidate workers")
        output = self.default_osl if osl is None else osl
        if self.policy == "round-robin":
            worker = candidates[next(self._turns) % len(candidates)]
            return Decision(worker.name, "round-robin", 0, len(prompt) + output, len(prompt))
        if self.policy == "least-loaded":
            worker = min(candidates, key=lambda c: (c.load.tokens, c.load.requests))
            return Decision(worker.name, "least-loaded", 0, len(prompt) + output, len(prompt))
        overlaps = self._overlaps(candidates, prompt, session)
        previous = self._sessions.get(session) if session else None

        def cost(candidate: Candidate) -> tuple[float, int, int]:
            fresh = len(prompt) - overlaps[candidate.name]
            affinity = 0 if previous is not None and previous.worker == candidate.name else 1
            load = fresh + self.load_weight * candidate.load.tokens
            return load, affinity, candidate.load.requests

        costs = [cost(c) for c in candidates]
        lowest = min(costs)
        tied = [i for i, c in enumerate(costs) if c == lowest]
        if len(tied) == 1:
            best = candidates[tied[0]]
        else:
            # The last tiebreak is a rotation, so an idle pool spreads new sessions (and
            # their caches). It turns only when it decides: were it to turn on every
            # decision, a session's later turns (decided by their cache) would move it
            # in step with the sessions, sending every new one to the same worker.
            turn = next(self._turns)
            best = candidates[min(tied, key=lambda i: (i - turn) % len(candidates))]
        overlap = overlaps[best.name]
        if overlap and best.block_size is not None:
            reason: Reason = "kv-overlap"
        elif previous is not None and previous.worker == best.name:
            reason = "session-affinity"
        else:
            reason = "least-loaded"
        return Decision(best.name, reason, overlap, len(prompt) - overlap + output, len(prompt) - overlap)

    def routed(self, session: str | None, worker: str, prompt: Sequence[int]) -> None:
        """Remember where `session` was sent, for affinity and for workers without events."""
        if not session:
            return
        self._sessions[session] = _Visit(worker, list(prompt))
        self._sessions.move_to_end(session)
        while len(self._sessions) > SESSION_MEMORY:
            self._sessions.popitem(last=False)

    def forget_worker(self, worker: str) -> None:
        self.index.clear(worker)
        for session in [s for s, v in self._sessions.items() if v.worker == worker]:
            del self._sessions[session]

    def _overlaps(self, candidates: Sequence[Candidate], prompt: Sequence[int], session: str | None) -> dict[str, int]:
        """Prompt tokens each candidate is expected to hold."""
        by_size: dict[int, dict[str, int]] = {}
        overlaps = {}
        previous = self._sessions.get(session) if session else None
        for candidate in candidates:
            size = candidate.block_size
            if size is None:
                held = 0
                if previous is not None and previous.worker == candidate.name:
                    held = _common_prefix(previous.tokens, prompt)
                overlaps[candidate.name] = held
                continue
            if size not in by_size:
                by_size[size] = self.index.overlaps(block_hashes(prompt, size))
            overlaps[candidate.name] = by_size[size].get(candidate.name, 0) * size
        return overlaps


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
