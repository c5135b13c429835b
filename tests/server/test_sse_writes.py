"""How a stream's frames reach the wire: what the pipeline has ready goes out in one
write, so the first token's frames wake the client once (benchmarks/gateway_overhead.py)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tokenyard.server.sse import MAX_QUEUED, Keepalive, sse

from .serving import WrappedEngine, running_server


async def _items(values, error: Exception | None = None):
    for value in values:
        yield value
    if error is not None:
        raise error


@pytest.mark.parametrize("error", [None, RuntimeError("the engine broke")], ids=["end", "error"])
def test_ready_takes_what_is_queued_and_leaves_the_end_for_the_iterator(error):
    async def run():
        events = Keepalive(_items([1, 2, 3], error), interval=60)
        try:
            first = await anext(events)
            await asyncio.sleep(0.01)  # the pump queues the rest, and the end
            rest = events.ready()
            assert events.ready() == []
            if error is None:
                with pytest.raises(StopAsyncIteration):
                    await anext(events)
            else:
                with pytest.raises(RuntimeError, match="the engine broke"):
                    await anext(events)
            return [first, *rest]
        finally:
            await events.aclose()

    assert asyncio.run(run()) == [1, 2, 3]


class _Burst(WrappedEngine):
    """The whole answer at once, as an engine far ahead of its client sends it."""

    async def generate(self, request):
        chunks = [chunk async for chunk in self.inner.generate(request)]
        for chunk in chunks:
            yield chunk


def test_the_first_tokens_frames_go_out_in_one_write(tmp_path):
    writes: list[bytes] = []

    def recording(app):
        async def shim(scope, receive, send):
            async def record(message):
                if message["type"] == "http.response.body" and message.get("body"):
                    writes.append(message["body"])
                await send(message)

            await app(scope, receive, record)

        return shim

    body = {"model": "test/model", "max_tokens": 20, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    script = [[{"text": "Hello there, streaming."}]]
    with running_server("llama-3.1", script=script, tmp_path=tmp_path, wrap_app=recording) as (url, state):
        state.pipeline.engine = _Burst(state.pipeline.engine)
        with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
            text = "".join(response.iter_text())
    first = next(w for w in writes if b"content_block_delta" in w)
    names = [line[7:] for line in first.decode().splitlines() if line.startswith("event: ")]
    assert names[:3] == ["message_start", "content_block_start", "content_block_delta"]
    assert writes[0] is first  # nothing went out on its own before it
    assert len(writes) < text.count("event: ")  # not one write per event
    # The frames are the same ones, in the same order, as the client reads them.
    assert text == b"".join(writes).decode() and text.rstrip().endswith('{"type":"message_stop"}')
    data = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert "".join(d["delta"]["text"] for d in data if d["type"] == "content_block_delta") == "Hello there, streaming."


def test_a_frame_is_compact_utf8_json_and_holds_what_orjson_refuses():
    data = {"text": 'naïve → ✓ \n"', "n": 1.5, "big": 2**70, 7: None}
    frame = sse("content_block_delta", data)
    head, body = frame.split(b"\n", 1)
    assert head == b"event: content_block_delta"
    assert body.startswith(b"data: ") and body.endswith(b"\n\n") and b"\\u" not in body
    assert json.loads(body[6:]) == {"text": data["text"], "n": 1.5, "big": 2**70, "7": None}
    assert sse(None, {"a": [1, "é"]}) == 'data: {"a":[1,"é"]}\n\n'.encode()
    assert sse(None, "[DONE]") == b"data: [DONE]\n\n"


def test_the_pump_reads_no_further_ahead_than_its_bound_and_resumes_as_items_are_taken():
    pulled = []

    async def source():
        for n in range(1000):
            pulled.append(n)
            yield n

    async def run():
        events = Keepalive(source(), interval=60)
        try:
            await asyncio.sleep(0.01)
            ahead = len(pulled)
            taken = [await anext(events) for _ in range(10)]
            await asyncio.sleep(0.01)
            return ahead, taken, len(pulled), [*taken, *events.ready()]
        finally:
            await events.aclose()

    ahead, taken, later, everything = asyncio.run(run())
    assert MAX_QUEUED <= ahead <= MAX_QUEUED + 1  # a slow client does not make the engine's stream pile up
    assert taken == list(range(10)) and later > ahead
    assert everything == list(range(len(everything)))  # in order, nothing lost or repeated
