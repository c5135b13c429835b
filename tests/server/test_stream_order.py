"""A streamed response starts at once: its headers do not wait for the engine's
first token (a long prefill), and its slot is free again after it."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx

from .serving import WrappedEngine, running_server

BODY = {"model": "test/model", "max_tokens": 20, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
SCRIPT = [[{"text": "Hello there."}]]


def _answer(text: str) -> str:
    data = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert data[-1] == {"type": "message_stop"}
    return "".join(d["delta"]["text"] for d in data if d["type"] == "content_block_delta")


class _SlowPrefill(WrappedEngine):
    """No first token until the client has the response's headers (or 10 s)."""

    def __init__(self, inner, headers_seen: threading.Event):
        super().__init__(inner)
        self.headers_seen = headers_seen
        self.waited: list[bool] = []

    async def generate(self, request):
        self.waited.append(await asyncio.to_thread(self.headers_seen.wait, 10))
        async for chunk in self.inner.generate(request):
            yield chunk


def test_the_headers_do_not_wait_for_a_slow_first_token(tmp_path):
    seen = threading.Event()
    with running_server("llama-3.1", script=SCRIPT, tmp_path=tmp_path) as (url, state):
        engine = _SlowPrefill(state.pipeline.engine, seen)
        state.pipeline.engine = engine
        with httpx.stream("POST", f"{url}/v1/messages", json=BODY, timeout=30) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            seen.set()
            text = "".join(response.iter_text())
        # Its slot is free again: a second request is served.
        with httpx.stream("POST", f"{url}/v1/messages", json=BODY, timeout=30) as response:
            again = "".join(response.iter_text())
    assert engine.waited == [True, True]  # the headers came while the engine was still silent
    assert _answer(text) == _answer(again) == "Hello there."
    assert state.busy == 0
