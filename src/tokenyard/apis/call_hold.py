"""A tool call reaches the client only once it is known to be complete (sans-IO).

Every encoder feeds its events through a `CallHold`: a call's `ToolCallStart` and
argument deltas are held until its `ToolCallReady`, then released together (the
start, all its arguments as one delta, the ready); a call that ends as
`ToolCallIncomplete` (cut off, or arguments that are not valid JSON) is released as
the text the model wrote for it, never as a call. So no API ever streams half a
call that it can not take back, and the stream and the whole response say the same.

Why hold rather than stream arguments and end with an error, per client:
- the anthropic SDK parses `input_json_delta`s as they arrive and raises on
  arguments that stop being JSON, and Claude Code runs a tool_use block as soon as
  its `content_block_stop` arrives, whatever the stop reason: a block once started
  can only end as a runnable call or as a broken stream;
- OpenClaw (pi-ai) parses streamed Chat arguments with a partial-JSON parser and
  runs the calls it has when the stream ends, whatever the `finish_reason`;
- Codex runs every call item whose `output_item.done` it gets; an item that is
  added and never done leaves the response inconsistent with its items.
An error event instead would make these clients retry the same turn, or fail it,
where the model's text for the broken call is a faithful answer. Holding costs
only the live display of one call's arguments (clients show a call once it is
complete); the server sends keep-alives while a long call is held (server/sse.py).

Whitespace a parser reported as a block edge (a `Marker`) after a run of text is
held too, until the next event says what it was: the edge of a block (reasoning, a
delivered call, other syntax), which the chat template writes itself on the next
turn, so it stays a marker; or, when the next run of text follows with no block
between (the call there never completed), the model's text, released with that
text. A turn of text alone is replayed verbatim, so its whitespace must be the
model's; and every API gets the same runs (Chat, whose `content` is one string, puts
the block edges' whitespace back between them: apis/openai_chat/stream.py).
"""

from __future__ import annotations

from ..events import Event, Marker, TextDelta, ToolCallDelta, ToolCallIncomplete, ToolCallReady, ToolCallStart


class CallHold:
    def __init__(self) -> None:
        self._start: ToolCallStart | None = None  # the call being held
        self._arguments: list[str] = []  # its argument fragments (joined once: linear)
        # Since the last text: None once anything but whitespace or a call being held
        # came after it, else the whitespace markers held.
        self._gap: str | None = None

    def feed(self, event: Event) -> list[Event]:
        """What to encode now for `event` (in order)."""
        if type(event) is ToolCallStart:
            self._start = event
            self._arguments = []
            return []
        start = self._start
        if start is None:
            gap = self._gap
            if type(event) is TextDelta:
                self._gap = ""
                return [TextDelta(gap + event.text)] if gap else [event]
            if gap is None:  # not after text: the usual case for everything else
                return [event]
            if type(event) is Marker and not event.text.strip():
                self._gap = gap + event.text
                return []
            self._gap = None
            return [Marker(gap), event] if gap else [event]
        if type(event) is ToolCallDelta:
            self._arguments.append(event.arguments)
            return []
        if type(event) is ToolCallReady:
            self._start = None
            arguments = "".join(self._arguments)
            self._arguments = []
            released: list[Event] = (
                [start, ToolCallDelta(start.index, arguments), event] if arguments else [start, event]
            )
            if self._gap:
                released.insert(0, Marker(self._gap))
            self._gap = None
            return released
        if type(event) is ToolCallIncomplete:
            self._start = None
            self._arguments = []
            if not event.raw:
                return []
            text = event.raw if self._gap is None else self._gap + event.raw
            self._gap = ""
            return [TextDelta(text)]
        if type(event) is Marker:
            return []  # the call's own syntax: its text is in `raw` if it never completes
        return [event]
