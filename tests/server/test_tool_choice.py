"""`tool_choice`, `parallel_tool_calls` and `thinking.budget_tokens` mean what they
say, on each API, against Qwen3's real chat template (hermes calls) with the
scripted model: the rendered prompt (from the prompt log) and the output.

- none: the prompt is the auto prompt exactly (tools stay where the template puts
  them) and no call comes back, even when the model writes one;
- required / named: with thinking off (the Anthropic requests here) the prompt ends
  with the call opener (the scripted engine has no guided decoding); with it on (the
  OpenAI requests' default) the prompt opens the reasoning block, the model reasons,
  and the opener follows the block. The call comes back, and a model that does not
  call (or calls another tool) ends with an API error, never a different tool;
- parallel_tool_calls false: the prompt is unchanged and one call comes back;
- budget: the reasoning block is cut at the budget and the answer follows.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import anthropic
import openai
import pytest

from tokenyard.conversation import Conversation, Message, Text, ThinkingControl, ToolChoice, ToolSpec
from tokenyard.engines.base import EngineInfo
from tokenyard.engines.scripted import SCRIPTED_COMMAND
from tokenyard.events import Finish, ReasoningDelta, StreamError, ToolCallReady, ToolCallStart
from tokenyard.faults import ToolChoiceViolation
from tokenyard.server.pipeline import Pipeline

from .serving import WrappedEngine, prompt_log, running_server

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
TWO_CALLS = [
    [
        {"call": {"name": "Bash", "arguments": {"command": "ls"}}},
        {"call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    ]
]
TEXT_ONLY = [[{"text": "I would rather not call anything."}]]
HERMES_OPENER = "<tool_call>\n"
NAMED_OPENER = '<tool_call>\n{"name": "get_weather", "arguments": '
APIS = ("anthropic", "chat", "responses")


def forced_prefill(api: str, opener: str) -> str:
    """What ends a forced call's prompt: the opener with thinking off (`ask` turns it
    off on Anthropic's API), the reasoning block's start with it on."""
    return opener if api == "anthropic" else "<think>"


# ------------------------------------------------------------------ one request per API


class StreamFailed(Exception):
    """A Responses stream ended with `response.failed` (the SDK does not raise)."""


ERRORS = (anthropic.APIError, openai.APIError, StreamFailed)


def ask(url: str, api: str, *, choice: str | None, parallel: bool = True, stream: bool = False) -> dict:
    """One turn on `api` with tool choice `choice` ("auto", "none", "required", or a
    tool name): the calls [(name, arguments)], the text, and the finish reason."""
    question = "What is the weather in Paris?"
    if api == "anthropic":
        c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        tool_choice: dict = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}.get(
            choice or "auto", {"type": "tool", "name": choice}
        )
        if not parallel:
            tool_choice["disable_parallel_tool_use"] = True
        params = {
            "model": "test/model",
            "max_tokens": 512,
            "messages": [{"role": "user", "content": question}],
            "tools": [
                {"name": "Bash", "description": "Run a shell command", "input_schema": BASH_SCHEMA},
                {"name": "get_weather", "description": "Weather in a city", "input_schema": WEATHER_SCHEMA},
            ],
            "tool_choice": tool_choice,
            "thinking": {"type": "disabled"},
        }
        if stream:
            with c.messages.stream(**params) as s:
                list(s)
                message = s.get_final_message()
        else:
            message = c.messages.create(**params)
        return {
            "calls": [(b.name, b.input) for b in message.content if b.type == "tool_use"],
            "text": "".join(b.text for b in message.content if b.type == "text"),
            "finish": message.stop_reason,
        }
    o = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    if api == "chat":
        tool_choice_chat: object = (
            choice if choice in ("auto", "none", "required") else {"type": "function", "function": {"name": choice}}
        )
        tools = [
            {
                "type": "function",
                "function": {"name": "Bash", "description": "Run a shell command", "parameters": BASH_SCHEMA},
            },
            {
                "type": "function",
                "function": {"name": "get_weather", "description": "Weather in a city", "parameters": WEATHER_SCHEMA},
            },
        ]
        kwargs = {
            "model": "test/model",
            "messages": [{"role": "user", "content": question}],
            "tools": tools,
            "tool_choice": tool_choice_chat,
            "parallel_tool_calls": parallel,
        }
        if stream:
            chunks = list(o.chat.completions.create(stream=True, **kwargs))
            calls: dict[int, list[str]] = {}
            for chunk in chunks:
                for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    entry = calls.setdefault(call.index, ["", ""])
                    entry[0] += call.function.name or ""
                    entry[1] += call.function.arguments or ""
            finish = next(c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            return {"calls": [(n, json.loads(a)) for n, a in calls.values()], "text": text, "finish": finish}
        completion = o.chat.completions.create(**kwargs)
        message = completion.choices[0].message
        return {
            "calls": [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []],
            "text": message.content or "",
            "finish": completion.choices[0].finish_reason,
        }
    tool_choice_responses: object = (
        choice if choice in ("auto", "none", "required") else {"type": "function", "name": choice}
    )
    kwargs = {
        "model": "test/model",
        "input": [{"role": "user", "content": question}],
        "tools": [
            {"type": "function", "name": "Bash", "description": "Run a shell command", "parameters": BASH_SCHEMA},
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather in a city",
                "parameters": WEATHER_SCHEMA,
            },
        ],
        "tool_choice": tool_choice_responses,
        "parallel_tool_calls": parallel,
        "store": False,
    }
    if stream:
        with o.responses.stream(**kwargs) as s:
            events = list(s)
            failed = [e for e in events if e.type in ("response.failed", "error")]
            if failed:
                error = getattr(failed[0], "response", failed[0])
                raise StreamFailed(str(getattr(error, "error", None) or getattr(error, "message", error)))
            response = s.get_final_response()
    else:
        response = o.responses.create(**kwargs)
    return {
        "calls": [(i.name, json.loads(i.arguments)) for i in response.output if i.type == "function_call"],
        "text": response.output_text,
        "finish": response.status,
    }


def last_prompt(state) -> str:
    return prompt_log(state)[-1]["prompt_text"]


def auto_prompt(url: str, state, api: str) -> str:
    ask(url, api, choice="auto")
    return last_prompt(state)


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """The scripted model's rules: they honour the constraints, as a guided engine would."""
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("rules")) as served:
        yield served


@pytest.fixture(scope="module")
def two_calls(tmp_path_factory):
    """A model that always calls Bash, then get_weather, whatever it is asked."""
    with running_server("qwen3", script=TWO_CALLS, tmp_path=tmp_path_factory.mktemp("two")) as served:
        yield served


@pytest.fixture(scope="module")
def text_only(tmp_path_factory):
    """A model that never calls."""
    with running_server("qwen3", script=TEXT_ONLY, tmp_path=tmp_path_factory.mktemp("text")) as served:
        yield served


# ------------------------------------------------------------------ none


@pytest.mark.parametrize("api", APIS)
def test_none_keeps_the_prompt_and_returns_no_call(api, rules):
    url, state = rules
    expected = auto_prompt(url, state, api)
    assert "<tools>" in expected and '"name": "get_weather"' in expected
    answer = ask(url, api, choice="none")
    assert last_prompt(state) == expected, "tool_choice none leaves the prompt (and its cached prefix) unchanged"
    assert answer["calls"] == [] and answer["text"].startswith("You said:")
    assert answer["finish"] in ("end_turn", "stop", "completed")


@pytest.mark.parametrize("api", APIS)
def test_none_suppresses_a_call_the_model_writes_anyway(api, two_calls):
    url, state = two_calls
    answer = ask(url, api, choice="none", stream=True)
    assert answer["calls"] == []
    assert '"name": "Bash"' in answer["text"], "the call syntax is text, not a call"
    assert answer["finish"] in ("end_turn", "stop", "completed")


# ------------------------------------------------------------------ required and named


@pytest.mark.parametrize("api", APIS)
def test_required_prefills_the_call_opener_and_returns_a_call(api, rules):
    url, state = rules
    expected = auto_prompt(url, state, api)
    answer = ask(url, api, choice="required")
    assert last_prompt(state) == expected + forced_prefill(api, HERMES_OPENER)
    assert answer["calls"] == [("Bash", {"command": SCRIPTED_COMMAND})]
    assert answer["finish"] in ("tool_use", "tool_calls", "completed")


@pytest.mark.parametrize("api", APIS)
def test_a_named_tool_is_the_tool_called(api, rules):
    url, state = rules
    expected = auto_prompt(url, state, api)
    # Left to itself the scripted model calls the shell tool first.
    answer = ask(url, api, choice="get_weather", stream=api == "chat")
    assert last_prompt(state) == expected + forced_prefill(api, NAMED_OPENER)
    assert answer["calls"] == [("get_weather", {"city": "example"})]
    assert answer["finish"] in ("tool_use", "tool_calls", "completed")


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("choice", ["required", "get_weather"])
def test_a_model_that_does_not_call_ends_with_an_api_error(api, choice, text_only):
    url, state = text_only
    for stream in (False, True):
        with pytest.raises(ERRORS) as caught:
            ask(url, api, choice=choice, stream=stream)
        assert "tool_choice requires" in str(caught.value)
        assert last_prompt(state).endswith(forced_prefill(api, HERMES_OPENER if choice == "required" else NAMED_OPENER))


def test_named_never_returns_another_tool(tmp_path):
    # The model insists on Bash; with get_weather's opener in the prompt its output
    # is no well-formed call, and the turn is an error rather than a Bash call.
    script = [[{"call": {"name": "Bash", "arguments": {"command": "ls"}}}]]
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, _):
        for api in APIS:
            with pytest.raises(ERRORS) as caught:
                ask(url, api, choice="get_weather")
            assert "get_weather" in str(caught.value)


def test_a_named_tool_that_is_not_offered_is_a_400(rules):
    url, _ = rules
    with pytest.raises(openai.BadRequestError):
        ask(url, "chat", choice="not_a_tool")


# ------------------------------------------------------------------ reasoning before a forced call


def reasoned_call(url: str, api: str) -> list[str]:
    """A turn forced to call get_weather with thinking on, as its parts in order:
    "reasoning", then "call:NAME" for each call."""
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    if api == "anthropic":
        c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        message = c.messages.create(
            model="test/model",
            max_tokens=4096,
            messages=question,
            tools=[{"name": "get_weather", "input_schema": WEATHER_SCHEMA}],
            tool_choice={"type": "tool", "name": "get_weather"},
            thinking={"type": "enabled", "budget_tokens": 2048},
        )
        return [
            "reasoning" if b.type == "thinking" else f"call:{b.name}"
            for b in message.content
            if b.type in ("thinking", "tool_use")
        ]
    o = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    if api == "chat":
        chat = o.chat.completions.create(
            model="test/model",
            messages=question,  # type: ignore[arg-type]
            tools=[{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}}],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
        )
        message = chat.choices[0].message
        reasoning = (message.model_extra or {}).get("reasoning_content")
        calls = [f"call:{c.function.name}" for c in message.tool_calls or []]
        return (["reasoning"] if reasoning else []) + calls
    response = o.responses.create(
        model="test/model",
        input=question,  # type: ignore[arg-type]
        tools=[{"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}],
        tool_choice={"type": "function", "name": "get_weather"},
        store=False,
    )
    return [
        "reasoning" if i.type == "reasoning" else f"call:{i.name}"
        for i in response.output
        if i.type in ("reasoning", "function_call")
    ]


@pytest.mark.parametrize("api", APIS)
def test_a_reasoning_model_reasons_before_the_forced_call(api, rules):
    url, state = rules
    assert reasoned_call(url, api) == ["reasoning", "call:get_weather"]
    assert last_prompt(state).endswith("<|im_start|>assistant\n<think>"), "the block is opened, not closed"


# ------------------------------------------------------------------ parallel_tool_calls


@pytest.mark.parametrize("api", APIS)
def test_parallel_false_returns_one_call(api, two_calls):
    url, state = two_calls
    both = ask(url, api, choice="auto")
    expected = last_prompt(state)
    assert [name for name, _ in both["calls"]] == ["Bash", "get_weather"]
    for stream in (False, True):
        one = ask(url, api, choice="auto", parallel=False, stream=stream)
        assert last_prompt(state) == expected
        assert one["calls"] == [("Bash", {"command": "ls"})]
        assert one["finish"] in ("tool_use", "tool_calls", "completed")


# ------------------------------------------------------------------ thinking budget


def test_thinking_budget_ends_the_reasoning_block(tmp_path):
    reasoning = " ".join(f"Step {i}: consider the weather in city number {i}." for i in range(200))
    script = [[{"reasoning": reasoning}, {"text": "It is sunny."}]]
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, state):
        c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        for budget, stream in ((24, False), (40, True)):
            params = {
                "model": "test/model",
                "max_tokens": 4096,
                "messages": [{"role": "user", "content": "Weather?"}],
                "thinking": {"type": "enabled", "budget_tokens": budget},
            }
            if stream:
                with c.messages.stream(**params) as s:
                    list(s)
                    message = s.get_final_message()
            else:
                message = c.messages.create(**params)
            assert [b.type for b in message.content] == ["thinking", "text"]
            thought = message.content[0].thinking
            assert 0 < len(state.pipeline.model.tokenizer.encode(thought)) <= budget
            assert reasoning.startswith(thought)
            assert message.content[1].text == "It is sunny."
            assert message.stop_reason == "end_turn"
            assert not last_prompt(state).rstrip().endswith("</think>"), "the budget is not a prefill"


# ------------------------------------------------------------------ the pipeline, guided engine


class GuidedEngine(WrappedEngine):
    """The scripted engine, claiming guided decoding: the pipeline sends it a call
    guide instead of a prefill."""

    def __init__(self, inner):
        super().__init__(inner)
        self.requests = []

    def info(self):
        return replace(self.inner.info(), guided_decoding=True)

    def generate(self, request):
        self.requests.append(request)
        return self.inner.generate(request)


def forced_weather(**fields) -> Conversation:
    """A conversation whose tool choice names get_weather, its one tool."""
    return Conversation(
        model="m",
        messages=[Message(role="user", parts=[Text(text="weather?")])],
        tools=[ToolSpec(name="get_weather", parameters=WEATHER_SCHEMA)],
        tool_choice=ToolChoice(mode="named", name="get_weather"),
        **fields,
    )


def run(pipeline: Pipeline, conversation: Conversation) -> list:
    async def collect():
        return [e async for e in pipeline.start(conversation).events()]

    return asyncio.run(collect())


def test_a_guided_engine_gets_the_call_syntax_and_another_tool_is_never_passed_on(two_calls):
    _, state = two_calls
    base = state.pipeline
    engine = GuidedEngine(base.engine)
    pipeline = Pipeline(base.model, engine)
    tools = [ToolSpec(name="Bash", parameters=BASH_SCHEMA), ToolSpec(name="get_weather", parameters=WEATHER_SCHEMA)]
    conversation = Conversation(
        model="m",
        messages=[Message(role="user", parts=[Text(text="weather?")])],
        tools=tools,
        tool_choice=ToolChoice(mode="named", name="get_weather"),
        thinking=ThinkingControl(mode="disabled"),
    )
    events = run(pipeline, conversation)
    constraints = engine.requests[-1].constraints
    assert constraints.prefill == "" and not engine.requests[-1].prompt_text.endswith(NAMED_OPENER)
    assert constraints.guide is not None and constraints.guide.triggers == ("<tool_call>",)
    assert [(t.begin, t.end) for t in constraints.guide.tags] == [(NAMED_OPENER, "}\n</tool_call>")]
    assert constraints.guide.tags[0].schema == WEATHER_SCHEMA
    # The model wrote a Bash call anyway: it is never passed on.
    assert not any(isinstance(e, (ToolCallStart, ToolCallReady)) for e in events)
    assert isinstance(events[-1], StreamError) and isinstance(events[-1].cause, ToolChoiceViolation)
    assert not any(isinstance(e, Finish) for e in events)

    required = conversation.model_copy(update={"tool_choice": ToolChoice(mode="required")})
    events = run(pipeline, required)
    assert [t.begin for t in engine.requests[-1].constraints.guide.tags] == [
        '<tool_call>\n{"name": "Bash", "arguments": ',
        NAMED_OPENER,
    ]
    assert [e.name for e in events if isinstance(e, ToolCallReady)] == ["Bash", "get_weather"]
    assert isinstance(events[-1], Finish) and events[-1].reason == "tool_calls"


def test_tool_choice_travels_to_the_engine(rules):
    _, state = rules
    engine = GuidedEngine(state.pipeline.engine)
    engine.info = lambda: EngineInfo("plain", 1_000_000)  # no guided decoding: a prefill
    pipeline = Pipeline(state.pipeline.model, engine)
    conversation = forced_weather(parallel_tool_calls=False)
    events = run(pipeline, conversation)
    constraints = engine.requests[-1].constraints
    assert (constraints.tool_choice, constraints.tool_name, constraints.parallel_tool_calls) == (
        "named",
        "get_weather",
        False,
    )
    assert constraints.prefill == NAMED_OPENER and constraints.guide is None
    assert [e.name for e in events if isinstance(e, ToolCallStart)] == ["get_weather"]


def test_a_guided_engine_reasons_unguided_then_gets_the_call_syntax(rules):
    _, state = rules
    engine = GuidedEngine(state.pipeline.engine)
    pipeline = Pipeline(state.pipeline.model, engine)
    conversation = forced_weather(thinking=ThinkingControl(mode="enabled"))
    events = run(pipeline, conversation)
    reasoning, call = engine.requests[-2:]
    assert reasoning.constraints.guide is None and reasoning.prompt_text.endswith("<think>")
    assert call.constraints.guide is not None and call.constraints.prefill == ""
    assert call.prompt_text.endswith("</think>\n\n") and call.prompt_token_ids[: len(reasoning.prompt_token_ids)] == (
        reasoning.prompt_token_ids
    )
    parts = [type(e).__name__ for e in events if isinstance(e, (ReasoningDelta, ToolCallReady))]
    assert parts[0] == "ReasoningDelta" and parts[-1] == "ToolCallReady" and parts.count("ToolCallReady") == 1
    assert isinstance(events[-1], Finish) and events[-1].reason == "tool_calls"
