"""Server-side tool search: deferred tools enter the prompt where a search finds them.

A tool marked deferred (Anthropic `defer_loading: true`) is not rendered into the
template's tools section. The model sees the deferred tools that no search has
returned yet by name and description, after the system prompt; when a tool result
carries references to deferred tools (Anthropic `tool_reference` blocks, what
Claude Code's ToolSearch returns), their full definitions are written into that
tool result. Everything is append-only: the tools section never changes when a
client adds a discovered tool to its `tools` list, so the prefix cache survives a
search.

No chat template has a native way to declare a tool in the middle of a
conversation, so the definitions use one fixed, deterministic text form for every
family: the encoding Claude Code's ToolSearch tool describes to the model,

    <functions>
    <function>{"description": "…", "name": "…", "parameters": {…}}</function>
    </functions>
"""

from __future__ import annotations

import json

from ..conversation import Conversation, ToolResult, ToolSpec

FUNCTIONS_OPEN = "<functions>"
FUNCTIONS_CLOSE = "</functions>"
LISTING_HEADING = "Deferred tools (their definitions load when a tool search returns them):"


def declared_tools(tools: list[ToolSpec]) -> list[ToolSpec]:
    """The tools rendered into the template's tools section."""
    return [t for t in tools if not t.deferred]


def referenced_names(conversation: Conversation) -> set[str]:
    return {
        name
        for message in conversation.messages
        for part in message.parts
        if isinstance(part, ToolResult)
        for name in part.references()
    }


def deferred_listing(conversation: Conversation) -> str:
    """Name and description of each deferred tool no search has returned yet
    (a returned one is defined where it was returned); "" when there are none."""
    found = referenced_names(conversation)
    pending = [t for t in conversation.tools if t.deferred and t.name not in found]
    if not pending:
        return ""
    lines = [f"- {t.name}: {_first_line(t.description)}" if t.description else f"- {t.name}" for t in pending]
    return LISTING_HEADING + "\n" + "\n".join(lines)


def functions_block(names: list[str], tools: list[ToolSpec]) -> str:
    """The full definitions of the referenced tools, in the fixed text form."""
    by_name = {t.name: t for t in tools}
    lines = []
    for name in names:
        spec = by_name.get(name)
        definition = (
            {"description": spec.description, "name": spec.name, "parameters": spec.parameters}
            if spec is not None
            else {"name": name}
        )
        lines.append(f"<function>{json.dumps(definition, ensure_ascii=False)}</function>")
    return "\n".join([FUNCTIONS_OPEN, *lines, FUNCTIONS_CLOSE])


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]
