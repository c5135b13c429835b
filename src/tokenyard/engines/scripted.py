"""Deterministic answers in any family's wire format, for tests and demos.

The scripted engine plays a model: it reads the conversation, decides what to say
(from a file of turns, or a small rule set), writes it in the configured family's
raw format (engines/wire.py) — reasoning markers, tool-call syntax and all — and
streams it back token by token through the real tokenizer. That is how end-to-end
tests drive real harnesses through every parser.

Rules (the default): if the messages since the model's last turn carry tool
results, answer with text that quotes them; otherwise call a tool (a shell tool such as Claude Code's `Bash`, Codex's
`exec_command` or OpenClaw's `exec` when one is offered, else the first tool; arguments made from its
schema), or answer with text when none is offered. With thinking on, each
answer starts with a short reasoning block.

A script file is JSON: a list of turns, each a list of segments
`{"reasoning": "…"}`, `{"text": "…"}`, `{"call": {"name": "…", "arguments": {…}}}`,
or `{"raw": "…"}` (exact model output). Turn k answers the k-th assistant turn of
a conversation; the last turn repeats.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..conversation import Conversation, ToolCall, ToolResult, ToolSpec
from .base import EngineChunk, EngineInfo, EngineRequest
from .wire import REASONING_MARKERS, Call, Reasoning, Segment, render_output
from .wire import Text as TextSegment

if TYPE_CHECKING:  # engines get a tokenizer handed in; they do not import prompting
    from ..prompting.tokenizer import Tokenizer

# What a scripted shell call runs: harmless, and its output is recognisable.
SCRIPTED_COMMAND = "echo tokenyard-scripted-$((6*7))"
SHELL_TOOLS = ("Bash", "exec_command", "exec", "shell", "bash", "run_shell_command")


class ScriptedEngine:
    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        tool_format: str | None,
        reasoning_format: str | None,
        script: Path | None = None,
        token_delay: float = 0.0,
        tokens_per_chunk: int = 1,
        max_model_len: int = 1_000_000,
        name: str = "scripted",
    ):
        self._tokenizer = tokenizer
        self._tool_format = tool_format
        self._reasoning_format = reasoning_format
        self._turns = json.loads(Path(script).read_text(encoding="utf-8")) if script else None
        self._delay = token_delay
        self._per_chunk = max(1, tokens_per_chunk)
        self._max_model_len = max_model_len
        self._name = name

    def info(self) -> EngineInfo:
        return EngineInfo(self._name, self._max_model_len)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def answer_text(self, request: EngineRequest) -> str:
        """The raw output this engine gives for `request`."""
        conversation = request.conversation
        thinking = bool(conversation and conversation.thinking.enabled and self._reasoning_format)
        calls_before = sum(
            1 for m in (conversation.messages if conversation else []) for p in m.parts if isinstance(p, ToolCall)
        )
        if self._turns is not None:
            raw = self._scripted_turn(conversation, calls_before)
        else:
            raw = render_output(
                self._rule_answer(conversation, thinking),
                self._tool_format,
                self._reasoning_format if thinking else None,
                calls_before=calls_before,
            )
        return _strip_opened_marker(raw, request.prompt_text, self._reasoning_format)

    async def generate(self, request: EngineRequest) -> AsyncIterator[EngineChunk]:
        ids = self._tokenizer.encode(self.answer_text(request))
        limit = max(0, request.max_tokens)
        yield EngineChunk(cached_tokens=0)
        emitted = 0
        for start in range(0, min(len(ids), limit), self._per_chunk):
            if self._delay:
                await asyncio.sleep(self._delay)
            else:
                await asyncio.sleep(0)  # let the server interleave other work
            chunk = ids[start : min(start + self._per_chunk, limit)]
            emitted += len(chunk)
            yield EngineChunk(token_ids=chunk)
        yield EngineChunk(finish_reason="length" if emitted < len(ids) else "stop")

    # ---- deciding what to say ----------------------------------------------------------

    def _scripted_turn(self, conversation: Conversation | None, calls_before: int) -> str:
        assert self._turns is not None
        turn_index = sum(1 for m in conversation.messages if m.role == "assistant") if conversation else 0
        turn = self._turns[min(turn_index, len(self._turns) - 1)]
        segments: list[Segment] = []
        raw_parts: list[str] = []
        for item in turn:
            if "raw" in item:
                if segments:
                    raw_parts.append(
                        render_output(segments, self._tool_format, self._reasoning_format, calls_before=calls_before)
                    )
                    calls_before += sum(1 for s in segments if isinstance(s, Call))
                    segments = []
                raw_parts.append(item["raw"])
            elif "reasoning" in item:
                segments.append(Reasoning(item["reasoning"]))
            elif "text" in item:
                segments.append(TextSegment(item["text"]))
            elif "call" in item:
                segments.append(Call(item["call"]["name"], item["call"].get("arguments", {})))
        if segments:
            raw_parts.append(
                render_output(segments, self._tool_format, self._reasoning_format, calls_before=calls_before)
            )
        return "".join(raw_parts)

    def _rule_answer(self, conversation: Conversation | None, thinking: bool) -> list[Segment]:
        messages = conversation.messages if conversation else []
        last = messages[-1] if messages else None
        # The results answer the model's last turn even when the client appends a
        # message of its own after them (OpenClaw adds an internal-context user
        # message after every tool result when it offers its full tool set).
        since_model = list(itertools.takewhile(lambda m: m.role != "assistant", reversed(messages)))
        results = [p for m in reversed(since_model) for p in m.parts if isinstance(p, ToolResult)]
        segments: list[Segment] = []
        if results:
            quoted = "\n".join(r.text() for r in results).strip()
            if thinking:
                segments.append(Reasoning("The tool has answered; I can report what it returned."))
            segments.append(TextSegment(f"The tool returned: {quoted}"))
            return segments
        tools = conversation.tools if conversation else []
        if not tools:
            if thinking:
                segments.append(Reasoning("No tools are offered, so I answer directly."))
            question = last.text().strip() if last else ""
            segments.append(TextSegment(f"You said: {question[:200]}" if question else "Hello from tokenyard."))
            return segments
        tool = next((t for t in tools if t.namespace is None and t.name in SHELL_TOOLS), tools[0])
        if thinking:
            segments.append(Reasoning(f"I should call {tool.model_name} first to see what it reports."))
        segments.append(Call(tool.model_name, example_arguments(tool)))
        return segments


def example_arguments(tool: ToolSpec) -> dict[str, Any]:
    """Arguments for `tool` from its schema: every required parameter, typed."""
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)[:1]
    out: dict[str, Any] = {}
    for name in required:
        spec = properties.get(name)
        spec = spec if isinstance(spec, dict) else {}  # a boolean schema: anything goes
        kind = spec.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if "enum" in spec and spec["enum"]:
            out[name] = spec["enum"][0]
        elif kind in ("integer", "number"):
            out[name] = 1
        elif kind == "boolean":
            out[name] = False
        elif kind == "array":
            out[name] = []
        elif kind == "object":
            out[name] = {}
        elif "command" in name or "cmd" in name:
            out[name] = SCRIPTED_COMMAND
        elif "path" in name or "file" in name:
            out[name] = "README.md"
        else:
            out[name] = "example"
    return out


def _strip_opened_marker(raw: str, prompt_text: str, reasoning_format: str | None) -> str:
    """If the prompt already opened the reasoning block, the model does not write
    the start marker again."""
    if not reasoning_format or reasoning_format not in REASONING_MARKERS:
        return raw
    start = REASONING_MARKERS[reasoning_format][0]
    if prompt_text.rstrip().endswith(start.rstrip()) and raw.startswith(start):
        return raw[len(start) :].lstrip("\n") if not start.endswith("\n") else raw[len(start) :]
    return raw
