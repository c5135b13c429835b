"""The one way a conversation becomes a prompt: billing-preamble strip, reasoning
replay, chat template, tokens. Every API and `count_tokens` go through
`PromptRenderer.render`, so what is counted is what is generated from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from ..conversation import Conversation
from .literal_text import LiteralShield, Span
from .preamble import strip_billing_preamble
from .prefix_watch import PromptFacts
from .profiles import ModelProfile
from .replay import template_input
from .template import ChatTemplate
from .tokenizer import Tokenizer


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    token_ids: list[int]
    # The prompt ends inside an opened reasoning block: output starts as reasoning.
    opened_reasoning: bool
    thinking_enabled: bool
    preamble_stripped: bool
    facts: PromptFacts


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

    def render(
        self, conversation: Conversation, *, add_generation_prompt: bool = True, now: datetime | None = None
    ) -> RenderedPrompt:
        stripped = False
        if not self.keep_anthropic_preamble:
            conversation, stripped = strip_billing_preamble(conversation)
        original_tools = conversation.tools
        conversation = self._hide_special_spellings(conversation)
        prepared = template_input(
            conversation, self.profile, self.template.traits, template_has_tools=self.template_has_tools
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
            tool_names=tuple(t.model_name for t in original_tools),
            system_digest=hashlib.blake2b(system.encode(), digest_size=8).hexdigest(),
            reasoning_markers=markers or ("<think>", "</think>"),
        )
        return RenderedPrompt(
            text,
            self.tokenizer.encode_with_literals(text, literals),
            opened,
            prepared.thinking_enabled,
            stripped,
            facts,
        )

    # Special tokens can not be forged (literal_text.py): request text is rendered
    # with its added-token spellings hidden, and they come back as literal spans.

    def _hide_special_spellings(self, conversation: Conversation) -> Conversation:
        return self._shield.hide_conversation(conversation)

    def _reveal_special_spellings(self, rendered: str) -> tuple[str, list[Span]]:
        return self._shield.reveal(rendered)
