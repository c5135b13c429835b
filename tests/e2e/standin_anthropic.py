"""A test-only Anthropic Messages server that stands in for tokenyard in e2e tests.

Stdlib only. Every request (method, path, headers, JSON body) is appended to a
JSON-lines file. `POST /v1/messages` streams a scripted answer: a Bash tool call
running `echo hello-from-bash` on a fresh user turn, and a text block quoting the
tool result once the last user message carries a tool_result. With --thinking each
answer opens with a signed thinking block, so tests can check it is echoed back.

Run: python standin_anthropic.py --port P --record FILE [--thinking]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BASH_COMMAND = "echo hello-from-bash"
ANSWER_PREFIX = "The command printed: "


def last_tool_result_text(body: dict) -> str | None:
    """The text of the last user message's tool_result, or None on a fresh turn."""
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return None
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return None
    for block in reversed(content):
        if block.get("type") != "tool_result":
            continue
        result = block.get("content")
        if isinstance(result, list):
            result = "".join(part.get("text", "") for part in result)
        return str(result or "")
    return None


def thinking_block(request_number: int) -> dict:
    return {
        "type": "thinking",
        "thinking": f"Stand-in reasoning for request {request_number}.",
        "signature": f"standin-signature-{request_number:04d}",
    }


def scripted_blocks(body: dict, request_number: int, with_thinking: bool) -> tuple[list[dict], str]:
    """Content blocks for this turn, and its stop_reason."""
    opening = [thinking_block(request_number)] if with_thinking else []
    tool_output = last_tool_result_text(body)
    if tool_output is None:
        tool_use = {
            "type": "tool_use",
            "id": f"toolu_standin_{request_number:04d}",
            "name": "Bash",
            "input": {"command": BASH_COMMAND, "description": "Print a greeting"},
        }
        return opening + [tool_use], "tool_use"
    return opening + [{"type": "text", "text": ANSWER_PREFIX + tool_output.strip()}], "end_turn"


def block_events(index: int, block: dict) -> list[tuple[str, dict]]:
    """content_block_start, deltas and content_block_stop for one finished block."""
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    elif block["type"] == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    else:
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    events = [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def sse_events(body: dict, request_number: int, with_thinking: bool) -> list[tuple[str, dict]]:
    """The full SSE event sequence for one streamed response."""
    blocks, stop_reason = scripted_blocks(body, request_number, with_thinking)
    input_tokens = len(json.dumps(body)) // 4
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    message = {
        "id": f"msg_standin_{request_number:04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "standin"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        events += block_events(index, block)
    final_usage = {**usage, "output_tokens": 12}
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": final_usage,
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


class StandinHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    record_path: Path
    with_thinking = False
    record_lock = threading.Lock()
    message_requests = 0

    def log_message(self, format: str, *args) -> None:
        sys.stderr.write("standin: " + (format % args) + "\n")

    def _read_body(self) -> dict | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"unparsed": raw.decode("utf-8", "replace")}

    def _record(self, body: dict | None) -> None:
        entry = {
            "method": self.command,
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body": body,
        }
        with self.record_lock, self.record_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")

    def _send_json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self) -> None:
        self._record(None)
        self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_POST(self) -> None:
        body = self._read_body()
        self._record(body)
        route = self.path.split("?", 1)[0]
        if route == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": len(json.dumps(body)) // 4})
            return
        if route != "/v1/messages" or not isinstance(body, dict) or not body.get("stream"):
            message = f"the stand-in serves only streamed /v1/messages, not {self.path}"
            self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            return
        with self.record_lock:
            StandinHandler.message_requests += 1
            request_number = StandinHandler.message_requests
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, data in sse_events(body, request_number, self.with_thinking):
            self._send_chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self._send_chunk(b"")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", type=Path, required=True, help="JSON-lines file of received requests")
    parser.add_argument("--thinking", action="store_true", help="open every answer with a signed thinking block")
    args = parser.parse_args()
    StandinHandler.record_path = args.record
    StandinHandler.with_thinking = args.thinking
    server = ThreadingHTTPServer((args.host, args.port), StandinHandler)
    print(f"standin: listening on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
