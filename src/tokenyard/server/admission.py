"""Generation slots, handed out by agent-hint priority: a waiting request with a
higher `strict_priority` tier always goes first, then higher `priority`, then the
earlier arrival. With no hints this is first come, first served."""

from __future__ import annotations

import asyncio
import heapq
import itertools

from ..conversation import AgentHints


class PriorityGate:
    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError("at least one slot")
        self._free = slots
        self._waiters: list[tuple[tuple[int, int, int], asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    def locked(self) -> bool:
        return self._free == 0

    @property
    def waiting(self) -> int:
        return sum(1 for _, future in self._waiters if not future.done())

    async def acquire(self, hints: AgentHints | None = None) -> None:
        if self._free > 0 and not self.waiting:
            self._free -= 1
            return
        hints = hints or AgentHints()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, ((-hints.strict_priority, -hints.priority, next(self._arrivals)), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was handed over as the waiter went away: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1
