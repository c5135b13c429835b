"""What every API's stream encoder shares (sans-IO): the call hold in front of it and
one dispatch on the kind of event.

An API's encoder (`apis/<api>/stream.py`) subclasses `EventEncoder` and overrides the
`on_*` hooks for the events its wire shows; an event with no hook of its own (a
`Marker` on most wires) encodes to nothing. Failures never come through `feed`: the
server hands them to the encoder's `error`. `start`, `finish` and `keepalive` send
nothing unless the API says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import (
    Event,
    Finish,
    Marker,
    PromptProcessed,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStart,
)
from .call_hold import CallHold
from .spoke import Frame


class EventEncoder:
    def __init__(self, *, dispatch: bool = False) -> None:
        self._dispatch = dispatch  # streaming tool dispatch: announce each call once complete
        self._hold = CallHold()

    def feed(self, event: Event) -> list[Frame]:
        # A call is encoded only once complete; one that is not is text (apis/call_hold.py).
        released = self._hold.feed(event)
        if len(released) == 1:
            return self._encode(released[0])
        return [frame for one in released for frame in self._encode(one)]

    def _encode(self, event: Event) -> list[Frame]:
        if type(event) is TextDelta:  # most events: looked for first
            return self.on_text(event.text)
        hook = _HOOKS.get(type(event))
        return hook(self, event) if hook is not None else []

    # ---- the hooks (an API overrides those its wire shows) ---------------------------

    def on_text(self, text: str) -> list[Frame]:
        """Answer text; never part of a call, though it may be the text of one that
        did not complete (the hold turned it back into text)."""
        return []

    def on_reasoning(self, text: str) -> list[Frame]:
        return []

    def on_call_start(self, event: ToolCallStart) -> list[Frame]:
        """A complete call begins: the hold releases a call only whole, so its
        arguments (one `on_call_delta`, none if empty) and its `on_call_ready` follow
        in the same `feed`."""
        return []

    def on_call_delta(self, event: ToolCallDelta) -> list[Frame]:
        return []

    def on_call_ready(self, event: ToolCallReady) -> list[Frame]:
        return []

    def on_marker(self, event: Marker) -> list[Frame]:
        # Syntax with no content: a wire shows it, if at all, as spacing.
        return []

    def on_prompt_processed(self, event: PromptProcessed) -> list[Frame]:
        """The prompt's usage, before any content."""
        return []

    def on_finish(self, event: Finish) -> list[Frame]:
        """The stop reason and the usage; the last event of a generation that did not fail."""
        return []

    # ---- the StreamEncoder protocol's quiet defaults (apis/spoke.py) ------------------

    def start(self) -> list[Frame]:
        return []

    def finish(self) -> list[Frame]:
        return []

    def keepalive(self) -> Frame | None:
        return None


# Which hook each kind of event goes to (events are final classes, so their type is the
# key). Failures have none: they go to the encoder's `error`.
_HOOKS: dict[type[Event], Callable[[EventEncoder, Any], list[Frame]]] = {
    ReasoningDelta: lambda encoder, event: encoder.on_reasoning(event.text),
    ToolCallStart: lambda encoder, event: encoder.on_call_start(event),
    ToolCallDelta: lambda encoder, event: encoder.on_call_delta(event),
    ToolCallReady: lambda encoder, event: encoder.on_call_ready(event),
    Marker: lambda encoder, event: encoder.on_marker(event),
    PromptProcessed: lambda encoder, event: encoder.on_prompt_processed(event),
    Finish: lambda encoder, event: encoder.on_finish(event),
}
