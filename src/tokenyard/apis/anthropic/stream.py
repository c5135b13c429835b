"""Events → Anthropic Messages stream events (sans-IO).

`MessageStream` owns the block indices. One content block per contiguous run of
thinking, text or tool_use, in the order produced; `message_start` carries the real
prompt usage; `message_delta` the stop reason and cumulative usage (and, when the
request asked for them, the verdicts on the turn's calls: `safeguard_results`). Thinking blocks
close with a `signature_delta` that seals the exact reasoning (sealing.py), so the
reasoning comes back intact on the next turn even when the client was told to omit
its text. With streaming tool dispatch on, each complete call is also announced by a
`tool_call_dispatch` event the moment it is parsed, while the turn goes on.

The same state machine assembles the non-streaming response (`message()`).
"""

from __future__ import annotations

from typing import Any

from ...events import Finish, PromptProcessed, ToolCallDelta, ToolCallReady, ToolCallStart, Usage
from ...faults import ApiError
from ..encoder import EventEncoder
from ..replay_state import ReplayState
from ..spoke import Frame
from .errors import ERRORS
from .requests import THINKING_SEAL_CONTEXT
from .safeguards import safeguard_results

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "stop_sequence": "stop_sequence", "tool_calls": "tool_use"}


class MessageStream(EventEncoder):
    def __init__(
        self,
        message_id: str,
        model: str,
        *,
        replay: ReplayState | None = None,
        dispatch: bool = False,
        show_thinking: bool = True,
        cache_breakpoint: bool = False,
    ):
        super().__init__(dispatch=dispatch)
        self.message_id = message_id
        self.model = model
        self._replay = replay
        self._show_thinking = show_thinking
        self._cache_breakpoint = cache_breakpoint
        self._index = -1
        self._open: str | None = None  # "thinking" | "text" | "tool_use"
        self._thinking: list[str] = []
        self._text: list[str] = []  # the open text block's text (joined when it closes: linear)
        self._blocks: list[dict[str, Any]] = []  # the assembled content, for message()
        self._usage = {
            "input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 0,
        }
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        # The verdicts on the turn's calls, when the request asked for them.
        self.safeguard_results: list[dict[str, Any]] | None = None
        self.started = False  # message_start was sent

    # ---- the stream (the StreamEncoder protocol, apis/spoke.py) ------------------------

    def error(self, error: ApiError) -> list[Frame]:
        return [*self._close(), error_event(ERRORS.row(error).type, error.message)]

    def keepalive(self) -> Frame | None:
        # Before message_start only an SSE comment is safe; after it, a ping.
        return ("ping", {"type": "ping"}) if self.started else None

    def result(self) -> dict[str, Any]:
        return self.message()

    # ---- the events (EventEncoder's hooks, apis/encoder.py) ----------------------------

    def on_text(self, text: str) -> list[Frame]:
        out = self._ensure("text")
        self._text.append(text)
        out.append(self._delta({"type": "text_delta", "text": text}))
        return out

    def on_reasoning(self, text: str) -> list[Frame]:
        out = self._ensure("thinking")
        self._thinking.append(text)
        if self._show_thinking:
            out.append(self._delta({"type": "thinking_delta", "thinking": text}))
        return out

    def on_call_start(self, event: ToolCallStart) -> list[Frame]:
        out = self._close()
        self._index += 1
        self._open = "tool_use"
        block = {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
        self._blocks.append(block)
        out.append(
            ("content_block_start", {"type": "content_block_start", "index": self._index, "content_block": dict(block)})
        )
        return out

    def on_call_delta(self, event: ToolCallDelta) -> list[Frame]:
        return [self._delta({"type": "input_json_delta", "partial_json": event.arguments})]

    def on_call_ready(self, event: ToolCallReady) -> list[Frame]:
        block = self._blocks[-1]
        block["input"] = event.input()
        if self._replay is not None:
            self._replay.remember_call(event.id, event.arguments)
        out = self._close()
        if self._dispatch:
            out.append(
                (
                    "tool_call_dispatch",
                    {
                        "type": "tool_call_dispatch",
                        "index": self._index,
                        "tool_call": {"id": event.id, "name": event.name, "input": block["input"]},
                    },
                )
            )
        return out

    def on_prompt_processed(self, event: PromptProcessed) -> list[Frame]:
        # message_start waits for the prompt's usage (start() sends nothing).
        return [self._message_start(event.prompt_tokens, event.cached_tokens, event.cache_written_tokens)]

    def _message_start(self, prompt_tokens: int, cached_tokens: int, cache_written_tokens: int = 0) -> Frame:
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

    def on_finish(self, finish: Finish) -> list[Frame]:
        out = self._close()
        self._apply_usage(finish.usage)
        self.stop_reason = STOP_REASONS.get(finish.reason, "end_turn")
        self.stop_sequence = finish.stop_sequence
        delta: dict[str, Any] = {"stop_reason": self.stop_reason, "stop_sequence": self.stop_sequence}
        if finish.verdicts is not None:
            self.safeguard_results = safeguard_results(finish.verdicts)
            delta["safeguard_results"] = self.safeguard_results
        out.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": dict(self._usage)}))
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    def message(self) -> dict[str, Any]:
        """The whole response, for non-streaming requests."""
        message = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._blocks,
            "stop_reason": self.stop_reason,
            "stop_sequence": self.stop_sequence,
            "usage": dict(self._usage),
        }
        if self.safeguard_results is not None:
            message["safeguard_results"] = self.safeguard_results
        return message

    # ---- blocks ---------------------------------------------------------------------

    def _ensure(self, kind: str) -> list[Frame]:
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

    def _close(self) -> list[Frame]:
        if self._open is None:
            return []
        out: list[Frame] = []
        if self._open == "thinking":
            reasoning = "".join(self._thinking)
            self._thinking = []
            if self._show_thinking:
                self._blocks[-1]["thinking"] = reasoning
            signature = self._replay.seal_reasoning(reasoning, THINKING_SEAL_CONTEXT) if self._replay else ""
            self._blocks[-1]["signature"] = signature
            out.append(self._delta({"type": "signature_delta", "signature": signature}))
        elif self._open == "text":
            self._blocks[-1]["text"] = "".join(self._text)
            self._text = []
        out.append(("content_block_stop", {"type": "content_block_stop", "index": self._index}))
        self._open = None
        return out

    def _delta(self, delta: dict[str, Any]) -> Frame:
        return ("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _apply_usage(self, usage: Usage) -> None:
        self._set_prompt_usage(usage.prompt_tokens, usage.cached_tokens, usage.cache_written_tokens)
        self._usage["output_tokens"] = usage.completion_tokens

    def _set_prompt_usage(self, prompt: int, read: int, written: int) -> None:
        """Anthropic splits the prompt in three that add up to it: read from the cache,
        written to it (cache_creation: only up to a `cache_control` breakpoint the
        request marked), and `input_tokens`, the rest. An engine caches every prompt by
        itself, but a request that marks no breakpoint creates no cache entry on
        Anthropic's accounting: all it did not read is `input_tokens` (never 0 because
        the engine also stored those tokens)."""
        written = max(0, min(written, prompt - read)) if self._cache_breakpoint else 0
        self._usage["input_tokens"] = prompt - read - written
        self._usage["cache_read_input_tokens"] = read
        self._usage["cache_creation_input_tokens"] = written


def error_event(kind: str, message: str) -> Frame:
    return ("error", {"type": "error", "error": {"type": kind, "message": message}})
