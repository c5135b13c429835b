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
answer starts with a short reasoning block. A text answer to a request with an
output format is JSON made from its schema, as a model following it would write.

A script file is JSON: a list of turns, each a list of segments
`{"reasoning": "…"}`, `{"text": "…"}`, `{"call": {"name": "…", "arguments": {…}}}`,
or `{"raw": "…"}` (exact model output). Turn k answers the k-th assistant turn of
a conversation; the last turn repeats.

It also plays the safety classifier (safeguards.py): a classifier query is answered
`<block>no</block>` (allow), unless the script is an object `{"turns": […],
"verdicts": [{"contains": "…", "answer": "…"}, …]}`: the first entry whose
`contains` is in the call under review (or that has none) gives the exact answer.

It honours the request's constraints as a guided-decoding engine would: under
`tool_choice` "none" the rules answer in text; "required" or a named tool makes
them call (the named tool); `parallel_tool_calls: false` never gets more than one
call from the rules; a prefilled call opener is continued, not repeated (nor is
reasoning written after one, or after a reasoning block the prompt closed); a reasoning
budget cuts each reasoning block to its tokens and closes it. A script is played as
written (the pipeline then enforces what it breaks), except for the prefill and the
budget.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from ..conversation import Conversation, ToolCall, ToolResult, ToolSpec
from ..safeguards import REQUEST_KIND, action_under_review, verdict_answer
from .base import Constraints, EngineChunk, EngineInfo, EngineRequest, EngineTokenizer
from .wire import REASONING_MARKERS, Call, Reasoning, Segment, render_output
from .wire import Text as TextSegment

HARMONY_ANALYSIS = "<|channel|>analysis<|message|>"
# What a scripted shell call runs: harmless, and its output is recognisable.
SCRIPTED_COMMAND = "echo tokenyard-scripted-$((6*7))"
SHELL_TOOLS = ("Bash", "exec_command", "exec", "shell", "bash", "run_shell_command")


class ScriptedEngine:
    def __init__(
        self,
        tokenizer: EngineTokenizer,
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
        loaded = json.loads(Path(script).read_text(encoding="utf-8")) if script else None
        if isinstance(loaded, dict):
            self._turns = loaded.get("turns")
            self._verdicts: list[dict[str, str]] = loaded.get("verdicts") or []
        else:
            self._turns, self._verdicts = loaded, []
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
        """The raw output this engine gives for `request` (after its prefill)."""
        conversation = request.conversation
        if conversation is not None and conversation.request_kind == REQUEST_KIND:
            return self._verdict(action_under_review(conversation))
        constraints = request.constraints
        thinking = bool(conversation and conversation.thinking.enabled and self._reasoning_format)
        calls_before = sum(
            1 for m in (conversation.messages if conversation else []) for p in m.parts if isinstance(p, ToolCall)
        )
        if self._turns is not None:
            segments = self._scripted_turn(conversation)
        else:
            segments = self._rule_answer(conversation, thinking, constraints)
        # The prompt already holds the call opener, or a reasoning block it closed (a
        # forced call the model reasoned before): no reasoning comes first.
        reasoned = constraints.prefill or _closes_reasoning(request.prompt_text, self._reasoning_format)
        if reasoned:
            segments = [s for s in segments if not isinstance(s, Reasoning)]
        elif constraints.reasoning_budget is not None:
            segments = self._within_budget(segments, constraints.reasoning_budget.tokens)
        # A script is written with its family's reasoning markers, thinking on or off.
        reasoning_format = self._reasoning_format if (thinking or self._turns is not None) and not reasoned else None
        raw = self._render(segments, reasoning_format, calls_before)
        if constraints.prefill:
            return _continue_prefill(raw, constraints.prefill)
        return _strip_opened_marker(raw, request.prompt_text, self._reasoning_format)

    async def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
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

    def _verdict(self, action: str) -> str:
        for rule in self._verdicts:
            if rule.get("contains", "") in action:
                return rule["answer"]
        return verdict_answer(flagged=False)

    def _scripted_turn(self, conversation: Conversation | None) -> list[Segment | str]:
        """The script's turn for this conversation: segments, and raw strings as is."""
        assert self._turns is not None
        turn_index = sum(1 for m in conversation.messages if m.role == "assistant") if conversation else 0
        turn = self._turns[min(turn_index, len(self._turns) - 1)]
        out: list[Segment | str] = []
        for item in turn:
            if "raw" in item:
                out.append(item["raw"])
            elif "reasoning" in item:
                out.append(Reasoning(item["reasoning"]))
            elif "text" in item:
                out.append(TextSegment(item["text"]))
            elif "call" in item:
                out.append(Call(item["call"]["name"], item["call"].get("arguments", {})))
        return out

    def _render(self, items: list[Segment | str], reasoning_format: str | None, calls_before: int) -> str:
        """Raw output for segments (consecutive ones rendered together) and raw strings."""
        parts: list[str] = []
        run: list[Segment] = []
        for item in [*items, ""]:
            if isinstance(item, str):
                if run:
                    parts.append(render_output(run, self._tool_format, reasoning_format, calls_before=calls_before))
                    calls_before += sum(1 for s in run if isinstance(s, Call))
                    run = []
                parts.append(item)
            else:
                run.append(item)
        return "".join(parts)

    def _within_budget(self, segments: list[Segment | str], budget: int) -> list[Segment | str]:
        """Reasoning cut to `budget` tokens in all: a block that would exceed it is
        cut there and closed, as a budget-enforcing engine ends it."""
        out: list[Segment | str] = []
        for segment in segments:
            if isinstance(segment, Reasoning):
                ids = self._tokenizer.encode(segment.text)
                if len(ids) > budget:
                    segment = Reasoning(self._tokenizer.decode(ids[:budget]).rstrip())
                    ids = ids[:budget]
                budget = max(0, budget - len(ids))
            out.append(segment)
        return out

    def _rule_answer(
        self, conversation: Conversation | None, thinking: bool, constraints: Constraints | None = None
    ) -> list[Segment | str]:
        constraints = constraints or Constraints()
        messages = conversation.messages if conversation else []
        last = messages[-1] if messages else None
        # The results answer the model's last turn even when the client appends a
        # message of its own after them (OpenClaw adds an internal-context user
        # message after every tool result when it offers its full tool set).
        since_model = list(itertools.takewhile(lambda m: m.role != "assistant", reversed(messages)))
        results = [p for m in reversed(since_model) for p in m.parts if isinstance(p, ToolResult)]
        # What the model may call now: tools added or removed mid-conversation count.
        tools = conversation.model_tools() if conversation and constraints.tool_choice != "none" else []
        segments: list[Segment | str] = []
        form = conversation.output_format if conversation else None
        answer = TextSegment(json.dumps(example_value(form.json_schema or {"type": "object"}))) if form else None
        if results and not constraints.requires_call:
            quoted = "\n".join(r.text() for r in results).strip()
            if thinking:
                segments.append(Reasoning("The tool has answered; I can report what it returned."))
            segments.append(answer or TextSegment(f"The tool returned: {quoted}"))
            return segments
        if not tools:
            if thinking:
                segments.append(Reasoning("No tools are offered, so I answer directly."))
            question = last.text().strip() if last else ""
            said = f"You said: {question[:200]}" if question else "Hello from tokenyard."
            segments.append(answer or TextSegment(said))
            return segments
        named = [t for t in conversation.model_tools() if t.name == constraints.tool_name] if conversation else []
        if constraints.tool_choice == "named" and named:
            tool = named[0]
        else:
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


def example_value(schema: Any) -> Any:
    """A value `schema` accepts, for the schemas answers are asked for: the first of
    an enum or a union, an object with its required properties, a typed scalar."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return example_value(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") or {}
        return {name: example_value(properties.get(name)) for name in schema.get("required") or []}
    if kind == "array":
        return [example_value(schema.get("items"))] * int(schema.get("minItems") or 0)
    return {"integer": 42, "number": 42, "boolean": True, "null": None}.get(str(kind), "example")


def _continue_prefill(raw: str, prefill: str) -> str:
    """What follows `prefill` in `raw`: the longest end of the prefill that `raw`
    starts with is dropped (the prompt holds it). Output that does not continue the
    prefill at all is returned whole (the pipeline's validation then sees it)."""
    for start in range(len(prefill)):
        if raw.startswith(prefill[start:]):
            return raw[len(prefill) - start :]
    return raw


def _closes_reasoning(prompt_text: str, reasoning_format: str | None) -> bool:
    """The prompt ends with a closed reasoning block."""
    if not reasoning_format or reasoning_format not in REASONING_MARKERS:
        return False
    return prompt_text.rstrip().endswith(REASONING_MARKERS[reasoning_format][1].strip())


def _strip_opened_marker(raw: str, prompt_text: str, reasoning_format: str | None) -> str:
    """If the prompt already opened the reasoning block (gpt-oss: its analysis
    message), the model does not write the start marker again."""
    if reasoning_format == "gpt_oss":
        start = HARMONY_ANALYSIS
    elif reasoning_format and reasoning_format in REASONING_MARKERS:
        start = REASONING_MARKERS[reasoning_format][0]
    else:
        return raw
    if prompt_text.rstrip().endswith(start.rstrip()) and raw.startswith(start):
        return raw[len(start) :].lstrip("\n") if not start.endswith("\n") else raw[len(start) :]
    return raw
