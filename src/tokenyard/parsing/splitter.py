"""`OutputSplitter`: one response's raw text in, one ordered event stream out.

The reasoning parser runs first; what it leaves as text goes through the tool-call
parser. Events come out in the order the model produced them, so interleaved
reasoning → tool → reasoning → tool → text stays exactly that.

Block-edge whitespace (the newlines templates put after `<think>`, between calls,
after `</think>`) is reported as `Marker`s rather than content, so a text block is
never just "\\n\\n" and reasoning does not start with a newline; conservation still
holds because markers carry those characters.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..conversation import ToolSpec
from ..events import Marker, ParseEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallIncomplete, ToolCallReady
from .fenced_calls import FencedCallRecovery
from .reasoning.parser import HARMONY_REASONING_NAMES, ReasoningParser, canonical_reasoning_name, reasoning_format
from .registry import HARMONY_TOOL_NAMES, check_tool_parser_name, tool_parser_class
from .tools.base import CallIds, ToolParser


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
        # A reasoning parser (feeding its tool parser) with nothing around it: fed directly.
        self._direct = (
            self._reasoning.feed
            if self._reasoning is not None and self._harmony is None and self._fenced is None
            else None
        )
        # Block-edge whitespace tracking (see module docstring).
        self._run_kind: type | None = None
        self._run_has_content = False
        self._pending_space = ""

    def feed(self, text: str) -> list[ParseEvent]:
        direct = self._direct
        if direct is not None:
            events = direct(text)  # the common case, one method call less
        elif self._fenced is not None:
            return self._trim(self._fenced.feed(self._parse(text)))
        else:
            events = self._parse(text)
        if len(events) == 1 and type(events[0]) is ToolCallDelta and not self._pending_space:
            # The hot path inside a long call: one argument delta, nothing to trim.
            self._run_kind = None
            return events
        return self._trim(events)

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
        self._run_kind = None
        return out

    def _trim(self, events: list[ParseEvent]) -> list[ParseEvent]:
        if len(events) == 1:
            # The common streaming case: one more delta inside a run that already has
            # content, not ending in whitespace: nothing to trim or to hold.
            event = events[0]
            # The run's kind is TextDelta or ReasoningDelta: the second test only narrows.
            same_run = type(event) is self._run_kind and self._run_has_content and not self._pending_space
            if same_run and (type(event) is TextDelta or type(event) is ReasoningDelta):
                text = event.text
                if text and not text[-1].isspace():
                    return events
            elif type(event) is not TextDelta and type(event) is not ReasoningDelta and not self._pending_space:
                # One call event (an argument delta inside a long call): it ends any
                # text run and passes as it is.
                self._run_kind = None
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
