"""Special-token spellings inside request text stay text.

Only the chat template's own structure may produce control tokens. A user message,
a tool result, a file an agent read, a tool description or a system prompt that
contains `<|im_end|>\\n<|im_start|>system` must reach the model as those characters,
not as a forged turn boundary.

The template decides where content goes (and may escape, trim or repeat it), so the
content spans are found by marking them: before rendering, every added-token
spelling inside request text is swapped for a sentinel (ASCII letters and digits
only, so `tojson`, `trim` and `upper` leave it intact; a random per-process nonce,
so request text can not spell one); after rendering, the sentinels are put back and
their positions go to the tokenizer, which encodes them as ordinary text. Text
without any added-token spelling is untouched, so the common prompt is rendered and
tokenized exactly as before.
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Iterable
from typing import Any

from ..conversation import Conversation, Image, Message, Reasoning, Text, ToolCall, ToolChange, ToolResult, ToolSpec

# A literal special-token spelling in the rendered prompt: (start, end) character offsets.
Span = tuple[int, int]


def literal_alternation(words: Iterable[str]) -> str:
    """A regex matching any of `words`, longest first, factored as a prefix tree:
    with hundreds of added tokens sharing `<`, a flat alternation tries each at
    every `<` of a long prompt; the tree tries one branch per character."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict[str, Any]) -> str:
        ends = "" in node
        branches = [re.escape(char) + pattern(child) for char, child in node.items() if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and not ends else "(?:" + "|".join(branches) + ")"
        return body + "?" if ends else body

    return pattern(trie)


class LiteralShield:
    """Hides added-token spellings in request text before rendering, and finds them
    again in the rendered prompt."""

    _MIN_CACHED = 512  # characters; long texts (system prompts, tool lists) repeat every turn
    _MAX_CACHED_LENGTH = 1024 * 1024  # longer ones are one-off: caching them only pins memory
    _MAX_CACHED = 4096  # entries

    def __init__(self, added_tokens: Iterable[str]):
        spellings = sorted({t for t in added_tokens if t}, key=len, reverse=True)
        self._index = {spelling: i for i, spelling in enumerate(spellings)}
        self._spellings = spellings
        pattern = re.compile(literal_alternation(spellings)) if spellings else None
        self._find = pattern.search if pattern else None
        self._sub = pattern.sub if pattern else None
        nonce = "".join(secrets.choice(string.ascii_uppercase) for _ in range(20))
        self._open, self._close = f"QZ{nonce}", "ZQ"
        self._sentinel = re.compile(re.escape(self._open) + r"(\d+)" + self._close)
        self._hidden: dict[str, str] = {}

    # ----------------------------------------------------------------- hiding

    def hide_text(self, text: str) -> str:
        """`text` with every added-token spelling replaced by its sentinel."""
        if self._sub is None or not text:
            return text
        if not self._MIN_CACHED <= len(text) <= self._MAX_CACHED_LENGTH:
            return self._hide(text)
        hidden = self._hidden.get(text)
        if hidden is None:
            if len(self._hidden) >= self._MAX_CACHED:
                self._hidden.clear()
            found = self._hide(text)
            # "" for a text without spellings: the caller then gets its own `text` back,
            # the same object, and knows that nothing was hidden (no copy of its part).
            hidden = self._hidden[text] = "" if found is text else found
        return hidden or text

    def _hide(self, text: str) -> str:
        assert self._find is not None and self._sub is not None
        if self._find(text) is None:
            return text
        return self._sub(lambda m: f"{self._open}{self._index[m.group()]}{self._close}", text)

    def hide_value(self, value: Any) -> Any:
        """A JSON value (a tool's schema, template variables) with its strings hidden."""
        if isinstance(value, str):
            return self.hide_text(value)
        if isinstance(value, dict):
            return {self.hide_text(k) if isinstance(k, str) else k: self.hide_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.hide_value(v) for v in value]
        return value

    def hide_conversation(self, conversation: Conversation) -> Conversation:
        """`conversation` with every request-supplied string hidden: system blocks,
        message text and reasoning, tool calls and results, tool specs and template
        variables. Returns the same object when nothing needed hiding."""
        if self._sub is None:
            return conversation
        system = [self._text(b) for b in conversation.system]
        messages = [self._message(m) for m in conversation.messages]
        tools = [self._tool(t) for t in conversation.tools]
        kwargs = self.hide_value(conversation.template_kwargs)
        unchanged = (
            all(a is b for a, b in zip(system, conversation.system, strict=True))
            and all(a is b for a, b in zip(messages, conversation.messages, strict=True))
            and all(a is b for a, b in zip(tools, conversation.tools, strict=True))
            and kwargs == conversation.template_kwargs
        )
        if unchanged:
            return conversation
        return conversation.model_copy(
            update={"system": system, "messages": messages, "tools": tools, "template_kwargs": kwargs}
        )

    def _text(self, part: Text) -> Text:
        hidden = self.hide_text(part.text)
        return part if hidden is part.text else part.model_copy(update={"text": hidden})

    def _message(self, message: Message) -> Message:
        parts = [self._part(p) for p in message.parts]
        if all(a is b for a, b in zip(parts, message.parts, strict=True)):
            return message
        return message.model_copy(update={"parts": parts})

    def _part(self, part: Any) -> Any:
        if isinstance(part, Text):
            return self._text(part)
        if isinstance(part, Reasoning):
            hidden = self.hide_text(part.text)
            return part if hidden is part.text else part.model_copy(update={"text": hidden})
        if isinstance(part, ToolCall):
            update = {
                k: self.hide_text(v) for k, v in (("id", part.id), ("name", part.name), ("arguments", part.arguments))
            }
            return self._updated(part, update)
        if isinstance(part, ToolResult):
            content = [self._text(c) if isinstance(c, Text) else c for c in part.content]
            result: dict[str, Any] = {"tool_call_id": self.hide_text(part.tool_call_id)}
            if part.name is not None:
                result["name"] = self.hide_text(part.name)
            if any(a is not b for a, b in zip(content, part.content, strict=True)):
                result["content"] = content
            return self._updated(part, result)
        if isinstance(part, ToolChange):
            change: dict[str, Any] = {"tool_name": self.hide_text(part.tool_name)}
            if part.tool is not None:
                tool = self._tool(part.tool)
                if tool is not part.tool:
                    change["tool"] = tool
            return self._updated(part, change)
        assert isinstance(part, Image)
        return part

    def _tool(self, tool: ToolSpec) -> ToolSpec:
        update: dict[str, Any] = {"name": self.hide_text(tool.name), "description": self.hide_text(tool.description)}
        if tool.namespace is not None:
            update["namespace"] = self.hide_text(tool.namespace)
        parameters = self.hide_value(tool.parameters)
        if parameters != tool.parameters:
            update["parameters"] = parameters
        hidden: ToolSpec = self._updated(tool, update)
        return hidden

    @staticmethod
    def _updated(model: Any, update: dict[str, Any]) -> Any:
        changed = {k: v for k, v in update.items() if v is not getattr(model, k)}
        return model.model_copy(update=changed) if changed else model

    # -------------------------------------------------------------- revealing

    def reveal(self, rendered: str) -> tuple[str, list[Span]]:
        """The prompt with every sentinel put back, and the spans those literal
        spellings occupy in it (in order, non-overlapping)."""
        if self._open not in rendered:
            return rendered, []
        pieces: list[str] = []
        spans: list[Span] = []
        length = pos = 0
        for match in self._sentinel.finditer(rendered):
            before = rendered[pos : match.start()]
            spelling = self._spellings[int(match.group(1))]
            pieces += (before, spelling)
            length += len(before)
            spans.append((length, length + len(spelling)))
            length += len(spelling)
            pos = match.end()
        pieces.append(rendered[pos:])
        return "".join(pieces), spans

    def reveal_text(self, rendered: str) -> str:
        return self.reveal(rendered)[0]
