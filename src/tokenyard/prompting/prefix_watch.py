"""Per-stream prefix stability, watched.

An agent stream's turn N+1 prompt should start with turn N's prompt token for
token (plus the model's output); that is what lets the engine reuse its KV cache.
`PrefixWatch` remembers each stream's recent prompts as arrays of 4-byte token ids,
in a bounded LRU, and for each new prompt reports how many tokens matched: two
arrays are compared in C, ~10 µs for 36K tokens. (It used to hash every 32-token
block and compress the ids: 3.2 bytes a token of prose and code against 4 now, but
1.5-3.5 ms of the event loop for every 36K-token prompt.)

A stream keeps a few branches, because a client forks it (a compaction or summary
request extends the history, then the conversation goes on from the point before
the fork): a prompt that extends any remembered branch is stable. When a prompt
extends none it explains where and why: the token position, the token counts and
the likely cause (billing header, changed reasoning, reordered or changed tools,
changed system prompt, edited history). Two causes are expected, not faults, and
are logged below WARNING: a template that drops earlier turns' reasoning once a new
user turn starts (Qwen3 keeps only the current agentic turn's), and a side query (a
request without tools, such as a title or a permission classifier's question)
diverging from an earlier side query in its own stream. The text on both sides is
kept for an operator who asks for it (`describe(excerpts=True)`); by default no
prompt text reaches a log.

A stream is keyed by session, agent and model (see streams.py); a subagent's
stream records its parent, a compaction request is labelled as such, and the
first request after a compaction starts its stream over instead of diverging.
"""

from __future__ import annotations

import logging
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from .streams import StreamKind

Decode = Callable[[Sequence[int]], str]

CAUSE_BILLING_HEADER = "billing header"
CAUSE_CHANGED_REASONING = "changed reasoning"
CAUSE_REORDERED_TOOLS = "reordered tools"
CAUSE_CHANGED_TOOLS = "changed tools"
CAUSE_CHANGED_SYSTEM = "changed system prompt"
CAUSE_CHANGED_HISTORY = "changed conversation history"
# Expected: not a client or server fault.
CAUSE_TEMPLATE_DROPPED_REASONING = "template dropped earlier reasoning at a new user turn"
CAUSE_SIDE_QUERY = "side query"
EXPECTED_CAUSES = frozenset({CAUSE_TEMPLATE_DROPPED_REASONING, CAUSE_SIDE_QUERY})

_BILLING_HEADER = "x-anthropic-billing-header"


@dataclass(frozen=True)
class PromptFacts:
    """What the renderer knows about a prompt, for naming a divergence's cause."""

    tool_names: tuple[str, ...] = ()
    system_digest: str = ""
    reasoning_markers: tuple[str, str] = ("<think>", "</think>")
    user_turns: int = 0  # user messages that start a turn (not tool results)


@dataclass(frozen=True)
class Divergence:
    position: int  # the first token that differs
    before: str  # text shared by both prompts just before it
    previous: str  # the previous prompt's text from there on (a window)
    current: str  # the new prompt's text from there on (a window)
    cause: str

    @property
    def expected(self) -> bool:
        return self.cause in EXPECTED_CAUSES

    def describe(self, *, excerpts: bool = False) -> str:
        """Position and cause; the prompt text around it only with `excerpts`."""
        text = f"prompt diverged at token {self.position} ({self.cause})"
        if excerpts:
            text += f": …{self.before!r} then previous {self.previous!r} vs now {self.current!r}"
        return text


@dataclass(frozen=True)
class PrefixReport:
    session: str  # the stream's key
    prompt_tokens: int
    matched_tokens: int  # leading tokens shared with the closest remembered prompt
    previous_tokens: int  # that prompt's length; 0 for a stream's first prompt
    divergence: Divergence | None  # set when the prompt extends no remembered prompt
    kind: str = StreamKind.TURN.value
    parent: str | None = None  # the agent that started this stream
    new_stream: bool = False  # first prompt of the stream (or restarted after a compaction)

    @property
    def stable(self) -> bool:
        return self.divergence is None

    def diagnostics(self, *, excerpts: bool = False) -> list[tuple[int, str]]:
        """(logging level, message) lines: token counts, positions and causes;
        prompt text only with `excerpts`."""
        counts = f"{self.prompt_tokens} prompt tokens, {self.matched_tokens} matched of {self.previous_tokens}"
        if self.kind == StreamKind.COMPACTION.value:
            where = "" if self.divergence is None else f"; {self.divergence.describe(excerpts=excerpts)}"
            return [(logging.INFO, f"stream {self.session}: compaction request ({counts}{where})")]
        if self.new_stream:
            origin = f", started by agent {self.parent}" if self.parent else ""
            restarted = " after a compaction" if self.kind == StreamKind.RESUMED.value else ""
            return [
                (logging.INFO, f"stream {self.session}: new stream{restarted}{origin} ({self.prompt_tokens} tokens)")
            ]
        if self.divergence is not None:
            level = logging.INFO if self.divergence.expected else logging.WARNING
            return [(level, f"stream {self.session}: {self.divergence.describe(excerpts=excerpts)} ({counts})")]
        return [(logging.DEBUG, f"stream {self.session}: {counts}")]


@dataclass
class _Remembered:
    tokens: array[int]
    facts: PromptFacts = field(default_factory=PromptFacts)

    @property
    def length(self) -> int:
        return len(self.tokens)


@dataclass
class _Stream:
    branches: list[_Remembered]  # most recent last
    parent: str | None = None


def shared_prefix(old: array[int], new: array[int]) -> int:
    """How many leading ids `old` and `new` share: one comparison when one extends
    the other (a growing session), else a binary search of slice comparisons."""
    shorter = min(len(old), len(new))
    if old[:shorter] == new[:shorter]:
        return shorter
    same, differ = 0, shorter  # old[:same] == new[:same]; old[:differ] != new[:differ]
    while differ - same > 1:
        middle = (same + differ) // 2
        if old[same:middle] == new[same:middle]:
            same = middle
        else:
            differ = middle
    return same


class PrefixWatch:
    def __init__(self, *, max_sessions: int = 512, context_chars: int = 80, max_branches: int = 4):
        self.max_sessions = max_sessions
        self.context_chars = context_chars
        self.max_branches = max_branches
        self._sessions: OrderedDict[str, _Stream] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def observe(
        self,
        session: str,
        tokens: Sequence[int],
        decode: Decode,
        facts: PromptFacts | None = None,
        *,
        kind: StreamKind = StreamKind.TURN,
        parent: str | None = None,
    ) -> PrefixReport:
        """Compare `tokens` with the stream's remembered prompts, then remember it."""
        facts = facts or PromptFacts()
        stream = self._sessions.pop(session, None)
        remembered = _Remembered(array("I", tokens), facts)
        if stream is None or not stream.branches:
            self._remember(session, _Stream([remembered], parent))
            return PrefixReport(session, len(tokens), 0, 0, None, kind.value, parent, new_stream=True)
        compared = [(shared_prefix(branch.tokens, remembered.tokens), branch) for branch in stream.branches]
        extended = [branch for matched, branch in compared if matched == branch.length]
        if extended:  # the prompt extends a branch: it replaces it, or forks from it
            branch = max(extended, key=lambda b: b.length)
            if kind is not StreamKind.COMPACTION:
                stream.branches.remove(branch)
            stream.branches.append(remembered)
            del stream.branches[: -self.max_branches]
            self._remember(session, stream)
            return PrefixReport(session, len(tokens), branch.length, branch.length, None, kind.value, stream.parent)
        matched, closest = max(compared, key=lambda pair: pair[0])
        if kind is StreamKind.RESUMED:  # the history was replaced by its summary: start over
            self._remember(session, _Stream([remembered], stream.parent))
            return PrefixReport(
                session, len(tokens), matched, closest.length, None, kind.value, stream.parent, new_stream=True
            )
        divergence = self._diagnose(matched, closest.tokens, tokens, decode, facts, closest.facts)
        if kind is StreamKind.SIDE_QUERY:
            divergence = replace(divergence, cause=CAUSE_SIDE_QUERY)
        stream.branches.append(remembered)
        del stream.branches[: -self.max_branches]
        self._remember(session, stream)
        return PrefixReport(session, len(tokens), matched, closest.length, divergence, kind.value, stream.parent)

    def _remember(self, session: str, stream: _Stream) -> None:
        self._sessions[session] = stream
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

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
        if (
            facts.user_turns > old_facts.user_turns
            and _opens_at(shared, previous, start)
            and not _opens_at(shared, current, start)
        ):
            return CAUSE_TEMPLATE_DROPPED_REASONING
        if shared.rfind(start) > shared.rfind(end):
            return CAUSE_CHANGED_REASONING
        if facts.tool_names != old_facts.tool_names:
            if sorted(facts.tool_names) == sorted(old_facts.tool_names):
                return CAUSE_REORDERED_TOOLS
            return CAUSE_CHANGED_TOOLS
        if facts.system_digest != old_facts.system_digest:
            return CAUSE_CHANGED_SYSTEM
        return CAUSE_CHANGED_HISTORY


def _opens_at(shared: str, text: str, marker: str) -> bool:
    """Whether `marker` starts at the divergence (`text` follows `shared`), also when
    its first characters are still shared."""
    marker = marker.strip()
    tail = shared[-len(marker) :]
    at = (tail + text.lstrip()).find(marker)
    return 0 <= at <= len(tail) < at + len(marker)
