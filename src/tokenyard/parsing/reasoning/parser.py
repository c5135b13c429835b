"""Marker-delimited reasoning, for every family that brackets its thinking.

Families differ only in data (their markers, whether output starts inside
reasoning, which markers end reasoning without being consumed), so one parser
serves them all; `REASONING_FORMATS` is the table of REFERENCE §1. gpt-oss's
harmony channels are a different shape and live in `parsing/harmony.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ...events import Marker, ParseEvent, ReasoningDelta, TextDelta
from ..markers import MarkerSet


@dataclass(frozen=True)
class ReasoningFormat:
    name: str
    start: tuple[str, ...]
    end: tuple[str, ...]
    # Output is reasoning from its first token until an end marker (the template
    # opened the block, or the family never writes the start marker).
    force: bool = False
    # Markers that end reasoning without being consumed: they begin what follows
    # (a tool-call section).
    implicit_end: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


_THINK = (("<think>",), ("</think>",))

REASONING_FORMATS: tuple[ReasoningFormat, ...] = (
    ReasoningFormat("basic", *_THINK, aliases=("qwen3", "nemotron_deci", "glm45", "deepseek")),
    ReasoningFormat(
        "deepseek_r1",
        *_THINK,
        force=True,
        aliases=("deepseek_v3", "deepseek_v3_1", "deepseek_v3_2", "step3", "nemotron_nano", "nemotron3"),
    ),
    ReasoningFormat("deepseek_v4", *_THINK, implicit_end=("<｜DSML｜tool_calls>", "<｜DSML｜invoke name=")),
    ReasoningFormat("kimi", ("◁think▷",), ("◁/think▷",)),
    ReasoningFormat(
        "kimi_k25",
        *_THINK,
        force=True,
        implicit_end=("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>"),
    ),
    ReasoningFormat("kimi_k3", ("<|open|>think<|sep|>",), ("<|close|>think<|sep|>",)),
    ReasoningFormat("minimax_m2", *_THINK, force=True, implicit_end=("<minimax:tool_call>",)),
    ReasoningFormat("minimax_append_think", *_THINK, force=True),
    ReasoningFormat("mistral", ("[THINK]",), ("[/THINK]",), force=True, aliases=("magistral",)),
    ReasoningFormat(
        "granite",
        ("Here's my thought process:", "Here is my thought process:"),
        ("Here's my response:", "Here is my response:"),
    ),
    # The longer start marker swallows gemma's `thought\n` channel label.
    ReasoningFormat("gemma4", ("<|channel>thought\n", "<|channel>"), ("<channel|>",)),
)

_BY_NAME = {name: fmt for fmt in REASONING_FORMATS for name in (fmt.name, *fmt.aliases)}

# Not a marker format: gpt-oss reasoning is a harmony channel (parsing/harmony.py).
HARMONY_REASONING_NAMES = ("gpt_oss", "harmony")


def reasoning_format(name: str) -> ReasoningFormat:
    """Look a reasoning format up by the field's name (case-insensitive)."""
    from ..registry import unknown_name

    fmt = _BY_NAME.get(name.strip().lower())
    if fmt is None:
        raise unknown_name("reasoning parser", name, reasoning_parser_names())
    return fmt


def reasoning_parser_names() -> list[str]:
    return sorted([*_BY_NAME, *HARMONY_REASONING_NAMES])


class ReasoningParser:
    """Sans-IO: `feed(text)` and `finish()` return ordered `ReasoningDelta`,
    `TextDelta` and `Marker` events.

    `prompt_opened`: the rendered prompt already ends inside a reasoning block.
    `thinking_enabled=False`: the request turned thinking off, so output is never
    assumed to be reasoning (explicit markers the model writes are still honoured).
    `exit_markers`: tool-call start markers; met inside reasoning they end it and
    are passed on, unconsumed, as text for the tool parser.
    """

    def __init__(
        self,
        fmt: ReasoningFormat,
        *,
        thinking_enabled: bool = True,
        prompt_opened: bool = False,
        exit_markers: Iterable[str] = (),
    ):
        self.format = fmt
        self.in_reasoning = prompt_opened or (fmt.force and thinking_enabled)
        self._starts = frozenset(fmt.start)
        self._ends = frozenset(fmt.end)
        self._implicit = frozenset((*fmt.implicit_end, *exit_markers))
        # In text: a start opens reasoning, a stray end is a marker. In reasoning: an
        # end (or implicit end) closes it, a repeated start is a marker.
        self._text_markers = MarkerSet((*fmt.start, *fmt.end))
        self._reasoning_markers = MarkerSet((*fmt.start, *fmt.end, *self._implicit))
        self._buf = ""

    def feed(self, text: str) -> list[ParseEvent]:
        markers = self._reasoning_markers if self.in_reasoning else self._text_markers
        if not self._buf and not markers.could_start(text):
            if not text:
                return []
            return [ReasoningDelta(text) if self.in_reasoning else TextDelta(text)]
        self._buf += text
        return self._drain(final=False)

    def finish(self) -> list[ParseEvent]:
        return self._drain(final=True)

    def _drain(self, final: bool) -> list[ParseEvent]:
        events: list[ParseEvent] = []
        buf = self._buf
        while buf:
            markers = self._reasoning_markers if self.in_reasoning else self._text_markers
            delta = ReasoningDelta if self.in_reasoning else TextDelta
            match = markers.find(buf)
            if match is None:
                held = 0 if final else markers.held_suffix(buf)
                if held < len(buf):
                    events.append(delta(buf[: len(buf) - held]))
                buf = buf[len(buf) - held :]
                break
            at = match.start()
            if not final and markers.is_proper_prefix(buf[at:]):
                # A complete marker that may still grow into a longer one.
                if at:
                    events.append(delta(buf[:at]))
                buf = buf[at:]
                break
            if at:
                events.append(delta(buf[:at]))
            marker = match.group()
            if self.in_reasoning and marker in self._implicit and marker not in self._ends:
                self.in_reasoning = False
                buf = buf[at:]
                # The marker belongs to what follows: pass it on as text, whole.
                events.append(TextDelta(marker))
                buf = buf[len(marker) :]
                continue
            events.append(Marker(marker))
            if marker in self._starts:
                self.in_reasoning = True
            elif marker in self._ends:
                self.in_reasoning = False
            buf = buf[match.end() :]
        self._buf = buf
        return events
