"""What one loopback hop costs, layer by layer: relays between a client and the fast
stand-in engine (benchmarks/fast_engine.py), each passing the engine's streamed
`/v1/completions` bytes straight on, so only the stack differs:

  raw        asyncio protocols on uvloop both sides, one kept-alive engine connection
  uvicorn    uvicorn (httptools, uvloop) with a raw ASGI app, an asyncio stream to the engine
  starlette  the same under Starlette (route, Request, StreamingResponse)
  aiohttp    uvicorn with a raw ASGI app, aiohttp (pooled) to the engine
  bare hop   benchmarks/bare_gateway.py (uvicorn + aiohttp, JSON in and out per token)

The client is a raw socket (kept-alive, a blocking recv): it costs next to nothing, so
the medians are the hops' own. Each hop's added time to the first token over calling
the engine directly, interleaved, with the engine bursting the whole answer (as
gateway_overhead.py's stand-in does) and pausing after the first token (a GPU
engine's pace: the burst no longer competes with the hop for the CPU).

Run: python benchmarks/hop_relays.py [--rounds 300] [--pause-ms 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, fixture_model, free_port  # noqa: E402
from gateway_overhead import ANSWER, process  # noqa: E402

PROMPT_TOKENS = 500
KINDS = ("raw", "uvicorn", "starlette", "aiohttp")


def engine_request(engine_port: int) -> bytes:
    body = json.dumps({"model": "fast", "prompt": [0] * PROMPT_TOKENS, "max_tokens": 10_000, "stream": True})
    return (
        f"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1:{engine_port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n{body}"
    ).encode()


class EngineStream:
    """One kept-alive raw connection to the engine: a request, its chunks' payloads."""

    def __init__(self, port: int) -> None:
        self.port, self.request = port, engine_request(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def chunks(self) -> AsyncIterator[bytes]:
        if self.reader is None or self.writer is None or self.reader.at_eof() or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(self.request)
        reader = self.reader
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        while size := int((await reader.readline()).strip() or b"0", 16):
            yield (await reader.readexactly(size + 2))[:-2]
        await reader.readline()


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class RawRelay(asyncio.Protocol):
    """An HTTP/1.1 server reduced to what the benchmark's client sends."""

    def __init__(self, engine_port: int) -> None:
        self.engine = EngineStream(engine_port)
        self.buffer = b""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end].lower()
        length = int(head.split(b"content-length:")[1].split(b"\r\n")[0]) if b"content-length:" in head else 0
        if len(self.buffer) < end + 4 + length:
            return
        path = self.buffer.split(b" ", 2)[1]
        self.buffer = self.buffer[end + 4 + length :]
        if path == b"/health":
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        else:
            asyncio.ensure_future(self.relay())

    async def relay(self) -> None:
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        async for data in self.engine.chunks():
            self.transport.write(chunked(data))
        self.transport.write(b"0\r\n\r\n")


def serve(kind: str, port: int, engine_port: int) -> None:
    import aiohttp
    import uvicorn
    import uvloop

    if kind == "raw":

        async def run() -> None:
            server = await asyncio.get_running_loop().create_server(lambda: RawRelay(engine_port), "127.0.0.1", port)
            await server.serve_forever()

        uvloop.run(run())
        return
    idle: list[EngineStream] = []
    session: list[aiohttp.ClientSession] = []

    async def pooled() -> AsyncIterator[bytes]:
        engine = idle.pop() if idle else EngineStream(engine_port)
        async for data in engine.chunks():
            yield data
        idle.append(engine)

    async def via_aiohttp() -> AsyncIterator[bytes]:
        if not session:
            session.append(aiohttp.ClientSession())
        body = engine_request(engine_port).split(b"\r\n\r\n", 1)[1]
        url = f"http://127.0.0.1:{engine_port}/v1/completions"
        async with session[0].post(url, data=body, headers={"content-type": "application/json"}) as response:
            async for data, _ in response.content.iter_chunks():
                if data:
                    yield data

    if kind == "starlette":
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse, StreamingResponse
        from starlette.routing import Route

        async def messages(request: Request) -> StreamingResponse:
            await request.body()
            return StreamingResponse(pooled(), media_type="text/event-stream")

        async def health(request: Request) -> PlainTextResponse:
            return PlainTextResponse("ok")

        app: Any = Starlette(routes=[Route("/v1/messages", messages, methods=["POST"]), Route("/health", health)])
    else:
        source = via_aiohttp if kind == "aiohttp" else pooled

        async def app(scope: dict, receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":
                return
            more = True
            while more:
                more = (await receive()).get("more_body", False)
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            if scope["path"] != "/health":
                async for data in source():
                    await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"ok" if scope["path"] == "/health" else b""})

    uvicorn.run(app, host="127.0.0.1", port=port, http="httptools", loop="uvloop", log_level="error", lifespan="off")


class Client:
    """A kept-alive raw socket: seconds from a request's last byte to its first token."""

    def __init__(self, port: int, path: str, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.request = (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"anthropic-version: 2023-06-01\r\ncontent-length: {len(payload)}\r\n\r\n"
        ).encode() + payload
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def first_token(self) -> float:
        start = time.perf_counter()
        self.sock.sendall(self.request)
        seen, first = b"", None
        while not seen.endswith(b"0\r\n\r\n"):
            data = self.sock.recv(1 << 20)
            if not data:
                raise RuntimeError("the hop closed the connection")
            seen += data
            if first is None and (b'"text":"T' in seen or b"content_block_delta" in seen):
                first = time.perf_counter() - start
        if first is None:
            raise RuntimeError(f"no token in {seen[:300]!r}")
        return first


def measure(engine_port: int, hops: dict[str, int], rounds: int) -> dict[str, float]:
    """Median seconds to the first token, per path ('direct' first), interleaved."""
    body = {"model": "fast", "prompt": [0] * PROMPT_TOKENS, "max_tokens": 10_000, "stream": True}
    clients = {"direct": Client(engine_port, "/v1/completions", body)}
    messages = {"model": "m", "max_tokens": 10_000, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    clients.update({name: Client(port, "/v1/messages", messages) for name, port in hops.items()})
    samples: dict[str, list[float]] = {name: [] for name in clients}
    for client in clients.values():
        for _ in range(5):
            client.first_token()
    for _ in range(rounds):
        for name, client in clients.items():
            samples[name].append(client.first_token())
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--pause-ms", type=float, default=5.0, help="the paced engine's pause after the first token")
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--engine-port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port, args.engine_port)
        return 0
    from tokenyard.prompting.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_model_dir(fixture_model("qwen3"))
    ids = tokenizer.encode(ANSWER)
    with tempfile.TemporaryDirectory() as tmp:
        answer_file = Path(tmp) / "answer.json"
        answer_file.write_text(json.dumps({"token_ids": ids, "texts": [tokenizer.decode([i]) for i in ids]}))
        for label, pause in (("engine bursts the answer", 0.0), (f"engine pauses {args.pause_ms:g} ms", args.pause_ms)):
            with contextlib.ExitStack() as stack:
                engine_port = free_port()
                engine = [sys.executable, str(REPO / "benchmarks" / "fast_engine.py"), "--port", str(engine_port)]
                engine += ["--answer-file", str(answer_file), "--pause-after-first", str(pause)]
                stack.enter_context(process(engine, f"http://127.0.0.1:{engine_port}/v1/models"))
                hops: dict[str, int] = {}
                for kind in KINDS:
                    hops[kind] = free_port()
                    argv_ = [sys.executable, __file__, "--serve", kind, "--port", str(hops[kind])]
                    argv_ += ["--engine-port", str(engine_port)]
                    stack.enter_context(process(argv_, f"http://127.0.0.1:{hops[kind]}/health"))
                hops["bare hop"] = free_port()
                bare = [sys.executable, str(REPO / "benchmarks" / "bare_gateway.py"), "--port", str(hops["bare hop"])]
                bare += ["--engine-url", f"http://127.0.0.1:{engine_port}", "--prompt-tokens", str(PROMPT_TOKENS)]
                stack.enter_context(process(bare, f"http://127.0.0.1:{hops['bare hop']}/health"))
                medians = measure(engine_port, hops, args.rounds)
            print(f"{label}: {args.rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f}; median TTFT")
            for name, value in medians.items():
                added = (value - medians["direct"]) * 1000
                print(f"  {name:<10}{value * 1000:8.3f} ms   added {added:+.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
