"""A generation slot is given back whatever happens to the response, also when the
client is gone before the first body frame (a real uvicorn on loopback, raw
sockets that send a request and close).

uvicorn speaks ASGI 2.3: starlette then watches for the disconnect in a task of its
own and the body generator always gets to start. Servers speaking ASGI 2.4 raise
from `send` once the client is gone, and starlette gives up before the body
generator's first step, so a slot released only inside it would leak: the second
case runs the same uvicorn behind a shim with 2.4's `send` semantics."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from tokenyard.server.app import ServerConfig

from .serving import WrappedEngine, running_server, send_and_vanish

SLOTS = 2
GONE = 3 * SLOTS  # more clients that vanish than there are slots


class _GatedEngine(WrappedEngine):
    """Generates only once `gate` is set, so requests pile up on the slots."""

    gate = threading.Event()

    async def generate(self, request):
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        async for chunk in self.inner.generate(request):
            yield chunk


def _wait_for(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


BODIES = {
    "/v1/messages": {
        "model": "test/model",
        "max_tokens": 32,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/chat/completions": {"model": "test/model", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"model": "test/model", "stream": True, "input": "hi"},
}


def _asgi_2_4(app):
    """The app as an ASGI 2.4 server would run it: `send` raises OSError once the
    client is gone (uvicorn, at 2.3, drops the message silently)."""

    async def shim(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        scope = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": "2.4"}}
        gone = False

        async def receive_24():
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def send_24(message):
            nonlocal gone
            if not gone and message["type"] == "http.response.start":
                try:  # uvicorn answers at once when the client is already gone
                    gone = (await asyncio.wait_for(receive(), 0.001))["type"] == "http.disconnect"
                except TimeoutError:
                    pass
            if gone:
                raise OSError("the client is gone")
            await send(message)

        return await app(scope, receive_24, send_24)

    return shim


@pytest.mark.parametrize("wrap_app", [None, _asgi_2_4], ids=["uvicorn-asgi-2.3", "asgi-2.4-send"])
def test_clients_gone_before_the_first_frame_leak_no_slot(tmp_path, wrap_app):
    config = ServerConfig(max_concurrency=SLOTS, max_queue=100)
    with running_server("qwen3", config=config, tmp_path=tmp_path, wrap_app=wrap_app) as (url, state):
        engine = _GatedEngine(state.pipeline.engine)
        engine.gate = threading.Event()
        state.pipeline.engine = engine
        # Hold every slot, so the vanishing clients' requests wait for one, and only
        # get it (and their response starts) after their connection is gone.
        holders = [
            httpx.stream("POST", f"{url}/v1/chat/completions", json=BODIES["/v1/chat/completions"], timeout=30)
            for _ in range(SLOTS)
        ]
        for holder in holders:
            holder.__enter__()
        _wait_for(lambda: state.busy == SLOTS, "the holders to take every slot")
        paths = list(BODIES)
        for n in range(GONE):
            send_and_vanish(url, paths[n % len(paths)], BODIES[paths[n % len(paths)]])
        _wait_for(lambda: state.waiting == GONE, "the vanished clients' requests to queue")
        engine.gate.set()
        for holder in holders:
            holder.__exit__(None, None, None)

        _wait_for(lambda: state.waiting == 0 and state.busy == 0, "every slot to be free")
        served = httpx.post(
            f"{url}/v1/chat/completions",
            json={"model": "test/model", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert served.status_code == 200 and served.json()["object"] == "chat.completion"
        assert state.busy == 0 and state.waiting == 0
