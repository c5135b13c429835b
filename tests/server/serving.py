"""A real tokenyard server on 127.0.0.1 for API tests: uvicorn in a thread, the
scripted engine answering in a real family's wire format."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import uvicorn

from tokenyard.prompting.prefix_watch import PrefixWatch
from tokenyard.sealing import ReasoningSeal
from tokenyard.server.app import ServerConfig, ServerState, create_app
from tokenyard.server.loading import load
from tokenyard.server.pipeline import Pipeline
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir

SERVER_KEY = bytes(range(32))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_server(
    family: str | None,
    *,
    names=("test/model",),
    reasoning=None,
    tools=None,
    script=None,
    token_delay=0.0,
    config: ServerConfig | None = None,
    max_model_len=None,
    tmp_path: Path | None = None,
    model_path: Path | None = None,
    engine: str = "scripted",
    uvicorn_options: dict | None = None,
    wrap_app=None,
    recover_fenced_calls=None,
    model: str | None = None,
    more_models=(),
):
    """`more_models`: further `ModelSettings` served beside the first model."""
    script_path = None
    if script is not None:
        assert tmp_path is not None
        script_path = tmp_path / "script.json"
        script_path.write_text(json.dumps(script))
    settings = ModelSettings(
        model=model or str(model_path or model_dir(family)),
        engine=engine,
        served_model_names=tuple(names),
        reasoning_parser=reasoning,
        tool_call_parser=tools,
        recover_fenced_calls=recover_fenced_calls,
        script=script_path,
        token_delay=token_delay,
        max_model_len=max_model_len,
    )
    model, engine = load(settings)
    config = config or ServerConfig()
    if tmp_path is not None and config.prompt_log is None:
        config.prompt_log = tmp_path / "prompts.jsonl"
    others = []
    for more in more_models:
        other_model, other_engine = load(more)
        others.append(Pipeline(other_model, other_engine, prefix_watch=PrefixWatch()))
    state = ServerState(
        Pipeline(model, engine, prefix_watch=PrefixWatch()),
        ReasoningSeal(SERVER_KEY),
        config,
        other_pipelines=tuple(others),
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            (wrap_app or (lambda app: app))(create_app(state)),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            **(uvicorn_options or {}),
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 120  # the embedded engine loads its weights at start
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def prompt_log(state: ServerState) -> list[dict]:
    path = state.config.prompt_log
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


class WrappedEngine:
    """An engine that delegates to another; tests override `generate` to inject
    failures or record what happened."""

    def __init__(self, inner):
        self.inner = inner

    def info(self):
        return self.inner.info()

    async def start(self):
        return None

    async def close(self):
        return None

    def generate(self, request):
        return self.inner.generate(request)


def send_and_vanish(url: str, path: str, body: dict) -> None:
    """Send a complete request on a raw socket and close it without reading a byte."""
    parts = urlsplit(url)
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(head + payload)  # and close without reading a byte
