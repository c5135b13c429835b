"""llama.cpp's native `/completion` stream as the remote engine reads it (sans-IO),
with chunks shaped as llama-server 0.3.36's vendored tree writes them
(tools/server/server-task.cpp: `to_json_non_oaicompat`, `format_error_response`):
the output's token ids, never a stop token, the stop reasons, the cache hit, and its
errors. tests/integration/test_llama_cpp.py drives the real server."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from tokenyard.engines.base import CallGuide, CallTag, EngineRequest
from tokenyard.engines.gbnf import calls_grammar
from tokenyard.engines.remote import LlamaCppStreamReader, RemoteEngine, _http_error
from tokenyard.faults import EngineError, PromptTooLong

from .test_remote import running

IM_END, ENDOFTEXT = 2, 0


def line(**payload) -> str:
    return "data: " + json.dumps(payload)


def partial(*tokens: int, cache_n: int = 7) -> str:
    return line(content="x", tokens=list(tokens), stop=False, timings={"cache_n": cache_n})


def final(stop_type: str, cache_n: int = 7) -> str:
    return line(stop=True, stop_type=stop_type, timings={"cache_n": cache_n})


def read(lines: list[str], stop_ids: set[int] = frozenset({IM_END})) -> tuple[list, LlamaCppStreamReader]:
    reader = LlamaCppStreamReader(set(stop_ids), "llama")
    chunks = [c for c in (reader.feed(x) for x in lines) if c is not None]
    return [*chunks, reader.finish()], reader


def test_token_ids_flow_one_chunk_behind_and_the_end_token_is_dropped():
    chunks, _ = read([partial(10), ": ping", "", partial(11, 12), partial(ENDOFTEXT), final("eos")], stop_ids=set())
    # ENDOFTEXT is not a family stop token here, yet llama.cpp stopped at it (eos).
    assert [c.token_ids for c in chunks] == [[10], [11, 12], []]
    assert chunks[-1].finish_reason == "stop"
    assert [c.cached_tokens for c in chunks] == [7, None, 7]


def test_a_family_stop_token_ends_the_generation_here():
    chunks, reader = read([partial(10), partial(11, IM_END, 13)])
    assert reader.done and [c.token_ids for c in chunks] == [[10, 11]]
    assert chunks[-1].finish_reason == "stop"
    assert reader.feed(partial(14)) is None  # nothing after the end is read


@pytest.mark.parametrize(("stop_type", "reason", "kept"), [("limit", "length", [11]), ("word", "stop", [11])])
def test_stop_types(stop_type, reason, kept):
    chunks, _ = read([partial(10), partial(11), final(stop_type)])
    assert [c.token_ids for c in chunks] == [[10], kept] and chunks[-1].finish_reason == reason


def test_malformed_and_unknown():
    with pytest.raises(EngineError, match="not a /completion chunk"):
        read([line(content="x", stop=False)])
    with pytest.raises(EngineError, match="unknown stop_type"):
        read([final("sideways")])
    with pytest.raises(EngineError, match="without a finish reason"):
        read([partial(1)])


def test_errors_are_the_faults_they_name():
    body = {
        "error": {
            "code": 400,
            "message": "request (900 tokens) exceeds the available context size (512 tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 900,
            "n_ctx": 512,
        }
    }
    error = _http_error("llama", 400, json.dumps(body))
    assert isinstance(error, PromptTooLong) and (error.prompt_tokens, error.max_model_len) == (900, 512)
    with pytest.raises(PromptTooLong):
        read(["data: " + json.dumps(body)])
    loading = _http_error("llama", 503, json.dumps({"error": {"code": 503, "message": "Loading model"}}))
    assert type(loading) is EngineError and "HTTP 503: Loading model" in str(loading)


def test_a_forced_call_is_a_grammar_of_the_tools_calls():
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    guide = CallGuide(
        ("<tool_call>",), (CallTag('<tool_call>\n{"name": "weather", "arguments": ', schema, "}\n</tool_call>"),)
    )
    grammar = calls_grammar(guide, parallel=False)
    assert grammar is not None
    rules = dict(r.split(" ::= ", 1) for r in grammar.strip().splitlines())
    assert rules["root"] == "call"
    assert rules["call"] == r'( "<tool_call>\n{\"name\": \"weather\", \"arguments\": " args0 "}\n</tool_call>" )'
    # city is required and first; the others optional, in order.
    assert rules["args0"].startswith(r'"{" ws "\"city\"" ws ":" ws args0-1 ( ws "," ws "\"unit\""')
    assert rules["args0-2"] == r'( "\"c\"" | "\"f\"" )' and rules["args0-3"] == "integer"
    assert (calls_grammar(guide, parallel=True) or "").startswith("root ::= call ( ws call )*\n")
    xml = CallGuide(
        ("<tool_call>",), (CallTag("<tool_call>\n<function=weather>\n", schema, "</function>", "qwen_xml"),)
    )
    assert calls_grammar(xml, parallel=False) is None
    # Every rule referenced is defined.
    names = set(rules)
    for body in rules.values():
        for word in body.replace("(", " ").replace(")", " ").split():
            if word[0].isalpha() and not word.startswith('"'):
                assert word.rstrip("*?+") in names, word


def test_a_server_still_loading_is_waited_for():
    """llama-server answers 503 while it loads the model: start waits, then reads the
    slot's window from its model list (shaped as server-context.cpp writes it)."""
    calls = []

    async def models(request):
        calls.append(1)
        if len(calls) < 3:
            return JSONResponse({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}, 503)
        card = {"id": "/models/m.gguf", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx": 4096}}
        return JSONResponse({"object": "list", "data": [card]})

    with running(Starlette(routes=[Route("/v1/models", models)])) as url:
        engine = RemoteEngine(url, startup_timeout=10)

        async def run():
            await engine.start()
            await engine.close()

        asyncio.run(run())
    assert len(calls) == 3 and engine.server == "llama.cpp" and engine.info().max_model_len == 4096


def test_sampling_fields_reach_both_wire_bodies():
    """A frequency penalty (the request's, or a served model's: SmolLM2's record) and a
    presence penalty go to vLLM and llama.cpp under the names both take; unset fields
    are left to the engine."""
    engine = RemoteEngine("http://127.0.0.1:1/v1")
    penalised = EngineRequest("r", [1, 2], max_tokens=8, temperature=0.0, frequency_penalty=0.5, presence_penalty=-0.25)
    for body in (engine.completion_body(penalised), engine.llama_cpp_body(penalised)):
        assert body["frequency_penalty"] == 0.5 and body["presence_penalty"] == -0.25
        assert body["temperature"] == 0.0 and "top_p" not in body
    plain = EngineRequest("r", [1, 2], max_tokens=8)
    for body in (engine.completion_body(plain), engine.llama_cpp_body(plain)):
        assert "frequency_penalty" not in body and "presence_penalty" not in body and "temperature" not in body
