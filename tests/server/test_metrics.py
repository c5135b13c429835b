"""`/metrics` through a real server fronting a pool of two simulated workers (KV
events over loopback ZMQ): per-request, per-session and per-worker series appear
with their labels after a session's two turns; agent hints are read on the way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anthropic
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tokenyard.routing.pool import EnginePool
from tokenyard.server.loading import load
from tokenyard.settings import ModelSettings

from . import serving

BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def samples(url: str) -> dict[tuple[str, frozenset], float]:
    text = httpx.get(f"{url}/metrics").text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(found, name: str, **labels) -> float:
    return sum(v for (n, ls), v in found.items() if n == name and set(labels.items()) <= ls)


@pytest.fixture
def pooled(monkeypatch):
    real_load = serving.load

    def load_pool(settings: ModelSettings):
        settings.engine, settings.workers, settings.time_scale = "simulated", 2, 0.0
        return real_load(settings)

    monkeypatch.setattr(serving, "load", load_pool)
    assert real_load is load


def test_metrics_cover_requests_sessions_and_workers(pooled, tmp_path):
    with serving.running_server("qwen3", tmp_path=tmp_path) as (url, state):
        assert isinstance(state.pipeline.engine, EnginePool)
        before = samples(url)  # the registry is the process's: other tests' servers counted too
        client = anthropic.Anthropic(
            base_url=url, api_key="x", max_retries=0, default_headers={"x-claude-code-session-id": "sess-1"}
        )
        history = [{"role": "user", "content": "List the files."}]
        first = client.messages.create(
            model="test/model", max_tokens=256, system="You are a coding agent.", tools=[BASH], messages=history,
            extra_body={"nvext": {"agent_hints": {"priority": 3, "osl": 64}}},
        )  # fmt: skip
        call = next(block for block in first.content if block.type == "tool_use")
        history += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "README.md"}]},
        ]
        with client.messages.stream(
            model="test/model", max_tokens=256, system="You are a coding agent.", tools=[BASH], messages=history
        ) as stream:
            stream.get_final_message()
        after = samples(url)
    found = {key: value - before.get(key, 0) for key, value in after.items()}
    labels = {"api": "anthropic", "model": "test/model"}
    assert total(found, "tokenyard_time_to_first_token_seconds_count", **labels) == 2
    assert total(found, "tokenyard_request_duration_seconds_count", **labels) == 2
    assert total(found, "tokenyard_prompt_tokens_total", **labels) > 0
    assert total(found, "tokenyard_cached_tokens_total", **labels) > 0
    assert total(found, "tokenyard_prefix_reuse_ratio_count", **labels) == 1
    assert total(found, "tokenyard_queue_wait_seconds_count") >= 2
    assert total(after, "tokenyard_routing_decisions_total") == 2
    # The second turn went where the first left its prefix, found through the KV events.
    assert total(after, "tokenyard_routing_decisions_total", reason="kv-overlap") == 1
    assert total(after, "tokenyard_routing_overlap_tokens_total") > 0
    assert total(after, "tokenyard_worker_healthy") == 2
    assert total(after, "tokenyard_worker_cached_blocks") > 0


def test_bad_agent_hints_are_refused_in_the_apis_error_shape(pooled, tmp_path):
    with serving.running_server("qwen3", tmp_path=tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="agent hints"):
            client.messages.create(
                model="test/model", max_tokens=16, messages=[{"role": "user", "content": "hi"}],
                extra_headers={"x-agent-priority": "urgent"},
            )  # fmt: skip


def test_the_grafana_dashboard_only_uses_exported_series(pooled, tmp_path):
    dashboard = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "tokenyard.json"
    exprs = [t["expr"] for panel in json.loads(dashboard.read_text())["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"tokenyard_\w+", expr)}
    with serving.running_server("qwen3", tmp_path=tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        client.messages.create(model="test/model", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
        exported = {name for name, _ in samples(url)}
    # Series that have seen no observation yet still export (histograms, labelled after first use).
    assert used <= exported | {"tokenyard_prefix_divergences_total", "tokenyard_engine_errors_total"}, used - exported


@pytest.mark.parametrize(
    ("api", "path", "body"),
    [
        ("anthropic", "/v1/messages", {"max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]}),
        ("openai_chat", "/v1/chat/completions", {"max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]}),
        ("openai_responses", "/v1/responses", {"max_output_tokens": 16, "input": "Hi"}),
    ],
)
def test_each_generation_route_counts_under_its_own_api(tmp_path, api, path, body):
    # These routes skip the router (app.Dispatch): the label must be named there too.
    with serving.running_server("qwen3", tmp_path=tmp_path) as (url, state):
        model = state.model_ids()[0]
        before = samples(url)
        for stream in (False, True):
            response = httpx.post(f"{url}{path}", json={**body, "model": model, "stream": stream}, timeout=60)
            assert response.status_code == 200, response.text
        found = {key: value - before.get(key, 0) for key, value in samples(url).items()}
    assert total(found, "tokenyard_request_duration_seconds_count", api=api, model=model) == 2
    assert total(found, "tokenyard_request_duration_seconds_count", api="other") == 0
