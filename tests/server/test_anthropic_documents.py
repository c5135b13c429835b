"""Anthropic `document` and `search_result` blocks reach the model as text, numbered
as Anthropic's citations number them, with their title and source (they used to be
dropped without a word)."""

from __future__ import annotations

import base64

import anthropic
import pytest

from .serving import prompt_log, running_server


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("docs")) as (url, state):
        yield anthropic.Anthropic(base_url=url, api_key="x", max_retries=0), state


def ask(client, state, content) -> str:
    client.messages.create(model="test/model", max_tokens=8, messages=[{"role": "user", "content": content}])
    return prompt_log(state)[-1]["prompt_text"]


def test_documents_of_every_text_source_are_in_the_prompt(served):
    client, state = served
    prompt = ask(
        client,
        state,
        [
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "The grass is green."},
                "title": "Nature facts",
                "context": "From a children's book",
                "citations": {"enabled": True},
            },
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "text/plain",
                    "data": base64.b64encode("Die Sonne ist gelb. ☀".encode()).decode(),
                },
            },
            {
                "type": "document",
                "source": {
                    "type": "content",
                    "content": [{"type": "text", "text": "First chunk."}, {"type": "text", "text": "Second chunk."}],
                },
                "title": "Chunks",
            },
            {"type": "text", "text": "What colour is the grass?"},
        ],
    )
    assert '<document index="0">\n<source>Nature facts</source>\n<context>From a children\'s book</context>' in prompt
    assert "<document_content>\nThe grass is green.\n</document_content>" in prompt
    assert '<document index="1">\n<document_content>\nDie Sonne ist gelb. ☀\n</document_content>' in prompt
    assert '<document index="2">\n<source>Chunks</source>\n<document_content>\nFirst chunk.\nSecond chunk.' in prompt
    assert prompt.index("Second chunk.") < prompt.index("What colour is the grass?")


def test_a_pdf_is_named_not_dropped(served):
    client, state = served
    pdf = {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(b"%PDF-1.4").decode()}
    prompt = ask(
        client, state, [{"type": "document", "source": pdf, "title": "r.pdf"}, {"type": "text", "text": "Sum up."}]
    )
    assert (
        '<document index="0">\n<source>r.pdf</source>\n[application/pdf document: not readable by this model]' in prompt
    )


def test_search_results_in_a_tool_result_and_at_top_level(served):
    client, state = served
    result = {
        "type": "search_result",
        "source": "https://docs.example.com/api",
        "title": "API reference",
        "content": [{"type": "text", "text": "Use POST /v1/items."}],
        "citations": {"enabled": True},
    }
    client.messages.create(
        model="test/model",
        max_tokens=8,
        tools=[{"name": "search", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}],
        messages=[
            {"role": "user", "content": [result, {"type": "text", "text": "How do I add an item?"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "items"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [result]}]},
        ],
    )
    prompt = prompt_log(state)[-1]["prompt_text"]
    block = (
        '<search_result index="{}">\n<source>https://docs.example.com/api</source>\n<title>API reference</title>\n'
        "<content>\nUse POST /v1/items.\n</content>\n</search_result>"
    )
    assert block.format(0) in prompt and block.format(1) in prompt
    assert prompt.index(block.format(0)) < prompt.index("How do I add an item?") < prompt.index(block.format(1))


def test_a_document_with_bad_base64_is_a_400(served):
    client, _ = served
    with pytest.raises(anthropic.BadRequestError, match="base64"):
        client.messages.create(
            model="test/model",
            max_tokens=8,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": "@@@"}}
                    ],
                }
            ],
        )
