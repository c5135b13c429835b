"""The session identity engine requests carry for the fleet's router (llm-d,
vllm-router, Dynamo): what each harness's request becomes on the wire, captured by a
loopback completions server behind a real tokenyard server, for every API."""

from __future__ import annotations

import json

import httpx
import pytest

from tokenyard.conversation import Conversation
from tokenyard.engines.remote import RemoteEngine
from tokenyard.engines.session_headers import SessionForwarding, header_value, session_headers
from tokenyard.server.loading import session_forwarding
from tokenyard.server.pipeline import ServedModel
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir
from .test_remote import WINDOW, StandIn, running, running_server_with_engine, served_model

SESSION = "5b0c7f2e-9d1a-4c3e-8f00-1234567890ab"
PROMPT = "Refactor the parser in src/tokenyard/parsing and keep every test green."
# Headers tokenyard adds for routers; everything else on an engine request is its own.
ROUTER_HEADERS = {"x-session-id", "x-claude-code-session-id", "x-session-affinity", "session-id", "session_id"}


@pytest.fixture(scope="module")
def qwen3() -> ServedModel:
    return served_model(model_dir("qwen3"))


@pytest.fixture
def capture():
    stand_in = StandIn()
    with running(stand_in.app()) as url:
        stand_in.url = url
        yield stand_in


def engine_headers(
    capture: StandIn,
    model: ServedModel,
    path: str,
    body: dict,
    headers: dict[str, str],
    forwarding: SessionForwarding | None = None,
) -> dict[str, str]:
    """The router headers of the one engine request a client request to `path` made."""
    kwargs = {} if forwarding is None else {"session_forwarding": forwarding}
    engine = RemoteEngine(capture.url, model="normal", max_model_len=WINDOW, **kwargs)
    with running_server_with_engine(model, engine) as (url, _):
        response = httpx.post(url + path, json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert len(capture.headers) == 1
    sent = capture.headers[-1]
    assert sent["x-request-id"], "the request id still goes along"
    for value in sent.values():
        assert PROMPT not in value and "Refactor" not in value, "prompt text never goes into a header"
    return {name: value for name, value in sent.items() if name in ROUTER_HEADERS}


def anthropic(**extra) -> dict:
    return {"model": "test/model", "max_tokens": 20, "messages": [{"role": "user", "content": PROMPT}], **extra}


def chat(**extra) -> dict:
    return {"model": "test/model", "max_tokens": 20, "messages": [{"role": "user", "content": PROMPT}], **extra}


def responses(**extra) -> dict:
    return {"model": "test/model", "max_output_tokens": 20, "input": PROMPT, **extra}


# ---------------------------------------------------------------- each harness, at the wire


def test_claude_code_main_agent(capture, qwen3):
    sent = engine_headers(capture, qwen3, "/v1/messages", anthropic(), {"x-claude-code-session-id": SESSION})
    assert sent == {"x-session-id": SESSION, "x-claude-code-session-id": SESSION}


def test_a_claude_code_subagent_is_its_own_stream_under_the_session(capture, qwen3):
    headers = {
        "x-claude-code-session-id": SESSION,
        "x-claude-code-agent-id": "agent-7",
        "x-claude-code-parent-agent-id": "main",
    }
    sent = engine_headers(capture, qwen3, "/v1/messages", anthropic(), headers)
    # Its prompts extend each other, not the main agent's: its own affinity key; the
    # session header llm-d groups a user's requests by stays the session.
    assert sent == {"x-session-id": f"{SESSION}/agent-7", "x-claude-code-session-id": SESSION}


def test_anthropic_metadata_user_id(capture, qwen3):
    user_id = json.dumps({"device_id": "d", "account_uuid": "", "session_id": SESSION})
    sent = engine_headers(capture, qwen3, "/v1/messages", anthropic(metadata={"user_id": user_id}), {})
    assert sent == {"x-session-id": SESSION}


def test_anthropic_metadata_naming_a_user_keeps_that_user_together(capture, qwen3):
    sent = engine_headers(capture, qwen3, "/v1/messages", anthropic(metadata={"user_id": "user-42"}), {})
    assert sent == {"x-session-id": "user-42"}


def test_codex_thread_and_its_session_header(capture, qwen3):
    headers = {"thread-id": "thr-1", "session-id": "ses-1", "originator": "codex_exec"}
    sent = engine_headers(capture, qwen3, "/v1/responses", responses(prompt_cache_key="thr-1"), headers)
    assert sent == {"x-session-id": "thr-1", "session-id": "ses-1"}


def test_a_codex_subagent_thread_is_keyed_under_its_parent(capture, qwen3):
    headers = {"thread-id": "thr-2", "x-codex-parent-thread-id": "thr-1"}
    sent = engine_headers(capture, qwen3, "/v1/responses", responses(), headers)
    assert sent == {"x-session-id": "thr-1/thr-2"}


def test_responses_prompt_cache_key_then_user(capture, qwen3):
    # OpenClaw on openai-responses sends its session key as prompt_cache_key.
    sent = engine_headers(capture, qwen3, "/v1/responses", responses(prompt_cache_key="agent:main:s1", user="u"), {})
    assert sent == {"x-session-id": "agent:main:s1"}
    capture.headers.clear()
    sent = engine_headers(capture, qwen3, "/v1/responses", responses(user="user-9"), {})
    assert sent == {"x-session-id": "user-9"}


def test_chat_session_header_and_opencodes_affinity_header(capture, qwen3):
    headers = {"x-session-id": "s-chat", "x-session-affinity": "oc-1"}
    sent = engine_headers(capture, qwen3, "/v1/chat/completions", chat(), headers)
    assert sent == {"x-session-id": "s-chat", "x-session-affinity": "oc-1"}


def test_chat_user_when_there_is_no_session(capture, qwen3):
    sent = engine_headers(capture, qwen3, "/v1/chat/completions", chat(user="user-3"), {})
    assert sent == {"x-session-id": "user-3"}


def test_no_session_no_router_headers(capture, qwen3):
    assert engine_headers(capture, qwen3, "/v1/chat/completions", chat(), {}) == {}


def test_renamed_header_and_harness_headers_off(capture, qwen3):
    forwarding = SessionForwarding(("x-dynamo-session-id", "x-user-id"), harness_headers=False)
    sent = engine_headers(
        capture, qwen3, "/v1/messages", anthropic(), {"x-claude-code-session-id": SESSION}, forwarding
    )
    assert sent == {}
    assert capture.headers[-1]["x-dynamo-session-id"] == SESSION
    assert capture.headers[-1]["x-user-id"] == SESSION


def test_forwarding_off(capture, qwen3):
    forwarding = SessionForwarding((), harness_headers=False)
    sent = engine_headers(
        capture, qwen3, "/v1/messages", anthropic(), {"x-claude-code-session-id": SESSION}, forwarding
    )
    assert sent == {}


def test_priority_goes_in_the_body_for_vllms_priority_scheduling(capture, qwen3):
    engine = RemoteEngine(capture.url, model="normal", max_model_len=WINDOW, forward_priority=True)
    with running_server_with_engine(qwen3, engine) as (url, _):
        response = httpx.post(url + "/v1/messages", json=anthropic(), headers={"x-agent-priority": "5"}, timeout=30)
    assert response.status_code == 200
    assert capture.bodies[-1]["priority"] == -5  # vLLM serves lower values first


# ---------------------------------------------------------------- values and settings


@pytest.mark.parametrize(
    "value",
    ["a" * 300, "séance", "two\tparts", " padded", "line\r\nX-Injected: 1"],
)
def test_values_that_are_not_short_visible_ascii_go_as_a_stable_digest(value):
    digest = header_value(value)
    assert digest.startswith("sha256-") and len(digest) == 39 and digest.isascii() and digest.isprintable()
    assert header_value(value) == digest
    conversation = Conversation(model="m", session_key=value)
    assert session_headers(conversation, SessionForwarding()) == {"x-session-id": digest}


def test_ordinary_ids_go_as_they_are():
    for value in (SESSION, "thr-1/thr-2", "agent:main:s1", "user-42"):
        assert header_value(value) == value


@pytest.mark.parametrize(
    ("setting", "names"),
    [
        ("x-session-id", ("x-session-id",)),
        ("X-Session-ID, x-dynamo-session-id", ("x-session-id", "x-dynamo-session-id")),
        ("none", ()),
        ("", ()),
    ],
)
def test_the_setting(setting, names):
    assert session_forwarding(ModelSettings(session_header=setting)).headers == names


def test_a_bad_header_name_is_refused_at_start():
    with pytest.raises(ValueError, match="not an HTTP header name"):
        session_forwarding(ModelSettings(session_header="x session"))
