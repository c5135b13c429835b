"""Several models in one frontend: a real server on loopback serving a Qwen3-Coder
model and a Llama 3.1 model (two real tokenizers and chat templates, each behind its
own scripted engine), through the official `anthropic` and `openai` SDKs.
Requests route by `model` or alias on every API; count_tokens and tokenize use the
named model's tokenizer; `/v1/models` lists both with their own windows; metrics
carry the model's name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import anthropic
import httpx
import openai
import pytest

from tokenyard.prompting.tokenizer import Tokenizer
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir
from .serving import free_port, prompt_log, running_server
from .test_anthropic_api import BASH, SYSTEM
from .test_metrics import samples, total
from .test_openai_responses import codex_body, user

MAIN, MAIN_ALIAS, FAST, FAST_ALIAS = "coder", "claude-sonnet-4-6", "fast", "claude-haiku-4-5"


def _fast_model() -> ModelSettings:
    return ModelSettings(
        model=str(model_dir("llama-3.1")),
        engine="scripted",
        served_model_names=(FAST, FAST_ALIAS),
        max_model_len=8192,
    )


@pytest.fixture
def two_models(tmp_path):
    with running_server(
        "qwen3-coder",
        names=(MAIN, MAIN_ALIAS),
        reasoning="qwen3",
        max_model_len=32768,
        tmp_path=tmp_path,
        more_models=[_fast_model()],
    ) as served:
        yield served


def _anthropic(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)


def test_models_list_every_model_with_its_own_window(two_models):
    url, _ = two_models
    listed = _anthropic(url).models.list()
    assert [m.id for m in listed.data] == [MAIN, MAIN_ALIAS, FAST, FAST_ALIAS]
    windows = {m.id: m.max_input_tokens for m in listed.data}
    assert windows == {MAIN: 32768, MAIN_ALIAS: 32768, FAST: 8192, FAST_ALIAS: 8192}
    # An alias names its model: that is how a launcher tells a second model from an alias.
    assert {m.id: m.display_name for m in listed.data} == {MAIN: MAIN, MAIN_ALIAS: MAIN, FAST: FAST, FAST_ALIAS: FAST}
    thinking = {m.id: m.capabilities.thinking.supported for m in listed.data}
    assert thinking[MAIN] is True and thinking[FAST] is False  # qwen3 reasoning parser vs none
    models = _openai(url).models.list()
    assert [(m.id, m.model_extra["max_model_len"]) for m in models.data] == [
        (MAIN, 32768),
        (MAIN_ALIAS, 32768),
        (FAST, 8192),
        (FAST_ALIAS, 8192),
    ]
    assert _openai(url).models.retrieve(FAST_ALIAS).model_extra["max_model_len"] == 8192
    assert _anthropic(url).models.retrieve(FAST).max_input_tokens == 8192


def _render_markers(record: dict) -> str:
    text = record["prompt_text"]
    if "<|im_start|>" in text:
        return "qwen"
    if "<|start_header_id|>" in text:
        return "llama"
    return "?"


def test_each_api_routes_by_model_and_alias(two_models):
    url, state = two_models
    messages = [{"role": "user", "content": "List the files."}]
    c = _anthropic(url)
    for model in (MAIN, FAST_ALIAS, MAIN_ALIAS, FAST):
        answer = c.messages.create(model=model, max_tokens=64, system=SYSTEM, messages=messages, tools=[BASH])
        assert answer.model == model and answer.content
    chat = _openai(url).chat.completions.create(model=FAST, messages=[{"role": "user", "content": "hi"}])
    assert chat.model == FAST and chat.choices[0].message
    with _openai(url).responses.stream(**codex_body([user("list the files")], model=FAST_ALIAS)) as s:
        list(s)
        response = s.get_final_response()
    assert response.model == FAST_ALIAS and response.output
    records = prompt_log(state)
    assert [_render_markers(r) for r in records] == ["qwen", "llama", "qwen", "llama", "llama", "llama"]


def test_the_small_model_has_its_own_engine_and_prefix_history(two_models):
    url, state = two_models
    fast = state.pipeline_for(FAST)
    assert fast is state.pipeline_for(FAST_ALIAS) and fast is not state.pipeline
    assert fast.engine is not state.pipeline.engine
    assert fast.model.tokenizer is not state.pipeline.model.tokenizer


def test_count_tokens_and_tokenize_use_the_named_models_tokenizer(two_models):
    url, state = two_models
    body = {"system": SYSTEM, "messages": [{"role": "user", "content": "Count me, please: ünïcödé and 12345."}]}
    c = _anthropic(url)
    counts = {model: c.messages.count_tokens(model=model, **body).input_tokens for model in (MAIN, FAST)}
    assert counts[MAIN] != counts[FAST]
    for model in (MAIN, FAST):
        c.messages.create(model=model, max_tokens=8, **body)
    logged = [r["prompt_tokens"] for r in prompt_log(state)]
    assert logged == [counts[MAIN], counts[FAST]]  # exactly what generation sent

    text = "tokenyard ünïcödé 12345 <|im_start|>"
    for model, family in ((MAIN, "qwen3-coder"), (FAST_ALIAS, "llama-3.1")):
        answer = httpx.post(
            url + "/v1/tokenize", json={"model": model, "prompt": text, "add_special_tokens": False}
        ).json()
        tokenizer = Tokenizer.from_model_dir(model_dir(family))
        assert answer["tokens"] == tokenizer.encode(text, add_special_tokens=False)
        assert answer["max_model_len"] == (32768 if model == MAIN else 8192)
        back = httpx.post(url + "/v1/detokenize", json={"model": model, "tokens": answer["tokens"]}).json()
        assert back["prompt"] == text
    chat = httpx.post(url + "/v1/tokenize", json={"model": FAST, "messages": [{"role": "user", "content": "hi"}]})
    assert (
        chat.json()["count"]
        == c.messages.count_tokens(model=FAST, messages=[{"role": "user", "content": "hi"}]).input_tokens
    )


def test_an_unknown_model_is_not_found_listing_the_served_ids(two_models):
    url, _ = two_models
    with pytest.raises(anthropic.NotFoundError) as caught:
        _anthropic(url).messages.create(model="nope", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "not_found_error"
    assert all(i in caught.value.body["error"]["message"] for i in (MAIN, MAIN_ALIAS, FAST, FAST_ALIAS))
    with pytest.raises(openai.NotFoundError) as chat_error:
        _openai(url).chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    assert FAST_ALIAS in chat_error.value.message
    with pytest.raises(openai.NotFoundError):
        _openai(url).responses.create(model="nope", input="hi")
    with pytest.raises(anthropic.NotFoundError):
        _anthropic(url).messages.count_tokens(model="nope", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError):
        _openai(url).models.retrieve("nope")
    tokenize = httpx.post(url + "/v1/tokenize", json={"model": "nope", "prompt": "x"})
    assert tokenize.status_code == 404 and FAST in tokenize.json()["error"]["message"]


def test_metrics_label_the_model(two_models):
    url, _ = two_models
    for model in (MAIN, FAST_ALIAS):
        _openai(url).chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    found = samples(url)
    assert total(found, "tokenyard_prompt_tokens_total", model=MAIN) > 0
    assert total(found, "tokenyard_prompt_tokens_total", model=FAST) > 0  # an alias counts as its model


def test_duplicate_ids_across_models_are_refused(tmp_path):
    clash = ModelSettings(model=str(model_dir("llama-3.1")), engine="scripted", served_model_names=("x", MAIN))
    with pytest.raises(ValueError, match="served twice"):
        with running_server("qwen3", names=(MAIN,), more_models=[clash]):
            pass


def test_tokenyard_serve_with_a_models_file(tmp_path):
    """The command line: `--models-config` (TOML) beside `--model`, engine-wide flags
    inherited by every entry."""
    config = tmp_path / "models.toml"
    config.write_text(
        f"""
[[models]]
name = "{FAST}"
aliases = ["{FAST_ALIAS}"]
model = "{model_dir("llama-3.1")}"
max_model_len = 8192
"""
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-m", "tokenyard.cli", "serve", "--engine", "scripted", "--port", str(port)]
    argv += ["--model", str(model_dir("qwen3")), "--served-model-name", MAIN, "--max-model-len", "16384"]
    argv += ["--models-config", str(config), "--server-key", "k" * 64]
    server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                listed = httpx.get(url + "/v1/models", headers={"anthropic-version": "2023-06-01"}).json()
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        assert [(m["id"], m["display_name"], m["max_input_tokens"]) for m in listed["data"]] == [
            (MAIN, MAIN, 16384),
            (FAST, FAST, 8192),
            (FAST_ALIAS, FAST, 8192),
        ]
        answer = _anthropic(url).messages.create(
            model=FAST_ALIAS, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.model == FAST_ALIAS
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    lines = err.decode().splitlines()
    assert any(line.startswith(f"tokenyard: serving {FAST}, {FAST_ALIAS} ") for line in lines), err.decode()[-2000:]
    assert json.dumps(listed)  # the body was JSON throughout
