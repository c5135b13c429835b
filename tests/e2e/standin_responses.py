"""A test-only OpenAI Responses server that stands in for tokenyard in e2e tests.

Stdlib only. Every request (method, path, headers, JSON body) is appended to a
JSON-lines file. `POST /v1/responses` streams a scripted answer: a reasoning item
(with `encrypted_content`), then an `exec_command` function call running
`echo hello-from-shell` on a fresh user turn, or a message quoting the
`function_call_output` once the last input item is one.

Run: python standin_responses.py --port P --record FILE
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SHELL_COMMAND = "echo hello-from-shell"
ANSWER_PREFIX = "The command printed: "


def last_tool_output(body: dict) -> str | None:
    """The output of the last input item when it is a function_call_output, else None."""
    items = body.get("input")
    if not isinstance(items, list) or not items or items[-1].get("type") != "function_call_output":
        return None
    output = items[-1].get("output")
    if isinstance(output, list):
        output = "".join(part.get("text", "") for part in output)
    return str(output or "")


def output_items(body: dict, n: int) -> list[dict]:
    """The finished output items of response number n."""
    reasoning = {
        "type": "reasoning",
        "id": f"rs_standin_{n:04d}",
        "summary": [{"type": "summary_text", "text": f"Stand-in reasoning {n}."}],
        "encrypted_content": f"standin-sealed-{n:04d}",
    }
    tool_output = last_tool_output(body)
    if tool_output is None:
        arguments = json.dumps({"cmd": SHELL_COMMAND})
        call = {
            "type": "function_call",
            "id": f"fc_standin_{n:04d}",
            "call_id": f"call_standin_{n:04d}",
            "name": "exec_command",
            "arguments": arguments,
            "status": "completed",
        }
        return [reasoning, call]
    text = ANSWER_PREFIX + tool_output.strip()
    message = {
        "type": "message",
        "id": f"msg_standin_{n:04d}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return [reasoning, message]


def item_events(index: int, item: dict) -> list[dict]:
    """output_item.added, the item's deltas, output_item.done."""
    kind = item["type"]
    if kind == "reasoning":
        opened = {**item, "summary": []}
        opened.pop("encrypted_content")
        part = item["summary"][0]
        inner = [
            {"type": "response.reasoning_summary_part.added", "item_id": item["id"], "output_index": index,
             "summary_index": 0, "part": {"type": "summary_text", "text": ""}},
            {"type": "response.reasoning_summary_text.delta", "item_id": item["id"], "output_index": index,
             "summary_index": 0, "delta": part["text"]},
            {"type": "response.reasoning_summary_text.done", "item_id": item["id"], "output_index": index,
             "summary_index": 0, "text": part["text"]},
            {"type": "response.reasoning_summary_part.done", "item_id": item["id"], "output_index": index,
             "summary_index": 0, "part": part},
        ]  # fmt: skip
    elif kind == "function_call":
        opened = {**item, "arguments": "", "status": "in_progress"}
        inner = [
            {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": index,
             "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": index,
             "arguments": item["arguments"]},
        ]  # fmt: skip
    else:
        opened = {**item, "content": [], "status": "in_progress"}
        part = item["content"][0]
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        inner = [
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **where, "delta": part["text"]},
            {"type": "response.output_text.done", **where, "text": part["text"]},
            {"type": "response.content_part.done", **where, "part": part},
        ]
    return [
        {"type": "response.output_item.added", "output_index": index, "item": opened},
        *inner,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def response_events(body: dict, n: int) -> list[dict]:
    """Every event of streamed response number n, sequence numbers included."""
    items = output_items(body, n)
    response = {
        "id": f"resp_standin_{n:04d}",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "standin"),
        "status": "in_progress",
        "output": [],
        "usage": None,
    }
    usage = {
        "input_tokens": len(json.dumps(body)) // 4,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 4},
        "total_tokens": len(json.dumps(body)) // 4 + 12,
    }
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
    ]
    for index, item in enumerate(items):
        events += item_events(index, item)
    completed = {**response, "status": "completed", "output": items, "usage": usage}
    events.append({"type": "response.completed", "response": completed})
    return [{**event, "sequence_number": i} for i, event in enumerate(events)]


class StandinHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    record_path: Path
    record_lock = threading.Lock()
    response_count = 0

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
        entry = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body}
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

    def _not_found(self) -> None:
        error = {"message": f"the stand-in serves only streamed POST /v1/responses, not {self.command} {self.path}",
                 "type": "invalid_request_error", "param": None, "code": None}  # fmt: skip
        self._send_json(404, {"error": error})

    def do_GET(self) -> None:
        self._record(None)
        self._not_found()

    def do_POST(self) -> None:
        body = self._read_body()
        self._record(body)
        if self.path.split("?", 1)[0] != "/v1/responses" or not isinstance(body, dict) or not body.get("stream"):
            self._not_found()
            return
        with self.record_lock:
            StandinHandler.response_count += 1
            n = StandinHandler.response_count
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in response_events(body, n):
            self._send_chunk(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self._send_chunk(b"")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", type=Path, required=True, help="JSON-lines file of received requests")
    args = parser.parse_args()
    StandinHandler.record_path = args.record
    server = ThreadingHTTPServer((args.host, args.port), StandinHandler)
    print(f"standin: listening on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
