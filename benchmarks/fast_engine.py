"""A fast stand-in inference server for gateway benchmarks: OpenAI-compatible
`/v1/completions` (token-id prompts, token ids back, as vLLM answers tokenyard's
remote engine) and `/v1/chat/completions` (what LiteLLM and direct clients call),
streaming a fixed answer as fast as the event loop allows (with `--pause-after-first MS`,
the rest of it after a pause: a GPU engine's next token comes milliseconds after its
first, and the burst's CPU no longer competes with the hop for the first token).

Run: python benchmarks/fast_engine.py --port 8101 --answer-file answer.json [--pause-after-first 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route


def build_app(token_ids: list[int], texts: list[str], pause: float = 0.0) -> Starlette:
    def frame(data: dict) -> bytes:
        return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"

    async def models(request: Request):
        return JSONResponse({"object": "list", "data": [{"id": "fast", "object": "model", "max_model_len": 131072}]})

    async def completions(request: Request):
        body = await request.json()
        prompt_tokens = len(body["prompt"]) if isinstance(body["prompt"], list) else len(body["prompt"].split())
        count = min(body.get("max_tokens") or len(token_ids), len(token_ids))

        async def stream():
            for i in range(count):
                if i == 1 and pause:
                    await asyncio.sleep(pause)
                yield frame(
                    {
                        "id": "cmpl-1",
                        "object": "text_completion",
                        "model": "fast",
                        "choices": [{"index": 0, "text": texts[i], "token_ids": [token_ids[i]], "finish_reason": None}],
                    }
                )
            yield frame(
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": "fast",
                    "choices": [{"index": 0, "text": "", "token_ids": [], "finish_reason": "length"}],
                }
            )
            yield frame(
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": "fast",
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": count,
                        "total_tokens": prompt_tokens + count,
                        "prompt_tokens_details": {"cached_tokens": 0},
                    },
                }
            )
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def chat(request: Request):
        body = await request.json()
        count = min(body.get("max_tokens") or body.get("max_completion_tokens") or len(texts), len(texts))

        async def stream():
            base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fast"}
            yield frame(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                }
            )
            for i in range(count):
                if i == 1 and pause:
                    await asyncio.sleep(pause)
                yield frame({**base, "choices": [{"index": 0, "delta": {"content": texts[i]}, "finish_reason": None}]})
            yield frame({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
            yield frame(
                {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": count, "total_tokens": 10 + count},
                }
            )
            yield b"data: [DONE]\n\n"

        if not body.get("stream"):
            return JSONResponse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "fast",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(texts[:count])},
                            "finish_reason": "length",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": count, "total_tokens": 10 + count},
                }
            )
        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--answer-file", required=True, help="JSON: {token_ids: [...], texts: [...]}")
    parser.add_argument("--pause-after-first", type=float, default=0.0, help="ms between the first token and the rest")
    args = parser.parse_args()
    answer = json.loads(open(args.answer_file, encoding="utf-8").read())
    uvicorn.run(
        build_app(answer["token_ids"], answer["texts"], args.pause_after_first / 1000),
        host="127.0.0.1",
        port=args.port,
        log_level="error",
        access_log=False,
    )


if __name__ == "__main__":
    main()
