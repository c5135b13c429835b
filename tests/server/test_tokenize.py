"""`/v1/tokenize` and `/v1/detokenize` (vLLM shapes), and count parity: what the
counting endpoints say equals the prompt the pipeline sent to the engine."""

from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest

from .serving import prompt_log, running_server
from .test_openai_chat import BASH, READ

JSON = {"content-type": "application/json"}
HISTORY = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I should look first.",
        "tool_calls": [
            {"id": "call_a1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_a1", "content": "a.txt\nb.txt"},
    {"role": "user", "content": "Now read a.txt."},
]


def _tokenize(url, body, path="/v1/tokenize"):
    return httpx.post(f"{url}{path}", json=body, timeout=30)


@pytest.mark.parametrize(
    "family,reasoning,tools", [("qwen3", None, None), ("kimi-k2", "kimi_k25", "kimi_k2"), ("gpt-oss", None, None)]
)
def test_chat_count_is_the_prompt_generation_used(family, reasoning, tools, tmp_path):
    with running_server(family, reasoning=reasoning, tools=tools, max_model_len=9000, tmp_path=tmp_path) as (
        url,
        state,
    ):
        body = {
            "model": "test/model",
            "messages": HISTORY,
            "tools": [BASH, READ],
            "chat_template_kwargs": {"custom_flag": True},
            "reasoning_effort": "low",
        }
        counted = _tokenize(url, {**body, "return_token_strs": True}).json()
        assert counted["max_model_len"] == 9000
        assert counted["count"] == len(counted["tokens"]) == len(counted["token_strs"])

        reply = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0).chat.completions.create(
            model="test/model",
            messages=HISTORY,
            tools=[BASH, READ],
            reasoning_effort="low",
            extra_body={"chat_template_kwargs": {"custom_flag": True}},
        )
        sent = prompt_log(state)[0]
        assert counted["count"] == sent["prompt_tokens"] == reply.usage.prompt_tokens
        # The tokens themselves are the prompt, and detokenize gives its text back.
        assert _tokenize(url, {"tokens": counted["tokens"]}, "/v1/detokenize").json()["prompt"] == sent["prompt_text"]

        # Without the generation prompt: the same conversation, a strict prefix.
        bare = _tokenize(
            url,
            {
                "messages": HISTORY,
                "tools": [BASH, READ],
                "chat_template_kwargs": {"custom_flag": True},
                "reasoning_effort": "low",
                "add_generation_prompt": False,
            },
        ).json()
        assert bare["count"] < counted["count"] and counted["tokens"][: bare["count"]] == bare["tokens"]


def test_text_form_and_detokenize(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        tokenizer = state.pipeline.model.tokenizer
        text = "Hello <|im_start|> world"
        plain = _tokenize(url, {"prompt": text, "return_token_strs": True}).json()
        assert plain["tokens"] == tokenizer.encode(text) and plain["count"] == len(plain["tokens"])
        assert tokenizer.token_to_id("<|im_start|>") in plain["tokens"] and "<|im_start|>" in plain["token_strs"]
        assert "token_strs" not in _tokenize(url, {"model": "test/model", "prompt": text}).json()
        assert _tokenize(url, {"tokens": plain["tokens"]}, "/v1/detokenize").json() == {"prompt": text}
        assert _tokenize(url, {"tokens": []}, "/v1/detokenize").json() == {"prompt": ""}

        cases = [
            (_tokenize(url, {"model": "nope", "prompt": "x"}), 404, "model_not_found"),
            (_tokenize(url, {"nothing": 1}), 400, None),
            (_tokenize(url, {"prompt": 5}), 400, None),
            (_tokenize(url, {"messages": []}), 400, None),
            (_tokenize(url, {"tokens": [1, -1]}, "/v1/detokenize"), 400, None),
            (_tokenize(url, {"tokens": [10**9]}, "/v1/detokenize"), 400, None),
            (_tokenize(url, {"model": "nope", "tokens": [1]}, "/v1/detokenize"), 404, "model_not_found"),
            (httpx.post(f"{url}/v1/tokenize", content=b"{", headers=JSON, timeout=30), 400, None),
        ]
        for response, status, code in cases:
            assert response.status_code == status, response.text
            assert response.json()["error"]["code"] == code and response.json()["error"]["message"]


def test_anthropic_count_tokens_and_chat_tokenize_agree_with_generation(tmp_path):
    anthropic_history = [
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should look first.", "signature": "foreign-signature"},
                {"type": "tool_use", "id": "call_a1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a1", "content": "a.txt\nb.txt"},
                {"type": "text", "text": "Now read a.txt."},
            ],
        },
    ]
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in (BASH, READ)
    ]
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        params = {
            "model": "test/model",
            "system": "You are a coding agent.",
            "messages": anthropic_history,
            "tools": tools,
        }
        reply = c.messages.create(max_tokens=200, **params)
        counted = c.messages.count_tokens(**params).input_tokens
        assert (
            counted
            == prompt_log(state)[0]["prompt_tokens"]
            == reply.usage.input_tokens + reply.usage.cache_read_input_tokens
        )

        # The same conversation in Chat Completions shape renders the same prompt.
        chat_count = _tokenize(url, {"messages": HISTORY, "tools": [BASH, READ]}).json()["count"]
        assert chat_count == counted
        openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0).chat.completions.create(
            model="test/model", messages=HISTORY, tools=[BASH, READ]
        )
        first, second = prompt_log(state)
        assert first["prompt_text"] == second["prompt_text"], json.dumps([first["prompt_text"], second["prompt_text"]])
