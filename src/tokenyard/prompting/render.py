"""The one way a conversation becomes a prompt: billing-preamble strip, reasoning
replay, chat template, tokens. Every API and `count_tokens` go through
`PromptRenderer.render`, so what is counted is what is generated from.

A forced tool choice may end the prompt with a prefill (the family's call opener,
chosen by the pipeline once it knows how the template left the reasoning block):
it is part of the prompt's text and tokens, and `RenderedPrompt.prefill` says which
text the output continues."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from ..conversation import Conversation, Message, Text, ToolCall, ToolResult, ToolSpec
from ..faults import TemplateError
from .deferred_tools import declared_tools
from .literal_text import LiteralShield, Span
from .preamble import strip_billing_preamble
from .prefix_watch import PromptFacts
from .profiles import ModelProfile
from .replay import InlineSystem, clear_old_thinking, clear_old_tool_uses, template_input
from .template import ChatTemplate
from .tokenizer import Tokenizer

_PROBE_TEXT = "tokenyard inline system probe"
_PROBE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    token_ids: list[int]
    # The prompt ends inside an opened reasoning block: output starts as reasoning.
    opened_reasoning: bool
    thinking_enabled: bool
    preamble_stripped: bool
    facts: PromptFacts
    # Text appended after the template's own output (a call opener); `text` ends with it.
    prefill: str = ""


# (the template left a reasoning block open, thinking is enabled) -> the prefill text.
Prefill = Callable[[bool, bool], str]


class PromptRenderer:
    def __init__(
        self,
        profile: ModelProfile,
        template: ChatTemplate,
        tokenizer: Tokenizer,
        *,
        keep_anthropic_preamble: bool = False,
    ):
        self.profile = profile
        self.template = template
        self.tokenizer = tokenizer
        self.keep_anthropic_preamble = keep_anthropic_preamble
        # A template that never mentions tool calls can not show the model its tools.
        self.template_has_tools = "tool_calls" in template.source or "tool_call" in template.source
        self._shield = LiteralShield(tokenizer.added_tokens.values())
        self.inline_system = probe_inline_system(self)

    def render(
        self,
        conversation: Conversation,
        *,
        add_generation_prompt: bool = True,
        now: datetime | None = None,
        prefill: Prefill | None = None,
    ) -> RenderedPrompt:
        """The prompt, with the context edits the client asked for: old reasoning
        always cleared as asked; old tool results only once the prompt is over the
        client's trigger and clearing them saves at least what it asked."""
        conversation = clear_old_thinking(conversation)
        prompt = self._render(conversation, add_generation_prompt, now, prefill)
        clearing = conversation.context_edits.clear_tool_uses
        if clearing is not None and len(prompt.token_ids) > clearing.trigger_tokens:
            cleared = clear_old_tool_uses(conversation)
            if cleared is not conversation:
                smaller = self._render(cleared, add_generation_prompt, now, prefill)
                if len(prompt.token_ids) - len(smaller.token_ids) >= clearing.clear_at_least_tokens:
                    prompt = smaller
        return prompt

    def _render(
        self,
        conversation: Conversation,
        add_generation_prompt: bool,
        now: datetime | None,
        prefill: Prefill | None,
    ) -> RenderedPrompt:
        stripped = False
        if not self.keep_anthropic_preamble:
            conversation, stripped = strip_billing_preamble(conversation)
        original_tools = conversation.tools
        conversation = self._hide_special_spellings(conversation)
        prepared = template_input(
            conversation,
            self.profile,
            self.template.traits,
            template_has_tools=self.template_has_tools,
            inline_system=self.inline_system,
        )
        # Templates that print today's date change the prompt at midnight only;
        # a fixed `now` keeps tests deterministic.
        text, literals = self._reveal_special_spellings(
            self.template.render(
                prepared.messages,
                prepared.tools,
                add_generation_prompt,
                now=now or datetime.now(UTC),
                **prepared.kwargs,
            )
        )
        markers = self.profile.reasoning_markers
        opened = bool(
            add_generation_prompt
            and prepared.thinking_enabled
            and markers is not None
            and text.rstrip().endswith(markers[0].rstrip())
        )
        system = self._shield.reveal_text(
            prepared.messages[0]["content"] if prepared.messages and prepared.messages[0]["role"] == "system" else ""
        )
        facts = PromptFacts(
            tool_names=tuple(t.model_name for t in declared_tools(original_tools)),
            system_digest=hashlib.blake2b(system.encode(), digest_size=8).hexdigest(),
            reasoning_markers=markers or ("<think>", "</think>"),
            user_turns=sum(
                m.role == "user" and not any(isinstance(p, ToolResult) for p in m.parts) for m in conversation.messages
            ),
        )
        extra = prefill(opened, prepared.thinking_enabled) if prefill is not None and add_generation_prompt else ""
        # The prefill is template structure (a call opener): its special tokens are real.
        text += extra
        return RenderedPrompt(
            text,
            self.tokenizer.encode_with_literals(text, literals),
            opened,
            prepared.thinking_enabled,
            stripped,
            facts,
            prefill=extra,
        )

    # Special tokens can not be forged (literal_text.py): request text is rendered
    # with its added-token spellings hidden, and they come back as literal spans.

    def _hide_special_spellings(self, conversation: Conversation) -> Conversation:
        return self._shield.hide_conversation(conversation)

    def _reveal_special_spellings(self, rendered: str) -> tuple[str, list[Span]]:
        return self._shield.reveal(rendered)


def probe_inline_system(renderer: PromptRenderer) -> InlineSystem:
    """Render a short agent turn with and without a system message inserted after a
    tool result (trailing, and followed by a user message). Keep such messages in
    place only if the template accepts them and the only change is the inserted
    span, after everything that came before; otherwise fold them."""
    tool = ToolSpec(name="probe_tool", description="A probe.")
    base = [
        Message(role="user", parts=[Text(text="first question")]),
        Message(role="assistant", parts=[ToolCall(id="call_probe_1", name="probe_tool", arguments="{}")]),
        Message(role="user", parts=[ToolResult(tool_call_id="call_probe_1", content=[Text(text="probe result")])]),
    ]
    inserted = Message(role="system", parts=[Text(text=_PROBE_TEXT)])
    follow_up = Message(role="user", parts=[Text(text="second question")])

    def render(messages: list[Message], generation: bool) -> str:
        conversation = Conversation(model="probe", system=[Text(text="probe system")], messages=messages, tools=[tool])
        prepared = template_input(
            conversation,
            renderer.profile,
            renderer.template.traits,
            template_has_tools=renderer.template_has_tools,
            inline_system=InlineSystem.PRESERVE,
        )
        return renderer.template.render(
            prepared.messages, prepared.tools, generation, now=_PROBE_TIME, **prepared.kwargs
        )

    try:
        history = render(base, False)
        pairs = [
            (render(base, True), render([*base, inserted], True)),
            (render([*base, follow_up], True), render([*base, inserted, follow_up], True)),
        ]
    except TemplateError:
        return InlineSystem.FOLD
    for without, with_ in pairs:
        if not (with_.startswith(history) and _only_insertion(without, with_)):
            return InlineSystem.FOLD
    return InlineSystem.PRESERVE


def _only_insertion(without: str, with_: str) -> bool:
    """`with_` is `without` plus one contiguous span holding the probe text."""
    head = len(os.path.commonprefix([without, with_]))
    tail = len(os.path.commonprefix([without[head:][::-1], with_[head:][::-1]]))
    return head + tail == len(without) and _PROBE_TEXT in with_[head : len(with_) - tail]
