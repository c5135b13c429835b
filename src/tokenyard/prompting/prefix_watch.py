"""Per-session prefix stability, watched.

An agent session's turn N+1 prompt should start with turn N's prompt token for
token (plus the model's output); that is what lets the engine reuse its KV cache.
`PrefixWatch` remembers each session's last prompt compactly — chained hashes of
fixed-size token blocks for the fast comparison, and the token ids compressed for
the rare diagnosis — in a bounded LRU, and for each new prompt reports how many
tokens matched. When a prompt diverges before the end of the previous one it
explains where and why: the token position, the text on both sides, and the likely
cause (billing header, changed reasoning, reordered or changed tools, changed
system prompt, edited history).
"""

from __future__ import annotations

import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..kv_blocks import BlockHash, block_hashes

Decode = Callable[[Sequence[int]], str]

CAUSE_BILLING_HEADER = "billing header"
CAUSE_CHANGED_REASONING = "changed reasoning"
CAUSE_REORDERED_TOOLS = "reordered tools"
CAUSE_CHANGED_TOOLS = "changed tools"
CAUSE_CHANGED_SYSTEM = "changed system prompt"
CAUSE_CHANGED_HISTORY = "changed conversation history"

_BILLING_HEADER = "x-anthropic-billing-header"


@dataclass(frozen=True)
class PromptFacts:
    """What the renderer knows about a prompt, for naming a divergence's cause."""

    tool_names: tuple[str, ...] = ()
    system_digest: str = ""
    reasoning_markers: tuple[str, str] = ("<think>", "</think>")


@dataclass(frozen=True)
class Divergence:
    position: int  # the first token that differs
    before: str  # text shared by both prompts just before it
    previous: str  # the previous prompt's text from there on (a window)
    current: str  # the new prompt's text from there on (a window)
    cause: str

    def describe(self) -> str:
        return (
            f"prompt diverged at token {self.position} ({self.cause}): …{self.before!r} then "
            f"previous {self.previous!r} vs now {self.current!r}"
        )


@dataclass(frozen=True)
class PrefixReport:
    session: str
    prompt_tokens: int
    matched_tokens: int  # leading tokens shared with the session's previous prompt
    previous_tokens: int  # 0 for a session's first prompt
    divergence: Divergence | None  # set when the prompt broke the previous one's prefix

    @property
    def stable(self) -> bool:
        return self.divergence is None


@dataclass
class _Remembered:
    block_hashes: list[BlockHash]
    length: int
    tokens_z: bytes
    facts: PromptFacts = field(default_factory=PromptFacts)


def _pack(tokens: Sequence[int]) -> bytes:
    return zlib.compress(array("I", tokens).tobytes(), 1)


def _unpack(data: bytes) -> array:
    out = array("I")
    out.frombytes(zlib.decompress(data))
    return out


class PrefixWatch:
    def __init__(self, *, block_size: int = 32, max_sessions: int = 512, context_chars: int = 80):
        self.block_size = block_size
        self.max_sessions = max_sessions
        self.context_chars = context_chars
        self._sessions: OrderedDict[str, _Remembered] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def observe(
        self,
        session: str,
        tokens: Sequence[int],
        decode: Decode,
        facts: PromptFacts | None = None,
    ) -> PrefixReport:
        """Compare `tokens` with the session's previous prompt, then remember it."""
        facts = facts or PromptFacts()
        hashes = block_hashes(tokens, self.block_size)
        previous = self._sessions.pop(session, None)
        report = PrefixReport(session, len(tokens), 0, 0, None)
        if previous is not None:
            report = self._compare(session, tokens, hashes, decode, facts, previous)
        self._sessions[session] = _Remembered(hashes, len(tokens), _pack(tokens), facts)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return report

    def _compare(
        self,
        session: str,
        tokens: Sequence[int],
        hashes: list[BlockHash],
        decode: Decode,
        facts: PromptFacts,
        previous: _Remembered,
    ) -> PrefixReport:
        # Whole matching blocks by hash, then token by token from there.
        blocks = 0
        for old, new in zip(previous.block_hashes, hashes, strict=False):
            if old != new:
                break
            blocks += 1
        start = blocks * self.block_size
        limit = min(previous.length, len(tokens))
        old_tokens = None
        matched = start
        if matched < limit:
            old_tokens = _unpack(previous.tokens_z)
            while matched < limit and old_tokens[matched] == tokens[matched]:
                matched += 1
        divergence = None
        if matched < previous.length:
            old_tokens = old_tokens if old_tokens is not None else _unpack(previous.tokens_z)
            divergence = self._diagnose(matched, old_tokens, tokens, decode, facts, previous.facts)
        return PrefixReport(session, len(tokens), matched, previous.length, divergence)

    def _diagnose(
        self,
        position: int,
        old_tokens: Sequence[int],
        new_tokens: Sequence[int],
        decode: Decode,
        facts: PromptFacts,
        old_facts: PromptFacts,
    ) -> Divergence:
        shared = decode(list(new_tokens[:position]))
        window = self.context_chars
        previous_text = decode(list(old_tokens[position : position + window]))[:window]
        current_text = decode(list(new_tokens[position : position + window]))[:window]
        cause = self._cause(shared, previous_text, current_text, facts, old_facts)
        return Divergence(position, shared[-window:], previous_text, current_text, cause)

    @staticmethod
    def _cause(shared: str, previous: str, current: str, facts: PromptFacts, old_facts: PromptFacts) -> str:
        nearby = shared[-200:] + previous + current
        if _BILLING_HEADER in nearby or (_BILLING_HEADER in shared[:400] and len(shared) < 600):
            return CAUSE_BILLING_HEADER
        start, end = facts.reasoning_markers
        if shared.rfind(start) > shared.rfind(end):
            return CAUSE_CHANGED_REASONING
        if facts.tool_names != old_facts.tool_names:
            if sorted(facts.tool_names) == sorted(old_facts.tool_names):
                return CAUSE_REORDERED_TOOLS
            return CAUSE_CHANGED_TOOLS
        if facts.system_digest != old_facts.system_digest:
            return CAUSE_CHANGED_SYSTEM
        return CAUSE_CHANGED_HISTORY
