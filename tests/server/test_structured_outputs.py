"""Structured outputs on every API, with the official SDKs against a real server
(Qwen3's real template, the scripted model): Chat `response_format`, Responses
`text.format`, Anthropic `output_config.format` (and its deprecated `output_format`).

- an answer that matches the schema comes back as a normal finish;
- one that does not (the scripted model ignores the format) ends with the API's
  error, streaming or not, never a normal finish;
- a `json_schema` without a schema, or with one that is not a schema, is a 400;
- the turn carries an `OutputGuide` to the engine (reasoning markers included, and
  the call opener when it may call tools); one that must call has none.
"""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest

from tokenyard.conversation import Conversation, Message, OutputFormat, Text, ToolChoice, ToolSpec
from tokenyard.engines.base import OutputGuide
from tokenyard.engines.remote import RemoteEngine
from tokenyard.events import Finish, StreamError
from tokenyard.faults import OutputFormatViolation
from tokenyard.server.pipeline import Pipeline
from tokenyard.structured_output import output_violation

from .serving import WrappedEngine, running_server

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "unit": {"enum": ["m", "km"]}},
    "required": ["answer", "unit"],
    "additionalProperties": False,
}
CONFORMING = [[{"text": '{"answer": 42, "unit": "km"}'}]]
PROSE = [[{"text": "The answer is 42."}]]
WRONG_TYPE = [[{"text": '{"answer": "forty-two", "unit": "km"}'}]]
APIS = ("anthropic", "chat", "responses")
ERRORS = (anthropic.APIError, openai.APIError)


class StreamFailed(Exception):
    pass


def ask(url: str, api: str, form: dict | None, *, stream: bool = False, legacy: bool = False) -> str:
    """One turn asking for `form` (a Chat `response_format`-style dict: `type`, and
    `schema` for json_schema) on `api`; the answer's text."""
    messages = [{"role": "user", "content": "How far? Answer in JSON."}]
    if api == "anthropic":
        c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        extra: dict = {}
        if form is not None:
            wire = {"type": form["type"], **({"schema": form["schema"]} if "schema" in form else {})}
            extra = {"output_format": wire} if legacy else {"output_config": {"format": wire}}
        params = {"model": "test/model", "max_tokens": 256, "messages": messages, "extra_body": extra}
        if stream:
            with c.messages.stream(**params) as s:
                list(s)
                message = s.get_final_message()
        else:
            message = c.messages.create(**params)
        assert message.stop_reason == "end_turn"
        return "".join(b.text for b in message.content if b.type == "text")
    o = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    if api == "chat":
        response_format = None
        if form is not None:
            spec = {"name": "distance", **({"schema": form["schema"]} if "schema" in form else {})}
            response_format = {"type": form["type"], **({"json_schema": spec} if form["type"] == "json_schema" else {})}
        kwargs = {"model": "test/model", "messages": messages, "extra_body": {"response_format": response_format}}
        if stream:
            chunks = list(o.chat.completions.create(stream=True, **kwargs))
            assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        completion = o.chat.completions.create(**kwargs)
        assert completion.choices[0].finish_reason == "stop"
        return completion.choices[0].message.content or ""
    text = {"format": {"name": "distance", **form}} if form is not None else None
    kwargs = {"model": "test/model", "input": messages, "store": False, "extra_body": {"text": text}}
    if stream:
        with o.responses.stream(**kwargs) as s:
            events = list(s)
            failed = [e for e in events if e.type in ("response.failed", "error")]
            if failed:
                raise StreamFailed(str(failed[0]))
            response = s.get_final_response()
    else:
        response = o.responses.create(**kwargs)
    assert response.status == "completed"
    return response.output_text


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("rules")) as served:
        yield served


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_conforming_answer_finishes_normally(api, stream, tmp_path):
    with running_server("qwen3", script=CONFORMING, tmp_path=tmp_path) as (url, _):
        text = ask(url, api, {"type": "json_schema", "schema": SCHEMA}, stream=stream)
    assert json.loads(text) == {"answer": 42, "unit": "km"}


@pytest.mark.parametrize("script", [PROSE, WRONG_TYPE], ids=["prose", "wrong-type"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_non_conforming_answer_is_an_api_error(api, stream, script, tmp_path):
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, _):
        with pytest.raises((*ERRORS, StreamFailed)) as raised:
            ask(url, api, {"type": "json_schema", "schema": SCHEMA}, stream=stream)
    error = raised.value
    # Not a server fault: the request was served and the answer broke it (Groq's 400).
    if isinstance(error, StreamFailed):
        assert "json_validate_failed" in str(error)
    elif isinstance(error, anthropic.APIStatusError):
        assert error.body["error"]["type"] == "invalid_request_error"  # a stream's error event follows its 200
        assert error.status_code == (200 if stream else 400)
    elif not stream:
        assert error.status_code == 400 and error.body["code"] == "json_validate_failed"
    assert "JSON" in str(error) or "schema" in str(error)


@pytest.mark.parametrize("api", ["chat", "responses"])  # Anthropic's formats are json_schema only
def test_json_object_needs_a_json_object(api, tmp_path):
    with running_server("qwen3", script=PROSE, tmp_path=tmp_path) as (url, _):
        with pytest.raises(ERRORS):
            ask(url, api, {"type": "json_object"})
        assert ask(url, api, None) == "The answer is 42."


@pytest.mark.parametrize("api", APIS)
def test_the_rules_answer_in_the_format(api, rules):
    url, _ = rules
    assert (
        output_violation(
            OutputFormat(type="json_schema", json_schema=SCHEMA),
            ask(url, api, {"type": "json_schema", "schema": SCHEMA}),
        )
        is None
    )


def test_anthropic_legacy_output_format(rules):
    url, _ = rules
    assert json.loads(ask(url, "anthropic", {"type": "json_schema", "schema": SCHEMA}, legacy=True))["unit"] == "m"


@pytest.mark.parametrize(
    ("api", "form", "param"),
    [
        ("chat", {"type": "json_schema"}, "response_format.json_schema.schema"),
        ("chat", {"type": "json_schema", "schema": {"type": 5}}, "response_format.json_schema.schema"),
        ("responses", {"type": "json_schema"}, "text.format.schema"),
        ("responses", {"type": "json_schema", "schema": {"required": "answer"}}, "text.format.schema"),
        ("responses", {"type": "xml"}, "text.format.type"),
        ("anthropic", {"type": "json_schema"}, None),
    ],
)
def test_a_json_schema_format_without_a_valid_schema_is_a_400(api, form, param, rules):
    url, _ = rules
    with pytest.raises(ERRORS) as raised:
        ask(url, api, form)
    assert raised.value.status_code == 400
    if param is not None:
        assert raised.value.body["param"] == param


def test_both_anthropic_spellings_at_once_are_a_400(rules):
    url, _ = rules
    c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    wire = {"type": "json_schema", "schema": SCHEMA}
    with pytest.raises(anthropic.BadRequestError):
        c.messages.create(
            model="test/model",
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"output_format": wire, "output_config": {"format": wire}},
        )


# ------------------------------------------------------------------ what the engine is told


class Recording(WrappedEngine):
    def __init__(self, inner):
        super().__init__(inner)
        self.requests = []

    def generate(self, request):
        self.requests.append(request)
        return self.inner.generate(request)


def run(pipeline: Pipeline, conversation: Conversation) -> list:
    async def go():
        return [e async for e in pipeline.start(conversation).events()]

    return asyncio.run(go())


def test_the_guide_travels_to_the_engine_only_when_no_call_is_possible(rules):
    _, state = rules
    engine = Recording(state.pipeline.engine)
    pipeline = Pipeline(state.pipeline.model, engine)
    form = OutputFormat(type="json_schema", json_schema=SCHEMA)
    conversation = Conversation(
        model="m", messages=[Message(role="user", parts=[Text(text="how far?")])], output_format=form
    )
    events = run(pipeline, conversation)
    guide = engine.requests[-1].constraints.output
    # Qwen3 thinks first: the reasoning block is free, the JSON follows its end marker.
    assert guide is not None and guide.schema == SCHEMA
    assert (guide.reasoning_start, guide.reasoning_end, guide.inside) == ("<think>", "</think>", False)
    assert guide.reasoning_end_ids == tuple(state.pipeline.model.tokenizer.encode("</think>"))
    assert isinstance(events[-1], Finish)

    tools = [ToolSpec(name="Bash", parameters={"type": "object", "properties": {}})]
    with_tools = conversation.model_copy(update={"tools": tools})
    events = run(pipeline, with_tools)
    guide = engine.requests[-1].constraints.output
    # A turn that may call tools may begin a call instead of the JSON.
    assert guide is not None and guide.call_trigger == "<tool_call>"
    assert guide.call_trigger_ids == tuple(state.pipeline.model.tokenizer.encode("<tool_call>"))
    none = with_tools.model_copy(update={"tool_choice": ToolChoice(mode="none")})
    run(pipeline, none)
    assert engine.requests[-1].constraints.output.call_trigger == ""
    required = with_tools.model_copy(update={"tool_choice": ToolChoice(mode="required")})
    run(pipeline, required)
    assert engine.requests[-1].constraints.output is None  # a call is due, not the answer

    prose = conversation.model_copy(update={"output_format": OutputFormat(type="json_object")})
    script_engine = Recording(state.pipeline.engine)
    script_engine.generate = lambda request: _text("Sure! 42")  # type: ignore[method-assign]
    events = run(Pipeline(state.pipeline.model, script_engine), prose)
    assert isinstance(events[-1], StreamError) and isinstance(events[-1].cause, OutputFormatViolation)
    assert not any(isinstance(e, Finish) for e in events)


async def _text(text: str):
    from tokenyard.engines.base import EngineChunk

    yield EngineChunk(text=text)
    yield EngineChunk(finish_reason="stop")


def test_remote_engine_fields_for_each_server():
    vllm = RemoteEngine("http://127.0.0.1:1", max_model_len=100)
    llama = RemoteEngine("http://127.0.0.1:1", max_model_len=100, guided_decoding=False)
    from tokenyard.engines.base import Constraints, EngineRequest

    def body(engine: RemoteEngine, guide: OutputGuide) -> dict:
        return engine.completion_body(EngineRequest("r", [1], 8, constraints=Constraints(output=guide)))

    plain = OutputGuide(SCHEMA)
    assert body(vllm, plain)["structured_outputs"] == {"json": SCHEMA}
    assert json.loads(body(vllm, plain)["json_schema"]) == SCHEMA  # SGLang
    assert body(vllm, OutputGuide(None))["structured_outputs"] == {"json_object": True}
    assert body(llama, plain)["json_schema"] == SCHEMA and "structured_outputs" not in body(llama, plain)
    thinking = OutputGuide(SCHEMA, reasoning_start="<think>", reasoning_end="</think>")
    tag = json.loads(body(vllm, thinking)["structured_outputs"]["structural_tag"])
    thought, direct = tag["format"]["elements"]
    assert tag["format"]["type"] == "or" and direct == {"type": "json_schema", "json_schema": SCHEMA}
    assert thought["elements"][0] == {
        "type": "tag",
        "begin": "<think>",
        "content": {"type": "any_text"},
        "end": "</think>",
    }
    assert "json_schema" not in body(llama, thinking) and "structured_outputs" not in body(llama, thinking)
    may_call = OutputGuide(SCHEMA, call_trigger="<tool_call>")
    assert "json_schema" not in body(vllm, may_call) and "structured_outputs" not in body(vllm, may_call)


def test_channel_formats_are_validated_not_guided(tmp_path):
    """gpt-oss writes its answer inside harmony's final channel: a JSON grammar from
    the first token would rule that out, so the answer is only validated."""
    with running_server("gpt-oss", tmp_path=tmp_path) as (url, state):
        engine = Recording(state.pipeline.engine)
        pipeline = Pipeline(state.pipeline.model, engine)
        form = OutputFormat(type="json_schema", json_schema=SCHEMA)
        conversation = Conversation(
            model="m", messages=[Message(role="user", parts=[Text(text="how far?")])], output_format=form
        )
        events = run(pipeline, conversation)
        assert engine.requests[-1].constraints.output is None
        assert isinstance(events[-1], Finish)
        assert json.loads(ask(url, "chat", {"type": "json_schema", "schema": SCHEMA})) == {"answer": 42, "unit": "m"}
