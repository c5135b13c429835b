"""`OutputSplitter`: one response's raw text in, one ordered event stream out.

The reasoning parser runs first; what it leaves as text goes through the tool-call
parser. Events come out in the order the model produced them, so interleaved
reasoning → tool → reasoning → tool → text stays exactly that.

Block-edge whitespace (the newlines templates put after `<think>`, between calls,
after `</think>`) is reported as `Marker`s rather than content, so a text block is
never just "\\n\\n" and reasoning does not start with a newline; conservation still
holds because markers carry those characters.

What the parsers hold back undecided (a marker that may begin a call, a call header
not yet read to its name, a fence that may be a call) is bounded: past the tool
parser's `max_held` characters (`MAX_HELD_CHARS`, h11's `max_incomplete_event_size`
for model output) the held text is released as text, the parsers forget it, and
`released_holds` counts it. The splitter measures it from outside, the same for
every format: the characters fed that no event accounts for yet, while no call is
open (an open call streams its arguments; its raw is accounted when it ends).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..conversation import ToolSpec
from ..events import (
    Marker,
    ParseEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallIncomplete,
    ToolCallReady,
    ToolCallStart,
)
from .fenced_calls import FencedCallRecovery
from .reasoning.parser import HARMONY_REASONING_NAMES, ReasoningParser, canonical_reasoning_name, reasoning_format
from .registry import HARMONY_TOOL_NAMES, check_tool_parser_name, tool_parser_class
from .tools.base import MAX_HELD_CHARS, CallIds, ToolParser


class OutputSplitter:
    def __init__(
        self,
        reasoning_parser: str | None = None,
        tool_parser: str | None = None,
        *,
        tools: Iterable[ToolSpec] | None = None,
        thinking_enabled: bool = True,
        prompt_opened_reasoning: bool = False,
        call_ids: CallIds | None = None,
        recover_fenced_calls: bool = False,
    ):
        tools = None if tools is None else list(tools)
        call_ids = call_ids or CallIds()
        self._reasoning: ReasoningParser | None = None
        self._tools: ToolParser | None = None
        self._harmony = None
        # Any spelling users type (ours, vLLM's, SGLang's, Dynamo's) becomes ours.
        reasoning_name = canonical_reasoning_name(reasoning_parser) if reasoning_parser else ""
        tool_name = check_tool_parser_name(tool_parser) if tool_parser else ""
        if reasoning_name in HARMONY_REASONING_NAMES or tool_name in HARMONY_TOOL_NAMES:
            from .harmony import HarmonyParser

            if tool_name not in ("", *HARMONY_TOOL_NAMES) or reasoning_name not in ("", *HARMONY_REASONING_NAMES):
                raise ValueError("gpt-oss harmony output needs reasoning parser 'gpt_oss' with tool parser 'harmony'")
            self._harmony = HarmonyParser(
                tools=tools, call_ids=call_ids, thinking_enabled=thinking_enabled, parse_tools=bool(tool_name)
            )
        else:
            if tool_name:
                self._tools = tool_parser_class(tool_name)(tools, call_ids)
            if reasoning_name:
                self._reasoning = ReasoningParser(
                    reasoning_format(reasoning_name),
                    thinking_enabled=thinking_enabled,
                    prompt_opened=prompt_opened_reasoning,
                    exit_markers=self._tools.exit_markers() if self._tools else (),
                    exit_at_line_start=self._tools.reasoning_exit_at_line_start if self._tools else False,
                    downstream=self._tools,
                )
        # A final ```json fenced call to a declared tool becomes a call (fenced_calls.py).
        self._fenced = FencedCallRecovery(tools, call_ids) if recover_fenced_calls and tools else None
        # The first parser (a reasoning parser feeding its tool parser, or a tool parser
        # alone) with nothing around it: fed directly.
        first = self._reasoning if self._reasoning is not None else self._tools
        self._direct = first.feed if first is not None and self._fenced is None else None
        # The hold-back bound (see the module docstring): the input since everything
        # fed was last accounted for, and how many of its characters are not yet.
        self._max_held = self._tools.max_held if self._tools is not None else MAX_HELD_CHARS
        self._unsettled: list[str] = []
        self._held = 0
        self._call_open = False
        self.released_holds = 0
        # Block-edge whitespace tracking (see module docstring).
        self._run_kind: type | None = None
        self._run_has_content = False
        self._pending_space = ""
        # The run's kind while it has content and no whitespace pending: a delta of
        # that kind, as fed, that does not end in whitespace passes untouched.
        self._hot_kind: type | None = None

    def feed(self, text: str) -> list[ParseEvent]:
        direct = self._direct
        if direct is not None:
            events = direct(text)  # the common case, one method call less
        elif self._fenced is not None:
            events = self._fenced.feed(self._parse(text))
        else:
            events = self._parse(text)
        if len(events) == 1:
            event = events[0]
            kind = type(event)
            if kind is ToolCallDelta:
                # The hot path inside a long call: the text is the call's (its raw,
                # accounted when it ends); one argument delta, nothing to trim.
                self._unsettled.append(text)
                self._held += len(text)
                if not self._pending_space:
                    self._run_kind = self._hot_kind = None
                    return events
                return self._trim(events)
            if kind is self._hot_kind and event.text is text and not self._held:  # type: ignore[union-attr]  # a text kind
                # The hot path in prose: the text as it came, nothing held before it,
                # inside a run with content and no pending whitespace (`_hot_kind`);
                # not ending in whitespace, nothing to trim (`_trim`'s first case,
                # without the call).
                if text and not text[-1].isspace():
                    return events
                return self._trim(events)
            if (kind is TextDelta or kind is ReasoningDelta) and event.text is text and not self._held:  # type: ignore[union-attr]
                return self._trim(events)
        events = self._account(text, events)
        return self._trim(events)

    def _account(self, text: str, events: list[ParseEvent]) -> list[ParseEvent]:
        """Count what the parsers hold back after `text`; past the bound, release it."""
        self._unsettled.append(text)
        held = self._held + len(text)
        for event in events:
            if type(event) is ToolCallStart:
                self._call_open = True
            elif type(event) is ToolCallReady or type(event) is ToolCallIncomplete:
                self._call_open = False
                held -= len(event.raw)
            elif type(event) is TextDelta or type(event) is ReasoningDelta or type(event) is Marker:
                held -= len(event.text)
        self._held = held
        if not held:
            self._unsettled.clear()
        elif not self._call_open and (held > self._max_held or len(self._unsettled) > 64):
            joined = "".join(self._unsettled)
            if held > self._max_held:
                self._release(joined[len(joined) - held :], events)
            else:
                self._unsettled = [joined[len(joined) - held :]]  # keep only the held tail
        return events

    def _release(self, held: str, events: list[ParseEvent]) -> None:
        # Harmony never gets here: it gives up on a header itself, far below the bound.
        if self._reasoning is not None:
            self._reasoning.drop_held()  # and its tool parser
        elif self._tools is not None:
            self._tools.drop_held()
        if self._fenced is not None:
            self._fenced.drop_held()
        events.append(TextDelta(held))
        self._unsettled.clear()
        self._held = 0
        self.released_holds += 1

    def _parse(self, text: str) -> list[ParseEvent]:
        if self._harmony is not None:
            return self._harmony.feed(text)
        if self._reasoning is not None:
            return self._reasoning.feed(text)
        if self._tools is not None:
            return self._tools.feed(text)
        return [TextDelta(text)] if text else []

    def finish(self, *, cut: bool = False) -> list[ParseEvent]:
        """The output is over. `cut`: it ended because the engine hit its token
        limit (finish reason `length`), not because the model ended its turn."""
        if self._harmony is not None:
            events = self._harmony.finish()
        else:
            if self._reasoning is not None:
                events = self._reasoning.finish()  # finishes its downstream too
            elif self._tools is not None:
                events = self._tools.finish()
            else:
                events = []
        if self._fenced is not None:
            events = self._fenced.finish(events)
        if cut:
            events = [_undispatched(event) if type(event) is ToolCallReady else event for event in events]
        out = self._trim(events)
        if self._pending_space:
            out.append(Marker(self._pending_space))
            self._pending_space = ""
        self._run_kind = self._hot_kind = None
        return out

    def _trim(self, events: list[ParseEvent]) -> list[ParseEvent]:
        if len(events) == 1:
            # The common streaming case: one more delta inside a run that already has
            # content, not ending in whitespace: nothing to trim or to hold.
            event = events[0]
            # The run's kind is TextDelta or ReasoningDelta: the second test only narrows.
            if type(event) is self._hot_kind and (type(event) is TextDelta or type(event) is ReasoningDelta):
                text = event.text
                if text and not text[-1].isspace():
                    return events
            elif type(event) is not TextDelta and type(event) is not ReasoningDelta and not self._pending_space:
                # One call event (an argument delta inside a long call): it ends any
                # text run and passes as it is.
                self._run_kind = self._hot_kind = None
                return events
        out: list[ParseEvent] = []
        for event in events:
            if type(event) is not TextDelta and type(event) is not ReasoningDelta:
                if self._pending_space:
                    out.append(Marker(self._pending_space))
                    self._pending_space = ""
                self._run_kind = None
                out.append(event)
                continue
            kind = type(event)
            text = event.text
            if kind is not self._run_kind:
                if self._pending_space:
                    out.append(Marker(self._pending_space))
                    self._pending_space = ""
                self._run_kind = kind
                self._run_has_content = False
            if not self._run_has_content:
                body = text.lstrip()
                if len(body) != len(text):
                    out.append(Marker(text[: len(text) - len(body)]))
                if not body:
                    continue
                text = body
                self._run_has_content = True
            body = text.rstrip()
            if body:
                tail = text[len(body) :]
                if self._pending_space:
                    body = self._pending_space + body
                out.append(event if body is event.text else kind(body))
                self._pending_space = tail
            else:
                self._pending_space += text
        self._hot_kind = self._run_kind if self._run_has_content and not self._pending_space else None
        return out


def _undispatched(ready: ToolCallReady) -> ToolCallIncomplete:
    """A call that only the end of output completed, in an output the token limit
    cut: its closing syntax never came, so the model may have had more to write
    (a required parameter present is no proof: the next one may be the one that
    matters). Every format's end-of-output recovery stops here; it is never
    dispatched."""
    return ToolCallIncomplete(
        ready.index, ready.id, ready.name, ready.arguments, ready.raw, "truncated", ready.declared
    )
