"""Events → Anthropic Messages stream events (sans-IO).

`MessageStream` owns the block indices. One content block per contiguous run of
thinking, text or tool_use, in the order produced; `message_start` carries the real
prompt usage; `message_delta` the stop reason and cumulative usage. Thinking blocks
close with a `signature_delta` that seals the exact reasoning (sealing.py), so the
reasoning comes back intact on the next turn even when the client was told to omit
its text. With streaming tool dispatch on, each complete call is also announced by a
`tool_call_dispatch` event the moment it is parsed, while the turn goes on.

The same state machine assembles the non-streaming response (`message()`).
"""

from __future__ import annotations

import json
from typing import Any

from ...events import (
    Event,
    Finish,
    PromptProcessed,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallDelta,
    ToolCallIncomplete,
    ToolCallReady,
    ToolCallStart,
    Usage,
)
from ...sealing import ReasoningSeal
from ..memory import ToolCallMemory
from .requests import THINKING_SEAL_CONTEXT

WireEvent = tuple[str, dict[str, Any]]

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "stop_sequence": "stop_sequence", "tool_calls": "tool_use"}


class MessageStream:
    def __init__(
        self,
        message_id: str,
        model: str,
        *,
        seal: ReasoningSeal | None = None,
        calls: ToolCallMemory | None = None,
        dispatch: bool = False,
        show_thinking: bool = True,
    ):
        self.message_id = message_id
        self.model = model
        self._seal = seal
        self._calls = calls
        self._dispatch = dispatch
        self._show_thinking = show_thinking
        self._index = -1
        self._open: str | None = None  # "thinking" | "text" | "tool_use"
        self._thinking: list[str] = []
        self._blocks: list[dict[str, Any]] = []  # the assembled content, for message()
        self._tool_json: list[str] = []
        self._usage = {
            "input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 0,
        }
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.started = False  # message_start was sent

    # ---- the stream ---------------------------------------------------------------

    def feed(self, event: Event) -> list[WireEvent]:
        kind = type(event)
        if kind is TextDelta:
            out = self._ensure("text")
            self._blocks[-1]["text"] += event.text  # type: ignore[union-attr]
            out.append(self._delta({"type": "text_delta", "text": event.text}))  # type: ignore[union-attr]
            return out
        if kind is ReasoningDelta:
            out = self._ensure("thinking")
            self._thinking.append(event.text)  # type: ignore[union-attr]
            if self._show_thinking:
                self._blocks[-1]["thinking"] += event.text  # type: ignore[union-attr]
                out.append(self._delta({"type": "thinking_delta", "thinking": event.text}))  # type: ignore[union-attr]
            return out
        if kind is ToolCallStart:
            out = self._close()
            self._index += 1
            self._open = "tool_use"
            self._tool_json = []
            block = {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}  # type: ignore[union-attr]
            self._blocks.append(block)
            out.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": self._index, "content_block": dict(block)},
                )
            )
            return out
        if kind is ToolCallDelta:
            self._tool_json.append(event.arguments)  # type: ignore[union-attr]
            return [self._delta({"type": "input_json_delta", "partial_json": event.arguments})]  # type: ignore[union-attr]
        if kind is ToolCallReady:
            block = self._blocks[-1]
            block["input"] = event.input()  # type: ignore[union-attr]
            if self._calls is not None:
                self._calls.remember(event.id, event.arguments)  # type: ignore[union-attr]
            out = self._close()
            if self._dispatch:
                out.append(
                    (
                        "tool_call_dispatch",
                        {
                            "type": "tool_call_dispatch",
                            "index": self._index,
                            "tool_call": {"id": event.id, "name": event.name, "input": block["input"]},
                        },  # type: ignore[union-attr]
                    )
                )
            return out
        if kind is ToolCallIncomplete:
            # The block was announced and can not be taken back; it keeps the valid
            # prefix of its arguments. Nothing is dispatched for it.
            self._blocks[-1]["input"] = _partial_input("".join(self._tool_json))
            return self._close()
        if kind is PromptProcessed:
            return [self.start(event.prompt_tokens, event.cached_tokens, event.cache_written_tokens)]  # type: ignore[union-attr]
        if kind is Finish:
            return self.finish(event)  # type: ignore[arg-type]
        if kind is StreamError:
            return self._close() + [error_event(event.kind, event.message)]  # type: ignore[union-attr]
        return []  # Markers carry no content

    def start(self, prompt_tokens: int, cached_tokens: int, cache_written_tokens: int = 0) -> WireEvent:
        self.started = True
        self._set_prompt_usage(prompt_tokens, cached_tokens, cache_written_tokens)
        return (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": self.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": dict(self._usage),
                },
            },
        )

    def finish(self, finish: Finish) -> list[WireEvent]:
        out = self._close()
        self._apply_usage(finish.usage)
        self.stop_reason = STOP_REASONS.get(finish.reason, "end_turn")
        self.stop_sequence = finish.stop_sequence
        out.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self.stop_reason, "stop_sequence": self.stop_sequence},
                    "usage": dict(self._usage),
                },
            )
        )
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    def message(self) -> dict[str, Any]:
        """The whole response, for non-streaming requests."""
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._blocks,
            "stop_reason": self.stop_reason,
            "stop_sequence": self.stop_sequence,
            "usage": dict(self._usage),
        }

    # ---- blocks ---------------------------------------------------------------------

    def _ensure(self, kind: str) -> list[WireEvent]:
        if self._open == kind:
            return []
        out = self._close()
        self._index += 1
        self._open = kind
        block: dict[str, Any] = (
            {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": "", "signature": ""}
        )
        self._blocks.append(block)
        out.append(
            ("content_block_start", {"type": "content_block_start", "index": self._index, "content_block": dict(block)})
        )
        return out

    def _close(self) -> list[WireEvent]:
        if self._open is None:
            return []
        out: list[WireEvent] = []
        if self._open == "thinking":
            reasoning = "".join(self._thinking)
            self._thinking = []
            signature = self._seal.seal(reasoning, THINKING_SEAL_CONTEXT) if self._seal else ""
            self._blocks[-1]["signature"] = signature
            out.append(self._delta({"type": "signature_delta", "signature": signature}))
        out.append(("content_block_stop", {"type": "content_block_stop", "index": self._index}))
        self._open = None
        return out

    def _delta(self, delta: dict[str, Any]) -> WireEvent:
        return ("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _apply_usage(self, usage: Usage) -> None:
        self._set_prompt_usage(usage.prompt_tokens, usage.cached_tokens, usage.cache_written_tokens)
        self._usage["output_tokens"] = usage.completion_tokens

    def _set_prompt_usage(self, prompt: int, read: int, written: int) -> None:
        """Anthropic splits the prompt in three: read from the cache, newly written to
        it (what the engine stored for reuse), and the rest."""
        written = max(0, min(written, prompt - read))
        self._usage["input_tokens"] = prompt - read - written
        self._usage["cache_read_input_tokens"] = read
        self._usage["cache_creation_input_tokens"] = written


def error_event(kind: str, message: str) -> WireEvent:
    return ("error", {"type": "error", "error": {"type": kind, "message": message}})


def _partial_input(prefix: str) -> dict[str, Any]:
    """The object a valid JSON prefix describes so far (for the non-streaming view
    of a call that was cut off): close what is open and parse once."""
    stack: list[str] = []
    in_string = escaped = False
    for c in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]" and stack:
            stack.pop()
    text = prefix + ('"' if in_string else "")
    text = text.rstrip()
    if text.endswith(","):
        text = text[:-1]
    elif text.endswith(":"):
        text += " null"
    try:
        value = json.loads(text + "".join(reversed(stack)))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
