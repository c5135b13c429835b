"""Loading and judging the conformance cases (the data lives in `*.json` beside this).

Each file holds one parser family's cases taken from a peer's public tests
(vLLM, SGLang, llama.cpp, Dynamo): the raw model output, the tools offered, and
the expected reasoning, content and calls, with the source repository, file and
test name. A case whose `disagreement` is set records tokenyard's expectation in
`expect` and the peer's in `disagreement.peer`, with the reason; `note` explains a
peer fixture whose recorded state is not the behaviour the peer asks for (Dynamo's
KnownBroken fixtures). Cases whose source repo is `tokenyard` are our own (from
the issues), run the same way but not counted as peer cases.

What is compared, and why:
- content is the text the Chat Completions message carries, made by the real
  encoder (apis/openai_chat/stream.py): text runs, the whitespace between them,
  and the raw text of calls that could not be delivered (cut, or invalid
  arguments), in order; so a change to what Chat returns shows here. Whitespace is collapsed before comparing and an empty string equals
  null: peers disagree among themselves on trimming around markers, and
  tokenyard reports block-edge whitespace as markers.
- reasoning likewise.
- calls compare by name and parsed arguments (JSON values, so key order and
  spacing do not matter); `id` only where a case names one.
- the parser is fed what it gets in serving: an output that ends in its family's
  stop token (`</s>`, `<|call|>`, ...), and holds no other, is fed without it, since
  the engine stops there and drops the token before any API sees it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenyard.apis.openai_chat.stream import ChatCompletionStream
from tokenyard.conversation import ToolSpec
from tokenyard.events import ParseEvent
from tokenyard.families.catalog import FAMILIES
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds

HERE = Path(__file__).parent
CATEGORIES = (
    "format_basics",
    "multiple_calls",
    "no_call",
    "malformed",
    "end_of_output",
    "inside_reasoning",
    "unicode_escaping",
    "streaming_edges",
    "typing",
)


# The rule behind each documented disagreement (`disagreement.rule`): what tokenyard
# decides, and where an issue requires it (None: tokenyard's own decision, which a
# change could reverse on the merits). A required rule, or a peer case that another
# peer case on the same input contradicts, is a disagreement no parser can remove.
RULES: dict[str, tuple[str, str | None]] = {
    "cut_call": ("a call the output cut is never dispatched", "issue 23 item 4, issue 13 cause 8"),
    "invalid_arguments": (
        "a call whose arguments are not JSON (or not the format's syntax) is never delivered; its text is content",
        "issue 13 cause 3",
    ),
    "recover_complete": (
        "a complete call whose closing marker the end of output cut is recovered",
        "issue 13 cause 8",
    ),
    "special_token": (
        "a special token is a marker, never content or reasoning text",
        "issue 23 item 4, issue 13 cause 6",
    ),
    "call_never_vanishes": (
        "a malformed, cut or undeliverable call never vanishes: its text is content",
        "issue 13 cause 3, the brief's safety rules",
    ),
    "text_around_calls": ("text before, between and after calls is content", "issue 13 cause 2, Dynamo PARSER.13"),
    "string_typed": (
        "a value for a parameter the schema types as a string stays the text the model wrote (`null` too)",
        "issue 13 cause 9",
    ),
    "contradiction": ("another peer case on the same input expects the opposite", "no output satisfies both"),
    "text_kept": ("other text the model wrote is kept (conservation)", None),
    "framing": ("a role header between special tokens is framing (a marker), not the answer", None),
    "undeclared_tool": ("a call to an undeclared tool is delivered, flagged undeclared", None),
    "call_without_arguments": ("a call object with a name and no arguments is a call with {}", None),
    "tool_name": (
        "no call is delivered under an empty name, nor, unless the format quotes the name, one no API lets a tool have",
        None,
    ),
    "schema_typing": ("values are typed only by the declared schema, and kept as written", None),
    "stream_never_retracts": ("a stream never takes back what it sent (whole and streamed feeds agree)", None),
    "reasoning_runs": ("separate reasoning runs are joined as written", None),
    "pairing": (
        "the family's tool and reasoning parsers run together (the peer ran one alone, or another feature)",
        None,
    ),
    "call_in_reasoning": ("a call inside reasoning followed by more reasoning stays reasoning", None),
    "unmarked_syntax": (
        "call syntax without its marker, or out of place, is read only where it is strong evidence",
        None,
    ),
    "value_end": ("where a parameter value ends, read in order", None),
}


@dataclass(frozen=True)
class Case:
    family: str
    id: str
    category: str
    source: dict[str, str]
    reasoning_parser: str | None
    tool_parser: str | None
    options: dict[str, Any]
    tools: list[ToolSpec] | None
    output: str
    expect: dict[str, Any]
    disagreement: dict[str, Any] | None
    note: str | None = None
    # The engine's finish reason where the case names one: `length` (the token
    # limit cut the output) means no call completed only by the end of output is
    # dispatched.
    finish_reason: str | None = None

    @property
    def from_peer(self) -> bool:
        """Taken from a peer's tests (else one of tokenyard's own cases, kept here
        for the same whole/per-character/chunked treatment)."""
        return self.source.get("repo") != "tokenyard"

    @property
    def name(self) -> str:
        return f"{self.family}/{self.id}"


def _tool(spec: dict[str, Any] | str) -> ToolSpec:
    if isinstance(spec, str):
        return ToolSpec(name=spec, description="", parameters={"type": "object", "properties": {}})
    return ToolSpec(
        name=spec["name"],
        description=spec.get("description", ""),
        parameters=spec.get("parameters", {"type": "object", "properties": {}}),
    )


def load_cases() -> list[Case]:
    cases: list[Case] = []
    for path in sorted(HERE.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        family = data["family"]
        defaults = data.get("defaults", {})
        for raw in data["cases"]:
            merged = {**defaults, **raw}
            tools = merged.get("tools")
            category = merged["category"]
            assert category in CATEGORIES, f"{family}/{merged['id']}: unknown category {category!r}"
            cases.append(
                Case(
                    family=family,
                    id=merged["id"],
                    category=category,
                    source=merged["source"],
                    reasoning_parser=merged.get("reasoning_parser"),
                    tool_parser=merged.get("tool_parser"),
                    options=merged.get("options", {}),
                    tools=None if tools is None else [_tool(t) for t in tools],
                    output=merged["output"],
                    expect=merged["expect"],
                    disagreement=merged.get("disagreement"),
                    note=merged.get("note"),
                    finish_reason=merged.get("finish_reason"),
                )
            )
    return cases


# The stop tokens of the families that use each tool format (families/catalog.py).
_STOPS: dict[str, tuple[str, ...]] = {}
for _family in FAMILIES:
    if _family.tool_format is not None:
        _STOPS[_family.tool_format] = (*_STOPS.get(_family.tool_format, ()), *_family.stop)


def engine_output(case: Case) -> str:
    """What the parser gets in serving: the engine stops at the family's stop token
    and drops it (engines/remote.py), so an output that a peer test ends with that
    token, its only stop token (one generation), reaches the parser without it, on
    every API alike."""
    stops = _STOPS.get(case.tool_parser or "", ())
    for stop in stops:
        if case.output.endswith(stop):
            body = case.output[: -len(stop)]
            return case.output if any(other in body for other in stops) else body
    return case.output


def run(case: Case, chunks: list[str]) -> list[ParseEvent]:
    splitter = OutputSplitter(
        case.reasoning_parser,
        case.tool_parser,
        tools=case.tools,
        call_ids=CallIds(nonce="conformance"),
        **case.options,
    )
    events: list[ParseEvent] = []
    for chunk in chunks:
        events.extend(splitter.feed(chunk))
    events.extend(splitter.finish(cut=case.finish_reason == "length"))
    return events


def chunkings(text: str, seed: str, rounds: int = 4) -> list[list[str]]:
    """Whole, one character at a time, and `rounds` seeded random chunkings."""
    out = [[text], list(text)]
    rng = random.Random(seed)
    for _ in range(rounds):
        chunks, i = [], 0
        while i < len(text):
            step = rng.randint(1, 12)
            chunks.append(text[i : i + step])
            i += step
        out.append(chunks)
    return out


def outcome(events: list[ParseEvent]) -> dict[str, Any]:
    """What the Chat Completions message carries for these events: the real encoder's."""
    chat = ChatCompletionStream("conformance", "m", 0)
    for event in events:
        chat.feed(event)
    message = chat.completion()["choices"][0]["message"]
    calls = [
        {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"]), "id": c["id"]}
        for c in message.get("tool_calls") or []
    ]
    return {"reasoning": message.get("reasoning_content") or "", "content": message["content"] or "", "calls": calls}


def _text(value: str | None) -> str:
    return " ".join((value or "").split())


def agrees(got: dict[str, Any], expect: dict[str, Any]) -> list[str]:
    """What differs between an outcome and an expectation (empty: they agree)."""
    problems: list[str] = []
    for key in ("reasoning", "content"):
        if key in expect and _text(got[key]) != _text(expect[key]):
            problems.append(f"{key}: got {got[key]!r}, expected {expect[key]!r}")
    if "calls" in expect:
        want = expect["calls"]
        have = [{"name": c["name"], "arguments": c["arguments"]} for c in got["calls"]]
        plain = [{"name": c["name"], "arguments": c.get("arguments", {})} for c in want]
        if have != plain:
            problems.append(f"calls: got {have!r}, expected {plain!r}")
        for g, w in zip(got["calls"], want, strict=False):
            if "id" in w and g["id"] != w["id"]:
                problems.append(f"call id: got {g['id']!r}, expected {w['id']!r}")
    return problems
