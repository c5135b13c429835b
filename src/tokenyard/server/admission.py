"""Generation slots, handed out by agent-hint priority: a waiting request with a
higher `strict_priority` tier always goes first, then higher `priority`, then the
earlier arrival. With no hints this is first come, first served. `acquire_slot` waits
for one at most `max_queue_wait` and refuses (overloaded) past `max_queue` waiters."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import TYPE_CHECKING

from ..conversation import AgentHints
from ..faults import ApiError, Fault
from . import metrics

if TYPE_CHECKING:
    from .state import ServerState


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

    def try_acquire(self) -> bool:
        """A slot now, if one is free and nobody waits for one."""
        if self._free > 0 and not self.waiting:
            self._free -= 1
            return True
        return False

    async def acquire(self, hints: AgentHints | None = None) -> None:
        if self.try_acquire():
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


class Slot:
    """One generation slot, held from `acquire` to the first `release` (later ones do
    nothing), so every path that may end a request can release it safely."""

    def __init__(self, state: ServerState) -> None:
        assert state.slots is not None, "the app's lifespan makes the slots"
        self._state = state
        self._held = True
        state.busy += 1

    def release(self) -> None:
        if self._held:
            self._held = False
            self._state.busy -= 1
            self._state.slots.release()  # type: ignore[union-attr]  # checked in __init__


async def acquire_slot(state: ServerState, hints: AgentHints | None = None) -> Slot:
    """A generation slot, in agent-hint priority order, waited for at most max_queue_wait."""
    assert state.slots is not None
    if state.slots.try_acquire():  # the common case: no queue, so no timer to arm and cancel
        metrics.observe_queue_wait(0.0)
        return Slot(state)
    if state.slots.locked() and state.waiting >= state.config.max_queue:
        raise overloaded("too many requests are waiting for the model; retry shortly")
    state.waiting += 1
    started = time.perf_counter()
    try:
        # Not asyncio.wait_for: up to Python 3.11 it swallows a cancellation that comes
        # as the slot is granted, so a request whose client just hung up would run.
        async with asyncio.timeout(state.config.max_queue_wait):
            await state.slots.acquire(hints)
    except TimeoutError:
        raise overloaded(
            f"no generation slot became free within {state.config.max_queue_wait:g} s; retry shortly"
        ) from None
    finally:
        state.waiting -= 1
    metrics.observe_queue_wait(time.perf_counter() - started)
    return Slot(state)


def overloaded(message: str) -> ApiError:
    return ApiError(Fault.OVERLOADED, message)
