"""Events → OpenAI Responses stream events (sans-IO).

`ResponseStream` owns the output items and their ids: one item per contiguous run
of reasoning or text, one per tool call, in the order produced. Every event
carries a `sequence_number` that only grows; the ids streamed are the ids in the
final response object.

Reasoning items stream the raw reasoning (`response.reasoning_text.*`) and, when the
request asked for `reasoning.summary`, a summary (`response.reasoning_summary_*`).
An open model writes no separate summary and we do not invent one: the summary is
the reasoning itself (`auto`, `detailed`) or its first paragraph (`concise`). With
`include: ["reasoning.encrypted_content"]` the finished item carries the exact
reasoning sealed under the server key (sealing.py), which restores it byte for
byte when the client replays the item (requests.py).

Custom (freeform) tools reach the model as a function with one string parameter,
`input`; such calls come back as `custom_tool_call` items whose `input` is that
string, decoded from its JSON. A call to a namespaced tool (the model calls it
`<namespace>__<name>`) streams under its bare `name` with its `namespace`; a call to
a client-run `tool_search` streams as a `tool_search_call` item whose `arguments`
is the JSON object, complete when the call is (no argument delta events). Call
items are added only once their call is complete (apis/call_hold.py), so every
call item added is done, and a call that never completed is a message's text.

The same state machine assembles the non-streaming response (`response()`).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...events import Finish, ToolCallDelta, ToolCallReady, ToolCallStart
from ...faults import ApiError
from ..encoder import EventEncoder
from ..replay_state import ReplayState
from ..spoke import Frame
from .errors import failed_error
from .requests import CUSTOM_INPUT, REASONING_SEAL_CONTEXT, CallRoute


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


@dataclass
class _Item:
    """The output item being streamed."""

    kind: str  # "message" | "reasoning" | "function_call" | "custom_tool_call" | "tool_search_call"
    output_index: int
    data: dict[str, Any]
    chunks: list[str] = field(default_factory=list)  # text, reasoning or arguments so far
    summary: _Summary | None = None  # the reasoning summary being streamed
    custom: CustomInputDecoder | None = None

    @property
    def id(self) -> str:
        return str(self.data["id"])


class ResponseStream(EventEncoder):
    def __init__(
        self,
        response_id: str,
        echo: dict[str, Any],
        *,
        created_at: int,
        replay: ReplayState | None = None,
        routes: Mapping[str, CallRoute] | None = None,
        summary: str | None = None,
        include_encrypted_reasoning: bool = False,
        dispatch: bool = False,
        clock: Callable[[], int] | None = None,
    ):
        super().__init__(dispatch=dispatch)
        self.response_id = response_id
        self._echo = echo
        self._created_at = created_at
        self._replay = replay
        self._routes = routes or {}
        self._summary = summary
        self._encrypted = include_encrypted_reasoning
        # When the response completed is the server's to say (an injected clock keeps this sans-IO).
        self._clock = clock
        self._completed_at: int | None = None
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._open: _Item | None = None
        self.status = "in_progress"
        self._incomplete_reason: str | None = None
        self._error: dict[str, Any] | None = None
        self._usage: dict[str, Any] | None = None

    # ---- the stream (the StreamEncoder protocol, apis/spoke.py) ------------------------

    def start(self) -> list[Frame]:
        snapshot = self.response()
        return [
            self._event("response.created", response=snapshot),
            self._event("response.in_progress", response=snapshot),
        ]

    def error(self, error: ApiError) -> list[Frame]:
        """Whatever broke, the client gets the API's own ending: `response.failed`."""
        out = self._close("incomplete")
        self.status = "failed"
        self._error = failed_error(error)
        out.append(self._event("response.failed", response=self.response()))
        return out

    def interrupt(self, reason: str) -> list[Frame]:
        """The generation was stopped on purpose (a steer, at an output-item boundary):
        the open item ends incomplete, then `response.incomplete` with `reason`. What
        the call hold kept back (the start of a call never finished) is dropped."""
        out = self._close("incomplete")
        self.status = "incomplete"
        self._incomplete_reason = reason
        out.append(self._event("response.incomplete", response=self.response()))
        return out

    def result(self) -> dict[str, Any]:
        return self.response()

    def response(self) -> dict[str, Any]:
        """The response object: the snapshot while streaming, the whole response at the end."""
        echo = self._echo
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": self._created_at,
            "completed_at": self._completed_at,
            "status": self.status,
            "background": False,
            "error": self._error,
            "incomplete_details": {"reason": self._incomplete_reason} if self._incomplete_reason else None,
            "output": [dict(item) for item in self._output],
            "usage": self._usage,
            "previous_response_id": None,
            **echo,
        }

    # ---- the events, as items (EventEncoder's hooks, apis/encoder.py) -----------------
    # A call item is added only once the call is complete, and is done at once; a call
    # that is not complete is a message's text (apis/call_hold.py). PromptProcessed
    # shows nothing: usage is reported once, with the final status.

    def on_text(self, text: str) -> list[Frame]:
        out: list[Frame] = []
        if self._open is None or self._open.kind != "message":
            out += self._close("completed")
            item = self._add(
                {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            )
            out.append(self._added(item))
            out.append(self._item_event("response.content_part.added", item, content_index=0, part=_output_text("")))
        current = self._open
        assert current is not None
        current.chunks.append(text)
        out.append(self._item_event("response.output_text.delta", current, content_index=0, delta=text, logprobs=[]))
        return out

    def on_reasoning(self, text: str) -> list[Frame]:
        out: list[Frame] = []
        if self._open is None or self._open.kind != "reasoning":
            out += self._close("completed")
            item = self._add({"id": new_id("rs"), "type": "reasoning", "summary": []})
            out.append(self._added(item))
            if self._summary:
                item.summary = _Summary(concise=self._summary == "concise")
                out.append(
                    self._item_event(
                        "response.reasoning_summary_part.added",
                        item,
                        summary_index=0,
                        part={"type": "summary_text", "text": ""},
                    )
                )
            out.append(
                self._item_event(
                    "response.content_part.added", item, content_index=0, part={"type": "reasoning_text", "text": ""}
                )
            )
        current = self._open
        assert current is not None
        current.chunks.append(text)
        if current.summary is not None:
            delta = current.summary.feed(text)
            if delta:
                out.append(
                    self._item_event("response.reasoning_summary_text.delta", current, summary_index=0, delta=delta)
                )
        out.append(self._item_event("response.reasoning_text.delta", current, content_index=0, delta=text))
        return out

    def on_call_start(self, start: ToolCallStart) -> list[Frame]:
        out = self._close("completed")
        # Every offered tool has a route; a name the model made up streams as a function call.
        route = self._routes.get(start.name) or CallRoute("function_call", start.name)
        if route.item_type == "tool_search_call":
            data: dict[str, Any] = {
                "id": new_id("tsc"),
                "type": "tool_search_call",
                "status": "in_progress",
                "call_id": start.id,
                "execution": "client",
                "arguments": {},
            }
        elif route.item_type == "custom_tool_call":
            data = {"id": new_id("ctc"), "type": "custom_tool_call", "status": "in_progress", "call_id": start.id}
            data.update(_call_name(route), input="")
        else:
            data = {"id": new_id("fc"), "type": "function_call", "status": "in_progress", "call_id": start.id}
            data.update(_call_name(route), arguments="")
        item = self._add(data)
        if route.item_type == "custom_tool_call":
            item.custom = CustomInputDecoder()
        out.append(self._added(item))
        return out

    def on_call_delta(self, event: ToolCallDelta) -> list[Frame]:
        fragment = event.arguments
        item = self._open
        if item is None or item.kind not in _CALL_KINDS:
            return []
        item.chunks.append(fragment)
        if item.kind == "tool_search_call":
            return []  # its arguments are an object, sent whole when the call is complete
        if item.custom is None:
            return [self._item_event("response.function_call_arguments.delta", item, delta=fragment)]
        text = item.custom.feed(fragment)
        if not text:
            return []
        return [self._item_event("response.custom_tool_call_input.delta", item, delta=text)]

    def on_call_ready(self, ready: ToolCallReady) -> list[Frame]:
        item = self._open
        if item is None or item.kind not in _CALL_KINDS:
            return []
        arguments = ready.arguments
        out: list[Frame] = []
        where = {"item_id": item.id, "output_index": item.output_index}
        if item.kind == "tool_search_call":
            item.data["arguments"] = _search_arguments(arguments)
        elif item.custom is not None:
            streamed = item.custom.text
            value = custom_input(arguments)
            if value.startswith(streamed) and len(value) > len(streamed):
                out.append(self._event("response.custom_tool_call_input.delta", **where, delta=value[len(streamed) :]))
            item.data["input"] = value
        else:
            item.data["arguments"] = arguments
        item.data["status"] = "completed"
        if self._replay is not None:
            self._replay.remember_call(ready.id, ready.arguments)
        if self._dispatch:
            out.append(self._event("response.tool_call_dispatch", output_index=item.output_index, item=dict(item.data)))
        if item.kind == "tool_search_call":
            pass
        elif item.custom is not None:
            out.append(self._event("response.custom_tool_call_input.done", **where, input=item.data["input"]))
        else:
            out.append(
                self._event(
                    "response.function_call_arguments.done", **where, name=item.data["name"], arguments=arguments
                )
            )
        out.append(self._done(item))
        return out

    def on_finish(self, finish: Finish) -> list[Frame]:
        truncated = finish.reason == "length"
        out = self._close("incomplete" if truncated else "completed")
        usage = finish.usage
        self._usage = {
            "input_tokens": usage.prompt_tokens,
            # Open engines' prefix caches write as they go and bill nothing for it.
            "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        }
        if truncated:
            self.status = "incomplete"
            self._incomplete_reason = "max_output_tokens"
            out.append(self._event("response.incomplete", response=self.response()))
        else:
            self.status = "completed"
            self._completed_at = self._clock() if self._clock else self._created_at
            out.append(self._event("response.completed", response=self.response()))
        return out

    def _close(self, status: str) -> list[Frame]:
        """Finish the open item: its done events, then `output_item.done`."""
        item = self._open
        if item is None:
            return []
        where = {"item_id": item.id, "output_index": item.output_index}
        out: list[Frame] = []
        text = "".join(item.chunks)
        if item.kind == "message":
            part = _output_text(text)
            item.data["content"] = [part]
            item.data["status"] = status
            out.append(self._event("response.output_text.done", **where, content_index=0, text=text, logprobs=[]))
            out.append(self._event("response.content_part.done", **where, content_index=0, part=part))
        else:
            if item.summary is not None:
                delta = item.summary.close()
                if delta:
                    out.append(
                        self._event("response.reasoning_summary_text.delta", **where, summary_index=0, delta=delta)
                    )
                summary = item.summary.text
                part = {"type": "summary_text", "text": summary}
                out.append(self._event("response.reasoning_summary_text.done", **where, summary_index=0, text=summary))
                out.append(self._event("response.reasoning_summary_part.done", **where, summary_index=0, part=part))
                item.data["summary"] = [part]
            reasoning = {"type": "reasoning_text", "text": text}
            out.append(self._event("response.reasoning_text.done", **where, content_index=0, text=text))
            out.append(self._event("response.content_part.done", **where, content_index=0, part=reasoning))
            item.data["content"] = [reasoning]
            if self._encrypted and self._replay is not None:
                item.data["encrypted_content"] = self._replay.seal_reasoning(text, REASONING_SEAL_CONTEXT)
            item.data["status"] = status
        out.append(self._done(item))
        return out

    def _add(self, data: dict[str, Any]) -> _Item:
        item = _Item(data["type"], len(self._output), data)
        self._output.append(data)
        self._open = item
        return item

    def _added(self, item: _Item) -> Frame:
        return self._event("response.output_item.added", output_index=item.output_index, item=dict(item.data))

    def _done(self, item: _Item) -> Frame:
        self._open = None
        return self._event("response.output_item.done", output_index=item.output_index, item=dict(item.data))

    def _item_event(self, kind: str, item: _Item, **fields: Any) -> Frame:
        """An event about one output item (its id and output index first)."""
        return self._event(kind, item_id=item.id, output_index=item.output_index, **fields)

    def _event(self, kind: str, **fields: Any) -> Frame:
        """One event: its frame's name is its type."""
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return (kind, event)


_CALL_KINDS = ("function_call", "custom_tool_call", "tool_search_call")


def _call_name(route: CallRoute) -> dict[str, str]:
    """A call item's `name` (bare) and, for a namespaced tool, its `namespace`."""
    return {"name": route.name, "namespace": route.namespace} if route.namespace else {"name": route.name}


def _search_arguments(arguments: str) -> Any:
    """A tool_search call's arguments as the object Codex requires; text that is not
    a JSON object becomes `{}`."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class _Summary:
    """A reasoning item's summary as the reasoning streams: the reasoning itself
    (`auto`, `detailed`) or its first paragraph (`concise`), released as soon as it
    is certain (a trailing newline may still become the paragraph's end, so it waits).
    Each piece is looked at once."""

    def __init__(self, concise: bool) -> None:
        self._concise = concise
        self._parts: list[str] = []
        self._held = ""
        self._done = False

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def feed(self, reasoning: str) -> str:
        if self._done:
            return ""
        if not self._concise:
            self._parts.append(reasoning)
            return reasoning
        text = self._held + reasoning
        end = text.find("\n\n")
        if end >= 0:
            self._done = True
            released, self._held = text[:end], ""
        elif text.endswith("\n"):
            released, self._held = text[:-1], "\n"
        else:
            released, self._held = text, ""
        self._parts.append(released)
        return released

    def close(self) -> str:
        """What was held back, now that the reasoning is complete."""
        released, self._held = ("" if self._done else self._held), ""
        self._done = True
        self._parts.append(released)
        return released


def custom_input(arguments: str) -> str:
    """A custom tool's input from the arguments the model wrote: the `input` string;
    the one string argument if the model named it otherwise; else the text itself."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        named = value.get(CUSTOM_INPUT)
        if isinstance(named, str):
            return named
        only = next(iter(value.values()), None)
        if len(value) == 1 and isinstance(only, str):
            return only
    return arguments


_INPUT_HEAD = '{"' + CUSTOM_INPUT + '":"'
_STRING_BODY = re.compile(r'(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*').match
_HIGH_SURROGATE_END = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}$").search


class CustomInputDecoder:
    """The text of a custom tool call, decoded while its `{"input": "…"}` arguments
    stream in, so `custom_tool_call_input.delta` carries text, not JSON. Arguments
    of another shape are not decoded live (`live` turns False); their input then
    arrives whole when the call is complete."""

    def __init__(self) -> None:
        self._text: list[str] = []  # decoded pieces, joined once: linear
        self.live = True
        self._head = ""  # the arguments before the string value opens
        self._pending = ""  # string body held back: an escape cut in two
        self._opened = self._closed = False

    @property
    def text(self) -> str:
        return "".join(self._text)

    def feed(self, fragment: str) -> str:
        if not self.live or self._closed:
            return ""
        if not self._opened:
            self._head += fragment
            compact = "".join(self._head.split())
            if not compact.startswith(_INPUT_HEAD):
                self.live = _INPUT_HEAD.startswith(compact)
                return ""
            self._opened = True
            fragment = self._head[_nth_quote(self._head, 3) + 1 :]
        self._pending += fragment
        body_match = _STRING_BODY(self._pending)
        assert body_match is not None  # the pattern matches the empty string
        end = body_match.end()
        if end < len(self._pending):
            self._closed = self._pending[end] == '"'
            self.live = self._closed or self._pending[end] == "\\"
        body = self._pending[:end]
        held = _HIGH_SURROGATE_END(body) if not self._closed else None
        if held:  # its low half is still to come
            body = body[: held.start()]
        self._pending = self._pending[len(body) :]
        decoded = json.loads(f'"{body}"', strict=False) if body else ""
        self._text.append(decoded)
        return decoded


def _nth_quote(text: str, n: int) -> int:
    at = -1
    for _ in range(n):
        at = text.index('"', at + 1)
    return at
