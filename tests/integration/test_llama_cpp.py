"""tokenyard in front of a real llama.cpp: `llama-server` (the build
scripts/install_llama_cpp.sh makes, or a recent one on PATH) serving the built-in
SmolLM2 GGUF on 127.0.0.1, with `--special` as users start it, driven by the remote
engine through each API with its official SDK, streaming and not.

What is checked is structure, never the model's wording: no special token's text in
any content or reasoning; finish reasons consistent with the output; the second
turn's cached prefix in the usage (llama.cpp's `timings.cache_n`); a forced tool call
(its GBNF grammar) that comes back as a call and goes back as a result; a closed
stream freeing its slot; llama.cpp's context error as each API's 400; and
`tokenyard serve --engine llama.cpp` starting and stopping its own llama-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tokenyard.engines.base import EngineRequest
from tokenyard.engines.llama_server import INSTALL_SCRIPT, find_llama_server
from tokenyard.engines.remote import RemoteEngine
from tokenyard.faults import EngineError, PromptTooLong
from tokenyard.models.builtin import builtin_gguf
from tokenyard.models.cache import cache_root
from tokenyard.server.loading import load
from tokenyard.settings import ModelSettings

from ..engines.test_remote import running_server_with_engine
from ..server.serving import free_port
from .processes import answers, stop_group

pytestmark = pytest.mark.slow

CONTEXT = 2048
STARTUP_SECONDS = 120
MAX_TOKENS = 16
# llama.cpp counts any common prefix as cached, the chat template's opening tokens
# shared with an earlier test's prompt included; a turn-2 hit is the whole first turn.
SHARED_OPENING = 16
SPECIAL_TOKENS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>")
# Long enough that the second turn's cache hit is plainly the shared prefix.
RULES = " ".join(f"Rule {i}: answer in one short sentence." for i in range(1, 21))
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
    },
}


def llama_server_binary() -> Path:
    try:
        return find_llama_server(cache_root())
    except EngineError:
        pytest.skip(f"no llama-server on PATH nor in the cache; run `bash {INSTALL_SCRIPT}` (builds it, ~11 min CPU)")


@dataclass
class LlamaServer:
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> LlamaServer:
    binary, gguf = llama_server_binary(), builtin_gguf("smollm2")
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    command = [
        str(binary),
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(CONTEXT),
        "--kv-unified",
        "--parallel",
        "2",
        "--threads",
        "2",
        "--special",  # as the README says users start it: tokenyard must not depend on it
        "--slots",
        "--no-webui",
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = LlamaServer(f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not answers(server.url, "/health"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"llama-server did not start (exit {process.poll()}); its log ends:\n{server.log_text()[-4000:]}"
                )
            time.sleep(0.25)
        yield server
    finally:
        stop_group(process, grace=20)


@pytest.fixture(scope="module")
def frontend(llama):
    # `--engine remote` on the GGUF by path, as a user runs it: the server is
    # recognised as llama.cpp and its slot's window read from /v1/models.
    model, engine = load(ModelSettings(model=str(builtin_gguf("smollm2")), engine="remote", engine_url=llama.url))
    assert model.name == "SmolLM2-135M-Instruct.Q4_1"
    with running_server_with_engine(model, engine) as (url, state):
        assert isinstance(engine, RemoteEngine) and engine.server == "llama.cpp"
        assert engine.info().max_model_len == CONTEXT
        yield url, state


def _no_special_text(*texts: str | None) -> None:
    for text in texts:
        for token in SPECIAL_TOKENS:
            assert token not in (text or ""), f"{token} reached the output: {text!r}"


# ---------------------------------------------------------------- the engine against llama.cpp


def _generate(engine: RemoteEngine, request: EngineRequest, *, stop_after: int | None = None) -> list:
    return _generate_each(engine, [request], stop_after=stop_after)[0]


def _generate_each(engine: RemoteEngine, requests: list[EngineRequest], *, stop_after: int | None = None) -> list:
    """Each request's chunks, one after the other on one engine (one connection pool)."""

    async def run():
        await engine.start()
        try:
            runs = []
            for request in requests:
                stream, chunks = engine.generate(request), []
                async for chunk in stream:
                    chunks.append(chunk)
                    if stop_after is not None and len(chunks) == stop_after:
                        await stream.aclose()  # the client went away
                        break
                runs.append(chunks)
            return runs
        finally:
            await engine.close()

    return asyncio.run(asyncio.wait_for(run(), 120))


def _prompt(state, question: str, system: str = RULES) -> list[int]:
    return state.pipeline.model.tokenizer.encode(
        f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    )


def test_llama_cpp_streams_token_ids_and_reports_the_cache_hit(llama, frontend):
    _, state = frontend
    prompt = _prompt(state, "Name a colour.", system=f"[engine] {RULES}")
    stop_ids = state.pipeline.model.stop_token_ids()
    request = EngineRequest("engine-direct", prompt, max_tokens=MAX_TOKENS, temperature=0.0, stop_token_ids=stop_ids)
    # Back to back on one engine, the first ending at the token cap (its stream read to
    # the end): llama-server drops the connection after a stream, a reused one fails.
    short = EngineRequest("short", prompt[-8:], max_tokens=2, temperature=0.0)
    capped, *runs = _generate_each(RemoteEngine(llama.url), [short, request, request])
    assert capped[-1].finish_reason in ("stop", "length") and sum(len(c.token_ids) for c in capped) <= 2
    for chunks in runs:
        assert all(c.text is None for c in chunks), "native /completion returns token ids"
        assert chunks[-1].finish_reason in ("stop", "length")
        assert all(c.finish_reason is None for c in chunks[:-1])
        ids = [t for c in chunks for t in c.token_ids]
        assert len(ids) <= MAX_TOKENS and not set(ids) & set(stop_ids), "the stop token is not output"
        if chunks[-1].finish_reason == "length":
            assert len(ids) == MAX_TOKENS
        _no_special_text(state.pipeline.model.tokenizer.decode(ids))
    # The first run may share the template's few opening tokens with an earlier prompt.
    assert runs[0][-1].cached_tokens < SHARED_OPENING < runs[1][-1].cached_tokens < len(prompt)


def test_a_closed_stream_frees_the_slot(llama, frontend):
    _, state = frontend
    prompt = _prompt(state, "Count from 1 to 500, one number a line.", system="[abort]")
    # No stop token ids and a large cap; greedy counting to 500 reaches no EOS before
    # the stream is closed (llama.cpp stops at the model's EOS whatever the request says).
    request = EngineRequest("abort-me", prompt, max_tokens=1500, temperature=0.0)
    assert len(_generate(RemoteEngine(llama.url), request, stop_after=2)) == 2
    deadline = time.monotonic() + 20
    while any(slot["is_processing"] for slot in httpx.get(f"{llama.url}/slots", timeout=5).json()):
        assert time.monotonic() < deadline, "llama.cpp kept generating for a closed stream"
        time.sleep(0.2)
    follow = EngineRequest("after", prompt, max_tokens=4, temperature=0.0)
    assert _generate(RemoteEngine(llama.url), follow)[-1].finish_reason in ("stop", "length")


def test_llama_cpp_context_error_is_prompt_too_long(llama, frontend):
    _, state = frontend
    # A window larger than the server's, so the prompt reaches llama.cpp and its error.
    engine = RemoteEngine(llama.url, max_model_len=CONTEXT * 4, server="llama.cpp")
    request = EngineRequest("too-long", list(range(1000, 1000 + CONTEXT + 100)), max_tokens=4)
    with pytest.raises(PromptTooLong) as caught:
        _generate(engine, request)
    assert caught.value.max_model_len == CONTEXT and caught.value.prompt_tokens == CONTEXT + 100


def test_llama_cpp_context_error_is_each_apis_400(llama):
    model, _ = load(ModelSettings(model=str(builtin_gguf("smollm2")), engine="scripted"))
    engine = RemoteEngine(llama.url, max_model_len=CONTEXT * 4, server="llama.cpp")
    long = "word " * (CONTEXT + 200)
    with running_server_with_engine(model, engine) as (url, _):
        messages = [{"role": "user", "content": long}]
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            anthropic.Anthropic(base_url=url, api_key="x", max_retries=0).messages.create(
                model=model.name, max_tokens=4, messages=messages
            )
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="prompt is too long"):
            client.chat.completions.create(model=model.name, max_tokens=4, messages=messages)
        with pytest.raises(openai.BadRequestError, match="prompt is too long"):
            client.responses.create(model=model.name, max_output_tokens=16, input=long, store=False)


# ---------------------------------------------------------------- each API through tokenyard


# A logit bias on `<|im_start|>` that greedy SmolLM2 answers with ordinary text, then
# the control token mid-answer (not a stop token: it goes on, writing a "user" turn).
CONTROL_BIAS = 9
CONTROL_SYSTEM, CONTROL_QUESTION = "You are a helpful assistant.", "Name three colors."


def test_a_control_token_mid_answer_never_reaches_any_api(llama, frontend, monkeypatch):
    """The real llama-server emits `<|im_start|>` mid-answer (forced by a logit bias the
    test adds to tokenyard's /completion requests; the raw ids are checked to hold it
    between ordinary tokens); no API shows its text, streaming or not, and the text
    around it is the model's, whole."""
    url, state = frontend
    engine, tokenizer = state.pipeline.engine, state.pipeline.model.tokenizer
    control = tokenizer.token_to_id("<|im_start|>")
    assert control in state.pipeline.control_ids
    bodies: list[dict] = []
    plain_body = engine.llama_cpp_body

    def biased(request):
        # Without SmolLM2's declared frequency penalty: with it, greedy decoding never
        # reached the biased token in one CI run; the bias alone makes it come mid-answer.
        body = {**plain_body(request), "logit_bias": [[control, CONTROL_BIAS]]}
        body.pop("frequency_penalty", None)
        bodies.append(body)
        return body

    monkeypatch.setattr(engine, "llama_cpp_body", biased)
    model, system, question = state.pipeline.model.name, CONTROL_SYSTEM, CONTROL_QUESTION
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    chat = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    common = dict(model=model, max_tokens=24, temperature=0, messages=chat)
    whole = client.chat.completions.create(**common).choices[0].message.content or ""
    # The same request straight to llama-server: what the model wrote, token by token.
    direct = {k: v for k, v in bodies[0].items() if k != "response_fields"} | {"stream": False}
    raw = httpx.post(f"{llama.url}/completion", json=direct, timeout=120).json()["tokens"]
    ends = [i for i, t in enumerate(raw) if t in state.pipeline.stop_ids]
    raw = raw[: ends[0]] if ends else raw  # the turn ends at the family's first stop token
    assert control in raw[1:-1] and set(raw) - {control}, f"no control token mid-answer: {tokenizer.decode(raw)!r}"
    expected = tokenizer.decode([t for t in raw if t != control]).strip()
    assert whole == expected
    streamed = "".join(
        c.choices[0].delta.content or "" for c in client.chat.completions.create(**common, stream=True) if c.choices
    )
    responses = client.responses.create(
        model=model, instructions=system, input=question, max_output_tokens=24, temperature=0, store=False
    )
    kwargs = dict(model=model, max_tokens=24, system=system, messages=chat[1:], extra_body={"temperature": 0})
    messages = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0).messages
    with messages.stream(**kwargs) as stream:
        anthropic_streamed = "".join(b.text for b in stream.get_final_message().content if b.type == "text")
    anthropic_whole = "".join(b.text for b in messages.create(**kwargs).content if b.type == "text")
    assert streamed == responses.output_text == anthropic_streamed == anthropic_whole == expected
    _no_special_text(whole, streamed, responses.output_text, anthropic_whole, anthropic_streamed)


def _conversation(api: str) -> tuple[str, str, str]:
    # The API's name first, so that no test's prompt shares a cached prefix with another's.
    return f"[{api}] {RULES}", "Name a colour.", "And another one?"


def test_anthropic_messages(frontend):
    url, state = frontend
    client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    system, first_question, second_question = _conversation("anthropic")
    messages = [{"role": "user", "content": first_question}]
    usages = []
    for streaming in (False, True):
        kwargs = dict(
            model=state.pipeline.model.name, max_tokens=MAX_TOKENS, system=system, messages=messages,
            extra_body={"temperature": 0},
        )  # fmt: skip
        if streaming:
            with client.messages.stream(**kwargs) as stream:
                final = stream.get_final_message()
        else:
            final = client.messages.create(**kwargs)
        assert all(block.type == "text" for block in final.content)
        _no_special_text(*(block.text for block in final.content))
        assert final.stop_reason in ("end_turn", "max_tokens")
        assert final.usage.output_tokens <= MAX_TOKENS
        usages.append(final.usage)
        answer = "".join(block.text for block in final.content)
        messages = [
            *messages,
            {"role": "assistant", "content": answer or "(no answer)"},
            {"role": "user", "content": second_question},
        ]
    assert usages[0].cache_read_input_tokens < SHARED_OPENING < usages[1].cache_read_input_tokens


def test_openai_chat_completions(frontend):
    url, state = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    system, first_question, second_question = _conversation("chat")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": first_question}]
    usages = []
    for streaming in (False, True):
        common = dict(model=state.pipeline.model.name, max_tokens=MAX_TOKENS, temperature=0, messages=messages)
        # Chat's penalties go on to llama-server's /completion, which takes both.
        common.update(frequency_penalty=0.2, presence_penalty=0.1)
        if streaming:
            chunks = list(client.chat.completions.create(**common, stream=True, stream_options={"include_usage": True}))
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
            usage = chunks[-1].usage
        else:
            completion = client.chat.completions.create(**common)
            text, finishes, usage = (
                completion.choices[0].message.content or "",
                [completion.choices[0].finish_reason],
                completion.usage,
            )
        _no_special_text(text)
        assert finishes in (["stop"], ["length"])
        assert usage is not None and usage.completion_tokens <= MAX_TOKENS
        usages.append(usage)
        messages = [
            *messages,
            {"role": "assistant", "content": text or "(no answer)"},
            {"role": "user", "content": second_question},
        ]
    cached = [u.prompt_tokens_details.cached_tokens for u in usages]
    assert cached[0] < SHARED_OPENING < cached[1] < usages[1].prompt_tokens


def test_a_json_schema_answer_is_guided_by_llama_cpp(frontend):
    # The schema travels as llama.cpp's `json_schema` (compiled to a grammar there): a
    # closed enum leaves the model one short, valid answer whatever it would have said.
    url, state = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    schema = {
        "type": "object",
        "properties": {"answer": {"enum": ["yes", "no"]}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    completion = client.chat.completions.create(
        model=state.pipeline.model.name,
        max_tokens=48,
        temperature=0,
        messages=[{"role": "user", "content": "Is the sky blue?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}},
    )
    content = completion.choices[0].message.content or ""
    _no_special_text(content)
    assert completion.choices[0].finish_reason == "stop", content
    assert json.loads(content)["answer"] in ("yes", "no")


def test_openai_responses(frontend):
    url, state = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    system, first_question, second_question = _conversation("responses")
    items: list = [{"role": "user", "content": first_question}]
    usages = []
    for streaming in (False, True):
        common = dict(
            model=state.pipeline.model.name, instructions=system, input=items, max_output_tokens=MAX_TOKENS,
            temperature=0, store=False,
        )  # fmt: skip
        if streaming:
            terminal = [
                e
                for e in client.responses.create(**common, stream=True)
                if e.type in ("response.completed", "response.incomplete", "response.failed")
            ]
            assert [e.type for e in terminal] in (["response.completed"], ["response.incomplete"])
            response = terminal[0].response
        else:
            response = client.responses.create(**common)
        assert response.status in ("completed", "incomplete")
        if response.status == "incomplete":
            assert response.incomplete_details is not None
            assert response.incomplete_details.reason == "max_output_tokens"
        _no_special_text(response.output_text)
        assert response.usage is not None and response.usage.output_tokens <= MAX_TOKENS
        usages.append(response.usage)
        items = [
            *items,
            {"role": "assistant", "content": response.output_text or "(no answer)"},
            {"role": "user", "content": second_question},
        ]
    cached = [u.input_tokens_details.cached_tokens for u in usages]
    assert cached[0] < SHARED_OPENING < cached[1] < usages[1].input_tokens


def test_a_forced_tool_call_round_trip(frontend):
    """tool_choice names the tool: llama.cpp samples under the calls' grammar, so the
    answer is that call whatever SmolLM2 would have said; its result goes back."""
    url, state = frontend
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    tools = [{"type": "function", "function": WEATHER}]
    messages: list = [{"role": "system", "content": "[tools]"}, {"role": "user", "content": "Weather in Paris?"}]
    forced = {"type": "function", "function": {"name": "get_weather"}}
    round_trips = 0
    for streaming in (False, True):
        common = dict(
            model=state.pipeline.model.name, max_tokens=48, temperature=0, messages=messages, tools=tools,
            tool_choice=forced,
        )  # fmt: skip
        if streaming:
            chunks = list(client.chat.completions.create(**common, stream=True))
            calls: dict[int, dict] = {}
            for chunk in chunks:
                for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    call = calls.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
                    call["id"] = call["id"] or delta.id
                    call["name"] += delta.function.name or ""
                    call["arguments"] += delta.function.arguments or ""
            finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
            content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            found = list(calls.values())
        else:
            choice = client.chat.completions.create(**common).choices[0]
            finish, content = [choice.finish_reason], choice.message.content or ""
            found = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in choice.message.tool_calls or []
            ]
        if finish == ["length"]:
            continue  # the cap cut the call short: the model's length, not ours to assert
        assert finish == ["tool_calls"] and len(found) >= 1
        _no_special_text(content)
        call = found[0]
        assert call["name"] == "get_weather"
        arguments = json.loads(call["arguments"])
        assert isinstance(arguments.get("city"), str)
        messages = [
            *messages,
            {"role": "assistant", "tool_calls": [{"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
            {"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 C."},
        ]  # fmt: skip
        # The result goes back: an answer in text now (no tool forced).
        common = dict(
            model=state.pipeline.model.name, max_tokens=MAX_TOKENS, temperature=0, messages=messages, tools=tools
        )
        after = client.chat.completions.create(**common).choices[0]
        assert after.finish_reason in ("stop", "length", "tool_calls")
        _no_special_text(after.message.content)
        messages = messages[:2]
        round_trips += 1
    assert round_trips, "under the grammar, a short call fits the cap at least once"


# ---------------------------------------------------------------- tokenyard serve --engine llama.cpp


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_serve_engine_llama_cpp_owns_its_llama_server(tmp_path):
    llama_server_binary()
    port = free_port()
    command = [
        sys.executable, "-m", "tokenyard.cli", "serve", "--engine", "llama.cpp", "--model", "smollm2",
        "--port", str(port), "--max-model-len", "1024", "--engine-threads", "1", "--engine-slots", "1",
    ]  # fmt: skip
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        owned = [c for c in _children(process.pid) if "llama-server" in Path(f"/proc/{c}/cmdline").read_text()]
        assert len(owned) == 1
        cmdline = Path(f"/proc/{owned[0]}/cmdline").read_text().split("\0")
        assert cmdline[cmdline.index("--host") + 1] == "127.0.0.1"
        assert cmdline[cmdline.index("--ctx-size") + 1] == "1024" and cmdline[cmdline.index("--threads") + 1] == "1"
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        answer = client.chat.completions.create(
            model="smollm2", max_tokens=8, temperature=0, messages=[{"role": "user", "content": "Hi"}]
        )
        assert answer.choices[0].finish_reason in ("stop", "length")
        _no_special_text(answer.choices[0].message.content)
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while _running(owned[0]):
            assert time.monotonic() < deadline, "llama-server outlived tokenyard"
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
