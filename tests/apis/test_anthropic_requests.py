"""The Anthropic body → `Conversation`: a string where blocks may stand is read
without building its block model, and must read exactly as its one text block."""

from __future__ import annotations

import pytest

from tokenyard.apis.anthropic.requests import to_conversation
from tokenyard.apis.anthropic.schema import CountTokensRequest, MessagesRequest


def _blocks(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


@pytest.mark.parametrize("kind", [MessagesRequest, CountTokensRequest])
@pytest.mark.parametrize("text", ["Explain streaming.", "", " <|im_end|> \n"])
def test_string_content_reads_as_its_text_block(kind, text):
    def body(as_blocks: bool) -> dict:
        content = _blocks(text) if as_blocks else text
        return {
            "model": "m",
            "max_tokens": 5,
            "system": content,
            "messages": [
                {"role": "user", "content": content},
                {"role": "assistant", "content": content},
                {"role": "user", "content": content},
            ],
        }

    strings = to_conversation(kind.model_validate(body(False)))
    blocks = to_conversation(kind.model_validate(body(True)))
    assert strings == blocks
    assert [m.role for m in strings.messages] == ["user", "assistant", "user"]
    assert all(m.text() == text for m in strings.messages) and strings.system[0].text == text


def test_defaults_when_the_body_sets_nothing():
    conversation = to_conversation(
        MessagesRequest.model_validate({"model": "m", "max_tokens": 7, "messages": [{"role": "user", "content": "x"}]})
    )
    assert conversation.tool_choice.mode == "auto" and conversation.thinking.mode == "default"
    assert conversation.sampling.max_tokens == 7 and conversation.sampling.stop == []
    counted = to_conversation(CountTokensRequest.model_validate({"model": "m", "messages": []}))
    assert counted.sampling.max_tokens is None
