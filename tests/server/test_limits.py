"""What is refused before any route runs (Host, Origin/CORS, content type, header
size and count), the HTTP server's own limits (head deadline, open-file limit), and
the queue wait limit; against a real uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import resource
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tokenyard.faults import ENGINE_FAILED_MESSAGE, EngineError
from tokenyard.server.app import ServerConfig
from tokenyard.server.limits import is_loopback_host, server_options
from tokenyard.settings import ServeSettings

from .serving import WrappedEngine, running_server

JSON = {"content-type": "application/json"}
COUNT = {"model": "test/model", "messages": [{"role": "user", "content": "hi"}]}
TOKENIZE = {"prompt": "hi"}


def post(url, path, body, **headers):
    return httpx.post(f"{url}{path}", content=json.dumps(body), headers={**JSON, **headers}, timeout=30)


def assert_anthropic_error(response, status, kind):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == kind and body["error"]["message"]


def assert_openai_error(response, status):
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"]


@pytest.mark.parametrize(
    "host,loopback",
    [
        ("localhost", True),
        ("localhost:8000", True),
        ("127.0.0.1:8000", True),
        ("127.8.9.1", True),
        ("[::1]:8000", True),
        ("[::1]", True),
        ("app.localhost:3000", True),
        ("attacker.example", False),
        ("attacker.example:8000", False),
        ("10.0.0.5:8000", False),
        ("localhost.attacker.example", False),
        ("[::ffff:10.0.0.1]:80", False),
    ],
)
def test_loopback_hosts(host, loopback):
    assert is_loopback_host(host) is loopback


def test_foreign_host_is_refused_without_an_api_key():
    with running_server("qwen3") as (url, _):
        assert_anthropic_error(
            post(url, "/v1/messages/count_tokens", COUNT, host="attacker.example"), 403, "permission_error"
        )
        assert_openai_error(post(url, "/v1/tokenize", TOKENIZE, host="attacker.example:8000"), 403)
        assert httpx.get(f"{url}/health", headers={"host": "attacker.example"}, timeout=30).status_code == 403
        assert post(url, "/v1/messages/count_tokens", COUNT, host="localhost:1234").status_code == 200


def test_allowed_hosts_and_api_key_open_other_names():
    config = ServerConfig(allowed_hosts="gpu-box.lan")
    with running_server("qwen3", config=config) as (url, _):
        assert post(url, "/v1/tokenize", TOKENIZE, host="gpu-box.lan:8000").status_code == 200
        assert post(url, "/v1/tokenize", TOKENIZE, host="other.lan").status_code == 403
    with running_server("qwen3", config=ServerConfig(api_key="k")) as (url, _):
        # With a key the server is meant to be reached by name: the key decides.
        assert_anthropic_error(
            post(url, "/v1/messages/count_tokens", COUNT, host="gpu-box.lan"), 401, "authentication_error"
        )
        assert (
            post(url, "/v1/messages/count_tokens", COUNT, host="gpu-box.lan", **{"x-api-key": "k"}).status_code == 200
        )


def test_a_repeated_header_is_read_by_its_first_value_at_every_step():
    # The request guard makes the headers' dict once; auth and the routes read it.
    def send(path, body, *headers):
        raw = [("content-type", "application/json"), *headers]
        return httpx.post(f"{url}{path}", content=json.dumps(body), headers=raw, timeout=30)

    with running_server("qwen3", config=ServerConfig(api_key="k")) as (url, _):
        for path, body in [("/v1/messages/count_tokens", COUNT), ("/v1/messages", {**COUNT, "max_tokens": 1})]:
            assert send(path, body, ("x-api-key", "k"), ("x-api-key", "wrong")).status_code == 200
            assert send(path, body, ("x-api-key", "wrong"), ("x-api-key", "k")).status_code == 401
    with running_server("qwen3") as (url, _):
        assert send("/v1/tokenize", TOKENIZE, ("origin", "https://evil.example"), ("origin", url)).status_code == 403
        assert send("/v1/tokenize", TOKENIZE, ("origin", url), ("origin", "https://evil.example")).status_code == 200


def test_cross_origin_browser_requests_are_refused():
    with running_server("qwen3") as (url, _):
        # The classic CSRF shape: a "simple" cross-origin POST needs no preflight.
        forged = httpx.post(
            f"{url}/v1/messages/count_tokens",
            content=json.dumps(COUNT),
            headers={"content-type": "text/plain", "origin": "https://evil.example"},
            timeout=30,
        )
        assert_anthropic_error(forged, 403, "permission_error")
        assert "access-control-allow-origin" not in forged.headers
        assert post(url, "/v1/tokenize", TOKENIZE, origin="http://localhost:3000").status_code == 403
        assert post(url, "/v1/tokenize", TOKENIZE, **{"sec-fetch-site": "cross-site"}).status_code == 403
        preflight = httpx.options(
            f"{url}/v1/messages",
            headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
            timeout=30,
        )
        assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
        # Same-origin and non-browser clients are served.
        assert post(url, "/v1/tokenize", TOKENIZE, origin=url).status_code == 200


def test_allowed_origins_get_cors():
    origin = "http://localhost:3000"
    with running_server("qwen3", config=ServerConfig(allowed_origins=origin)) as (url, _):
        preflight = httpx.options(
            f"{url}/v1/messages",
            headers={
                "origin": origin,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, x-api-key",
            },
            timeout=30,
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == origin
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert "x-api-key" in preflight.headers["access-control-allow-headers"]
        response = post(url, "/v1/messages/count_tokens", COUNT, origin=origin)
        assert response.status_code == 200
        assert (
            response.headers["access-control-allow-origin"] == origin and "origin" in response.headers["vary"].lower()
        )
        refused = post(url, "/v1/messages/count_tokens", COUNT, origin="http://localhost:4000")
        assert refused.status_code == 403


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_json_endpoints_require_a_json_content_type(content_type):
    headers = {"content-type": content_type} if content_type else {}
    with running_server("qwen3") as (url, _):
        for path in ("/v1/messages", "/v1/messages/count_tokens"):
            response = httpx.post(f"{url}{path}", content=json.dumps(COUNT), headers=headers, timeout=30)
            assert_anthropic_error(response, 415, "invalid_request_error")
        for path in ("/v1/chat/completions", "/v1/responses", "/v1/tokenize"):
            response = httpx.post(f"{url}{path}", content=json.dumps(COUNT), headers=headers, timeout=30)
            assert_openai_error(response, 415)
        good = {"content-type": "application/json; charset=utf-8"}
        assert (
            httpx.post(f"{url}/v1/tokenize", content=json.dumps(TOKENIZE), headers=good, timeout=30).status_code == 200
        )


def test_unknown_paths_answer_json_in_the_api_envelope():
    with running_server("qwen3") as (url, _):
        assert_openai_error(httpx.get(f"{url}/v1/nope", timeout=30), 404)
        assert_openai_error(httpx.post(f"{url}/nope", content="{}", headers=JSON, timeout=30), 404)
        assert_anthropic_error(
            httpx.post(f"{url}/v1/messages/x", content="{}", headers=JSON, timeout=30), 404, "not_found_error"
        )
        assert_anthropic_error(httpx.get(f"{url}/v1/messages", timeout=30), 405, "invalid_request_error")


def test_too_many_headers_are_refused():
    with running_server("qwen3") as (url, _):
        headers = {f"x-h{i}": "v" for i in range(300)}
        assert_openai_error(httpx.get(f"{url}/health", headers=headers, timeout=30), 431)


def raw_connection(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def test_the_http_limits_are_the_serve_settings_given():
    # Declared once (settings.py): uvicorn's options are read from the settings, with
    # no default of their own.
    settings = ServeSettings(
        max_header_bytes=1000,
        header_timeout=2.0,
        keep_alive_timeout=3.0,
        send_timeout=4.0,
        limit_concurrency=5,
        ws_ping_interval=6.0,
    )
    options = server_options(settings)
    protocol = options["http"]
    assert (protocol.max_header_bytes, protocol.header_timeout, protocol.send_timeout) == (1000, 2.0, 4.0)
    assert (options["timeout_keep_alive"], options["limit_concurrency"]) == (3.0, 5)
    assert options["ws_ping_interval"] == options["ws_ping_timeout"] == 6.0
    assert server_options(ServeSettings(ws_ping_interval=0))["ws_ping_interval"] is None


def test_oversized_request_head_is_refused_before_it_is_read():
    limits = ServeSettings(max_header_bytes=16 * 1024)
    with running_server("qwen3", uvicorn_options=server_options(limits)) as (url, _):
        sock = raw_connection(url)
        # 256 KiB of one header and no end of head: a server that reads heads in full
        # would wait for the rest; this one refuses once the cap is passed.
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (256 * 1024))
        reply = sock.recv(65536)
        assert reply.startswith(b"HTTP/1.1 431")
        assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "invalid_request_error"
        sock.close()
        # Heads are counted per request: many requests on one kept-alive connection
        # together send more than the cap, each under it.
        with httpx.Client(timeout=30) as client:
            padding = {"x-pad": "p" * 8 * 1024}
            assert [client.get(f"{url}/health", headers=padding).status_code for _ in range(4)] == [200] * 4
        assert httpx.get(f"{url}/health", timeout=30).status_code == 200


def test_idle_partial_heads_neither_starve_requests_nor_stay_open():
    """200 connections hold partial heads while real requests are served; each
    partial head is closed at the head deadline."""
    limits = ServeSettings(header_timeout=1.0)
    with running_server("qwen3", uvicorn_options=server_options(limits)) as (url, _):
        idle = []
        for _ in range(200):
            sock = raw_connection(url)
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            idle.append(sock)
        served = [httpx.get(f"{url}/health", timeout=30).status_code for _ in range(6)]
        served += [post(url, "/v1/tokenize", TOKENIZE).status_code for _ in range(6)]
        assert served == [200] * 12
        # Each idle connection is closed by the server (recv returns EOF).
        for sock in idle:
            try:
                assert sock.recv(1024) == b""
            except ConnectionResetError:
                pass
            sock.close()
        # A head that completes in time on a slow connection is still served.
        sock = raw_connection(url)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")
        sock.close()


def test_open_file_limit_is_raised_to_the_hard_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("hard open-file limit too low to lower the soft one")
    code = "from tokenyard.server.limits import raise_open_file_limit; print(*raise_open_file_limit())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    before, after = int(out[0]), int(out[1])
    assert before == 256 and after == (hard if hard != resource.RLIM_INFINITY else after) and after > 256


def test_requests_waiting_past_the_queue_wait_limit_are_refused_with_retry_after(tmp_path):
    config = ServerConfig(max_concurrency=1, max_queue_wait=0.2)
    with running_server("qwen3", config=config, token_delay=0.2, tmp_path=tmp_path) as (url, state):
        body = {
            "model": "test/model",
            "max_tokens": 200,
            "messages": [{"role": "user", "content": "write a long story"}],
        }
        first: list[httpx.Response] = []
        thread = threading.Thread(target=lambda: first.append(post(url, "/v1/messages", body)))
        thread.start()
        try:
            while state.slots is None or not state.slots.locked():
                time.sleep(0.01)
            refused = post(url, "/v1/messages", body)
            assert_anthropic_error(refused, 529, "overloaded_error")
            assert int(refused.headers["retry-after"]) >= 1
            chat = {"model": "test/model", "max_tokens": 200, "messages": [{"role": "user", "content": "hi"}]}
            refused = post(url, "/v1/chat/completions", chat)
            assert_openai_error(refused, 429)
            assert refused.json()["error"]["code"] == "overloaded" and int(refused.headers["retry-after"]) >= 1
        finally:
            thread.join()
        assert first[0].status_code == 200


class _LeakyEngine(WrappedEngine):
    """Fails the way a remote engine does: its message names its URL and quotes
    the upstream error."""

    async def generate(self, request):
        raise EngineError("http://10.1.2.3:8001/v1/completions answered HTTP 500: CUDA out of memory at 0xdeadbeef")
        yield  # pragma: no cover  (an async generator)


@pytest.mark.parametrize("stream", [False, True])
def test_engine_failures_never_show_clients_engine_urls_or_upstream_text(stream, caplog):
    with running_server("qwen3") as (url, state):
        state.pipeline.engine = _LeakyEngine(state.pipeline.engine)
        bodies = {
            "/v1/messages": {"model": "test/model", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
            "/v1/chat/completions": {"model": "test/model", "messages": [{"role": "user", "content": "hi"}]},
            "/v1/responses": {"model": "test/model", "input": "hi"},
        }
        with caplog.at_level(logging.WARNING, logger="tokenyard"):
            for path, body in bodies.items():
                response = post(url, path, {**body, "stream": stream})
                assert response.status_code == (200 if stream else 502), response.text
                assert ENGINE_FAILED_MESSAGE in response.text
                assert "10.1.2.3" not in response.text and "CUDA" not in response.text
        assert "http://10.1.2.3:8001" in caplog.text  # the operator still sees it


def test_a_client_that_goes_away_is_an_info_line_not_a_traceback(tmp_path, caplog):
    body = {"model": "test/model", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with running_server("qwen3", token_delay=0.05, tmp_path=tmp_path) as (url, state):
        with caplog.at_level(logging.INFO):
            for _ in range(5):
                with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
                    next(response.iter_bytes())  # the stream started; now hang up
            while state.busy:
                time.sleep(0.01)
            assert post(url, "/v1/messages", {**body, "stream": False}).status_code == 200
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert problems == [], [r.getMessage() for r in problems]
    gone = [r for r in caplog.records if r.levelno == logging.INFO and "client went away" in r.getMessage()]
    assert len(gone) == 5
