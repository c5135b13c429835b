"""Claude Code's per-session billing header, removed before rendering.

Claude Code puts `x-anthropic-billing-header: cc_version=2.1.330.<3 hex>;
cc_entrypoint=sdk-cli;` at the very start of the system prompt. The hex suffix is
derived from the first user prompt, so it differs between sessions: left in, it
breaks every cross-session prefix match at token zero (a cached 170 ms TTFT becomes
900 ms). The model never needs it. It arrives as its own system block or as the
first line of one; both are handled, in the system prompt and in every
system/developer message, leading or inline (Claude Code moves the system prompt
into `messages` for unknown models, and sends system messages mid-conversation).
"""

from __future__ import annotations

import re

from ..conversation import Conversation, Message, Text

_HEADER_LINE = re.compile(r"\A[ \t]*x-anthropic-billing-header:[^\n]*(?:\n|\Z)", re.IGNORECASE)


def strip_header_text(text: str) -> str | None:
    """`text` without a leading billing-header line, or None if it has none."""
    match = _HEADER_LINE.match(text)
    if match is None:
        return None
    return text[match.end() :].lstrip("\n")


def _strip_blocks(blocks: list[Text]) -> tuple[list[Text], bool]:
    out: list[Text] = []
    stripped = False
    for block in blocks:
        if not stripped:
            rest = strip_header_text(block.text)
            if rest is not None:
                stripped = True
                if rest.strip():
                    out.append(Text(text=rest))
                continue
        out.append(block)
    return out, stripped


def strip_billing_preamble(conversation: Conversation) -> tuple[Conversation, bool]:
    """The conversation without the billing header (in the system prompt and in
    any system/developer message), and whether one was found. The input is not
    modified."""
    system, stripped = _strip_blocks(conversation.system)
    messages: list[Message] = []
    for message in conversation.messages:
        texts = [p for p in message.parts if isinstance(p, Text)]
        if message.role not in ("system", "developer") or len(texts) != len(message.parts):
            messages.append(message)
            continue
        kept, found = _strip_blocks(texts)
        if not found:
            messages.append(message)
            continue
        stripped = True
        if kept:
            messages.append(Message(role=message.role, parts=list(kept)))
    if not stripped:
        return conversation, False
    return conversation.model_copy(update={"system": system, "messages": messages}), True
