"""Generation slots by agent-hint priority: strict tier first, then priority, then arrival."""

from __future__ import annotations

import asyncio

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
