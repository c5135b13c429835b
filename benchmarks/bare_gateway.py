"""The least a gateway hop costs: tokenyard's HTTP stack (uvicorn with httptools on
uvloop, aiohttp to the engine) with nothing else on the path. It answers the
Anthropic Messages API by sending a fixed token-id prompt to the engine's
`/v1/completions` (as tokenyard's remote engine does) and passing each streamed
choice on as a `content_block_delta` at once: no validation, template, tokenizer,
parser or admission. What `gateway_overhead.py` measures for it is the floor under
any gateway written on this stack, on this machine.

Run: python benchmarks/bare_gateway.py --port 8102 --engine-url http://127.0.0.1:8101 --prompt-tokens 500
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import aiohttp
import uvicorn

STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def build_app(engine_url: str, prompt_tokens: int) -> Any:
    session: aiohttp.ClientSession | None = None
    prompt = [0] * prompt_tokens

    async def app(scope: dict, receive: Any, send: Any) -> None:
        nonlocal session
        if scope["type"] == "lifespan":
            await receive()  # lifespan.startup
            session = aiohttp.ClientSession()
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await session.close()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/health":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        wanted = {"model": "fast", "prompt": prompt, "max_tokens": json.loads(body)["max_tokens"], "stream": True}
        assert session is not None
        async with session.post(f"{engine_url}/v1/completions", json=wanted) as response:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
            async for line in response.content:
                if line.startswith(b"data: {") and (choices := json.loads(line[6:])["choices"]):
                    delta = {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": choices[0]["text"]},
                    }
                    frame = b"event: content_block_delta\ndata: " + json.dumps(delta).encode() + b"\n\n"
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": STOP})

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--engine-url", required=True)
    parser.add_argument("--prompt-tokens", type=int, default=500)
    args = parser.parse_args()
    app = build_app(args.engine_url, args.prompt_tokens)
    uvicorn.run(app, host="127.0.0.1", port=args.port, http="httptools", loop="uvloop", log_level="error")


if __name__ == "__main__":
    main()
