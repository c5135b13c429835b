"""Generation slots by agent-hint priority: strict tier first, then priority, then arrival."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from tokenyard.conversation import AgentHints
from tokenyard.server.admission import PriorityGate


def test_waiters_get_slots_in_priority_order_and_a_cancelled_waiter_passes_its_turn():
    async def scenario():
        gate = PriorityGate(1)
        await gate.acquire()
        order = []

        async def wait(name, **hints):
            await gate.acquire(AgentHints(**hints))
            order.append(name)
            gate.release()

        tasks = [
            asyncio.create_task(wait("plain-1")),
            asyncio.create_task(wait("high", priority=5)),
            asyncio.create_task(wait("plain-2")),
            asyncio.create_task(wait("strict", strict_priority=1, priority=-10)),
            asyncio.create_task(wait("gone", priority=9)),
        ]
        await asyncio.sleep(0)
        assert gate.waiting == 5
        tasks[4].cancel()
        await asyncio.sleep(0)
        gate.release()
        await asyncio.gather(*tasks[:4])
        assert order == ["strict", "high", "plain-1", "plain-2"]
        assert not gate.locked() and gate.waiting == 0

    asyncio.run(scenario())


def test_acquire_slot_takes_a_free_slot_at_once_and_queues_behind_waiters_within_the_wait():
    from tokenyard.faults import ApiError, Fault
    from tokenyard.server.admission import acquire_slot

    async def scenario():
        config = SimpleNamespace(max_queue=4, max_queue_wait=0.05)
        state = SimpleNamespace(slots=PriorityGate(1), waiting=0, busy=0, config=config)
        first = await acquire_slot(state)  # free, nobody waiting: no queue
        assert state.busy == 1 and state.waiting == 0 and state.slots.locked()
        with pytest.raises(ApiError) as refused:  # none free within max_queue_wait
            await acquire_slot(state)
        assert refused.value.fault is Fault.OVERLOADED and state.waiting == 0
        waiter = asyncio.create_task(acquire_slot(state, AgentHints(priority=1)))
        await asyncio.sleep(0)
        first.release()  # handed to the waiter, never left free for a newcomer
        assert state.slots.locked() and not state.slots.try_acquire()
        second = await waiter
        assert state.busy == 1
        second.release()
        assert not state.slots.locked() and state.busy == 0

    asyncio.run(scenario())
