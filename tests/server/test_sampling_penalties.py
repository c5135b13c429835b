"""Chat's frequency and presence penalties reach the engine; a request without its own
frequency penalty gets the served model's declared one (SmolLM2's record)."""

from __future__ import annotations

import httpx

from .serving import WrappedEngine, running_server

SCRIPT = [[{"text": "Hello there."}]]


class _Recording(WrappedEngine):
    def __init__(self, inner):
        super().__init__(inner)
        self.requests = []

    async def generate(self, request):
        self.requests.append(request)
        async for chunk in self.inner.generate(request):
            yield chunk


def _chat(url: str, **extra) -> httpx.Response:
    body = {"model": "test/model", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], **extra}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)


def test_a_requests_penalties_reach_the_engine_and_override_the_models_default(tmp_path):
    with running_server("llama-3.1", script=SCRIPT * 3, tmp_path=tmp_path) as (url, state):
        engine = _Recording(state.pipeline.engine)
        state.pipeline.engine = engine
        state.pipeline.model.frequency_penalty = 0.5  # a model that declares one
        assert _chat(url, frequency_penalty=1.25, presence_penalty=-0.5).status_code == 200
        assert _chat(url).status_code == 200
        assert _chat(url, frequency_penalty=0).status_code == 200
    penalties = [(r.frequency_penalty, r.presence_penalty) for r in engine.requests]
    assert penalties == [(1.25, -0.5), (0.5, None), (0.0, None)]


def test_a_penalty_out_of_range_is_a_400_naming_it(tmp_path):
    with running_server("llama-3.1", script=SCRIPT, tmp_path=tmp_path) as (url, _):
        response = _chat(url, presence_penalty=2.5)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "presence_penalty"
