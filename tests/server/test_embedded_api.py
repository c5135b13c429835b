"""The embedded CPU engine through the Anthropic Messages API: a real SmolLM2
generation, and a second request sharing a long prefix that reuses the KV cache."""

from __future__ import annotations

import json
import time

import anthropic
import pytest

from ..fixtures import fixtures_root
from .serving import running_server

pytest.importorskip(
    "torch", reason="the embedded engine needs: pip install torch==2.13.0 && pip install -e '.[embedded]'"
)
pytest.importorskip("accelerate", reason="the embedded engine needs: pip install -e '.[embedded]'")

pytestmark = pytest.mark.slow

SYSTEM = (
    "You are a concise assistant for a software team. Answer in one short sentence. "
    + "The team maintains a Python web service with a PostgreSQL database, a task queue and a React front end. " * 40
)


def streamed(client: anthropic.Anthropic, question: str) -> tuple[str, float, object]:
    started = time.monotonic()
    first = None
    with client.messages.stream(
        model="smollm2", max_tokens=24, system=SYSTEM, messages=[{"role": "user", "content": question}]
    ) as stream:
        for event in stream:
            if first is None and event.type in ("content_block_delta", "message_delta"):
                first = time.monotonic() - started
        final = stream.get_final_message()
    assert final.stop_reason in ("end_turn", "max_tokens")
    return "".join(b.text for b in final.content if b.type == "text"), first, final.usage


def test_smollm2_answers_and_reuses_the_shared_prefix(tmp_path):
    from tokenyard.models.resolve import resolve_model_dir

    folder = resolve_model_dir("smollm2", fixtures_root() / "embedded-cache")
    with running_server(None, model_path=folder, engine="embedded", names=("smollm2",), tmp_path=tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, timeout=600)
        text, cold_ttft, cold_usage = streamed(client, "Which database does the service use?")
        # What the model answers (even whether it answers) is its own business.
        cold_prompt = cold_usage.input_tokens + cold_usage.cache_creation_input_tokens
        assert cold_prompt > 800 and 0 <= cold_usage.output_tokens <= 24
        # The engine stores the prompt's KV for reuse, but the request marks no cache
        # breakpoint: on Anthropic's accounting all of it is input_tokens.
        assert cold_usage.input_tokens == cold_prompt and cold_usage.cache_read_input_tokens == 0
        second, warm_ttft, warm_usage = streamed(client, "Which front-end library does the team use?")
        assert warm_usage.cache_read_input_tokens > 800
        warm_prompt = (
            warm_usage.input_tokens + warm_usage.cache_creation_input_tokens + warm_usage.cache_read_input_tokens
        )
        assert warm_prompt > cold_prompt - 50
        print(
            f"\nSmolLM2 via /v1/messages, {cold_prompt} prompt tokens: cold TTFT {cold_ttft:.2f}s; "
            f"second request, {warm_usage.cache_read_input_tokens} tokens from the prefix cache: TTFT {warm_ttft:.2f}s"
        )
        print(f"answers: {text!r} / {second!r}")


def test_a_claude_code_sized_prompt_fits_the_default_model(tmp_path):
    # SmolLM2 is trained to 8K; Claude Code's system prompt and tools alone are ~12K
    # tokens. The built-in model's window is extended (YaRN) so such a request works.
    from tokenyard.models.resolve import resolve_model_dir

    folder = resolve_model_dir("smollm2", fixtures_root() / "embedded-cache")
    with running_server(None, model_path=folder, engine="embedded", names=("smollm2",), tmp_path=tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, timeout=600)
        reply = client.messages.create(
            model="smollm2", max_tokens=4, system=SYSTEM * 12, messages=[{"role": "user", "content": "Say hello."}]
        )
        prompt_tokens = reply.usage.input_tokens + reply.usage.cache_creation_input_tokens
        assert prompt_tokens > 11_000 and reply.stop_reason in ("end_turn", "max_tokens")
        print(f"\nSmolLM2 answered a {prompt_tokens}-token prompt")


WEATHER = {
    "type": "object",
    "properties": {
        "city": {"enum": ["Paris", "Rome", "Oslo"]},
        "sunny": {"type": "boolean"},
        "degrees": {"type": "integer", "minimum": -30, "maximum": 50},
    },
    "required": ["city", "sunny", "degrees"],
    "additionalProperties": False,
}


def test_smollm2_guided_json_matches_the_schema(tmp_path):
    """Guided decoding for real (llguidance token masks): SmolLM2, which never sees the
    schema, answers with JSON the schema accepts, and ends there; `json_object` gives
    an object."""
    import jsonschema
    import openai

    from tokenyard.models.resolve import resolve_model_dir

    folder = resolve_model_dir("smollm2", fixtures_root() / "embedded-cache")
    with running_server(None, model_path=folder, engine="embedded", names=("smollm2",), tmp_path=tmp_path) as (url, _):
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=600)
        messages = [{"role": "user", "content": "What is the weather like in Rome today?"}]
        schema_format = {"type": "json_schema", "json_schema": {"name": "weather", "schema": WEATHER}}
        reply = client.chat.completions.create(
            model="smollm2", messages=messages, max_tokens=64, temperature=0, response_format=schema_format
        )
        assert reply.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(reply.choices[0].message.content or ""), WEATHER)
        reply = client.chat.completions.create(
            model="smollm2", messages=messages, max_tokens=64, temperature=0, response_format={"type": "json_object"}
        )
        if reply.choices[0].finish_reason == "stop":  # an object may be cut by the token cap: a length finish
            assert isinstance(json.loads(reply.choices[0].message.content or ""), dict)
