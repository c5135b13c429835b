"""An assistant turn from its parsed events: the ordered parts that the response
carries and that the next request replays."""

from __future__ import annotations

from typing import Iterable

from ..conversation import Message, Reasoning, Text, ToolCall
from ..events import ParseEvent, ReasoningDelta, TextDelta, ToolCallIncomplete, ToolCallReady


def assemble_assistant_message(events: Iterable[ParseEvent]) -> Message:
    """Reasoning and text runs become one part each, in order; ready calls become
    `ToolCall`s; an incomplete call stays visible as the text the model wrote."""
    parts: list[Reasoning | Text | ToolCall] = []
    for event in events:
        kind = type(event)
        if kind is ReasoningDelta or kind is TextDelta:
            part_type = Reasoning if kind is ReasoningDelta else Text
            if parts and type(parts[-1]) is part_type:
                parts[-1].text += event.text  # type: ignore[union-attr]
            else:
                parts.append(part_type(text=event.text))  # type: ignore[union-attr]
        elif kind is ToolCallReady:
            parts.append(ToolCall(id=event.id, name=event.name, arguments=event.arguments))  # type: ignore[union-attr]
        elif kind is ToolCallIncomplete:
            if parts and type(parts[-1]) is Text:
                parts[-1].text += event.raw  # type: ignore[union-attr]
            else:
                parts.append(Text(text=event.raw))  # type: ignore[union-attr]
    return Message(role="assistant", parts=parts)
