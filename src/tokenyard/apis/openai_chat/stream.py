"""Events → OpenAI Chat Completions chunks (sans-IO).

`ChatCompletionStream` owns the tool-call indices (0..n per choice, in the order
calls start). The first chunk carries the role; reasoning goes out as
`reasoning_content` with a `reasoning` alias (clients read one name or the other);
a call's first chunk carries index, id, type, name and `arguments: ""`, later
chunks its argument fragments. The last choice chunk carries `finish_reason`;
with `stream_options.include_usage` a final chunk with no choices carries usage.

With streaming tool dispatch on, each complete call is announced by an
`event: tool_call_dispatch` before the chunk that carries its last argument
fragment (that chunk is held until the next event tells whether the call is
complete), and each finished reasoning block by an `event: reasoning_dispatch` (a
block ends at text, a call or the finish; runs of reasoning with only markers
between them are one block, their texts joined as the model wrote them).
Their data also has the chunk envelope with `choices: []`: the official openai SDK
does not skip named events, it turns their data into a `ChatCompletionChunk`, and
an empty choice list is what its stream helpers (and `data:`-only parsers) pass
over, as they do the usage chunk.

The same state machine assembles the non-streaming response (`completion()`).
"""

from __future__ import annotations

from typing import Any

from ...events import (
    Event,
    Finish,
    Marker,
    PromptProcessed,
    ReasoningDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStart,
    Usage,
)
from ...faults import ApiError
from ..encoder import EventEncoder
from ..spoke import Frame
from .errors import ERRORS

FINISH_REASONS = {"stop": "stop", "stop_sequence": "stop", "length": "length", "tool_calls": "tool_calls"}


def usage_dict(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


class ChatCompletionStream(EventEncoder):
    def __init__(
        self, completion_id: str, model: str, created: int, *, include_usage: bool = False, dispatch: bool = False
    ):
        super().__init__(dispatch=dispatch)
        self.completion_id = completion_id
        self.model = model
        self.created = created
        self._include_usage = include_usage
        self._indices: dict[int, int] = {}  # parser call index → this choice's tool_calls index
        self._calls: list[dict[str, Any]] = []
        self._arguments: list[list[str]] = []  # each call's argument fragments (joined once: linear)
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._open_reasoning: list[str] | None = None  # the block being streamed, for reasoning_dispatch
        self._held: Frame | None = None  # the latest chunk of a call, until we know if it completed it
        # Whitespace the parser reported as block-edge markers since the last text:
        # content is one string here, so it goes back between two text runs (as vLLM's
        # and SGLang's content keeps it), or the runs' words would run together.
        self._gap = ""
        self.finish_reason: str | None = None
        self.usage = Usage()

    # ---- the stream (the StreamEncoder protocol, apis/spoke.py) ------------------------

    def error(self, error: ApiError) -> list[Frame]:
        """A mid-stream failure: the OpenAI SDK raises `APIError` on a chunk holding `error`."""
        return [(None, ERRORS.body(error))]

    def finish(self) -> list[Frame]:
        return [(None, "[DONE]")]

    def result(self) -> dict[str, Any]:
        return self.completion()

    # ---- the events (EventEncoder's hooks, apis/encoder.py) ----------------------------

    def _encode(self, event: Event) -> list[Frame]:
        # Text, a call or the finish ends the reasoning block being dispatched: markers
        # alone between two runs of reasoning (`</think><think>`) leave it one block,
        # as `reasoning_content` and Anthropic's and Responses' blocks join them. Any
        # other event sends the held chunk of a call (a call's Ready sends it after
        # its dispatch event).
        if self._open_reasoning is None and self._held is None:  # the usual case
            return super()._encode(event)
        before: list[Frame] = []
        if self._open_reasoning is not None and type(event) is not ReasoningDelta and type(event) is not Marker:
            before = self._close_reasoning()
        if self._held is not None and type(event) is not ToolCallReady and type(event) is not Marker:
            before.append(self._held)
            self._held = None
        frames = super()._encode(event)
        return before + frames if before else frames

    def on_text(self, text: str) -> list[Frame]:
        if self._gap:
            text, self._gap = self._gap + text, ""
        self._text.append(text)
        return [self._chunk({"content": text})]

    def on_reasoning(self, text: str) -> list[Frame]:
        self._reasoning.append(text)
        if self._dispatch:
            if self._open_reasoning is None:
                self._open_reasoning = []
            self._open_reasoning.append(text)
        return [self._chunk({"reasoning_content": text, "reasoning": text})]

    def on_call_start(self, event: ToolCallStart) -> list[Frame]:
        index = self._indices[event.index] = len(self._calls)
        self._calls.append({"id": event.id, "type": "function", "function": {"name": event.name, "arguments": ""}})
        self._arguments.append([])
        first = {"index": index, "id": event.id, "type": "function", "function": {"name": event.name, "arguments": ""}}
        return self._call_chunk(first)

    def on_call_delta(self, event: ToolCallDelta) -> list[Frame]:
        index = self._indices[event.index]
        self._arguments[index].append(event.arguments)
        return self._call_chunk({"index": index, "function": {"arguments": event.arguments}})

    def on_call_ready(self, event: ToolCallReady) -> list[Frame]:
        out: list[Frame] = []
        if self._dispatch:
            index = self._indices[event.index]
            call = {
                "index": index,
                "id": event.id,
                "type": "function",
                "function": {"name": event.name, "arguments": event.arguments},
            }
            out.append(("tool_call_dispatch", self._envelope({"choice_index": 0, "tool_call": call})))
        if self._held is not None:
            out.append(self._held)
            self._held = None
        return out

    def on_marker(self, event: Marker) -> list[Frame]:
        # No content; a call's closing markers come before its Ready.
        if self._text and not event.text.strip():
            self._gap += event.text
        return []

    def on_prompt_processed(self, event: PromptProcessed) -> list[Frame]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def on_finish(self, finish: Finish) -> list[Frame]:
        self.finish_reason = FINISH_REASONS.get(finish.reason, "stop")
        self.usage = finish.usage
        out = [self._chunk({}, finish_reason=self.finish_reason)]
        if self._include_usage:
            out.append((None, {**self._envelope({}), "usage": usage_dict(finish.usage)}))
        return out

    def completion(self) -> dict[str, Any]:
        """The whole response, for non-streaming requests."""
        text = "".join(self._text)
        for call, fragments in zip(self._calls, self._arguments, strict=True):
            call["function"]["arguments"] = "".join(fragments)
        calls = self._calls
        message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
        if self._reasoning:
            reasoning = "".join(self._reasoning)
            message["reasoning_content"] = reasoning
            message["reasoning"] = reasoning
        if calls:
            message["tool_calls"] = calls
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self.finish_reason}],
            "usage": usage_dict(self.usage),
        }

    # ---- pieces ---------------------------------------------------------------------

    def _call_chunk(self, call: dict[str, Any]) -> list[Frame]:
        chunk = self._chunk({"tool_calls": [call]})
        if not self._dispatch:
            return [chunk]
        self._held = chunk
        return []

    def _close_reasoning(self) -> list[Frame]:
        block = "".join(self._open_reasoning or [])
        self._open_reasoning = None
        # `index` and `reasoning_content` are Dynamo's keys for the same event.
        payload = {"choice_index": 0, "index": 0, "reasoning": block, "reasoning_content": block}
        return [("reasoning_dispatch", self._envelope(payload))]

    def _envelope(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            **extra,
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> Frame:
        data = self._envelope({})
        data["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        if self._include_usage:
            data["usage"] = None  # as OpenAI: present on every chunk, filled on the last
        return (None, data)
