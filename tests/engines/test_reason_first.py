"""engines/reason_first.py on an engine that streams text, not ids: the reasoning
block's end marker is found wherever the chunks split it, and only once."""

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import replace

import pytest

from tokenyard.engines.base import Constraints, EngineChunk, EngineRequest, ReasonFirst
from tokenyard.engines.reason_first import reason_then_call

REASONING = "Weather needs a city. Paris it is."
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


class CharTokenizer:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


class TextEngine:
    """The reasoning request writes `output` in `size`-character chunks, past the end
    marker; the call request writes the call."""

    def __init__(self, output: str, size: int):
        self.output, self.size = output, size
        self.requests: list[EngineRequest] = []

    async def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        self.requests.append(request)
        text = self.output if len(self.requests) == 1 else CALL + "</tool_call>"
        for at in range(0, len(text), self.size):
            yield EngineChunk(text=text[at : at + self.size])
        yield EngineChunk(finish_reason="stop")


async def _run(engine: TextEngine) -> str:
    plan = ReasonFirst(end="</think>", separator="\n\n", opener="<tool_call>\n")
    request = EngineRequest("r", [1, 2], 500, prompt_text="<think>\n")
    request = replace(request, constraints=replace(Constraints(), tool_choice="required", reason_first=plan))
    out = []
    async for chunk in reason_then_call(engine, request, CharTokenizer()):
        out.append(chunk.text or "")
    return "".join(out)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_the_end_marker_is_found_across_chunk_splits(size):
    engine = TextEngine(REASONING + "</think>and then it rambled on", size)
    streamed = asyncio.run(_run(engine))
    assert streamed == REASONING + "</think>" + "\n\n<tool_call>\n" + CALL + "</tool_call>"
    assert engine.requests[1].prompt_text == "<think>\n" + REASONING + "</think>\n\n<tool_call>\n"
