"""Marker-delimited reasoning, for every family that brackets its thinking.

Families differ only in data (their markers, whether output starts inside
reasoning, which markers end reasoning without being consumed), so one parser
serves them all; `REASONING_FORMATS` is the table of REFERENCE §1. gpt-oss's
harmony channels are a different shape and live in `parsing/harmony.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...events import Marker, ParseEvent, ReasoningDelta, TextDelta
from ..markers import MarkerSet
from ..tools.base import ToolParser


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
    # Channel wrappers that are syntax wherever they appear outside a tool call:
    # reported as markers, never content (an implicit end among them also ends
    # reasoning).
    syntax: tuple[str, ...] = ()


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
    # The generation prompt opens the think channel; the response channel and the
    # tools channel follow it.
    ReasoningFormat(
        "kimi_k3",
        ("<|open|>think<|sep|>",),
        ("<|close|>think<|sep|>",),
        force=True,
        implicit_end=("<|open|>response<|sep|>", "<|open|>tools<|sep|>"),
        syntax=("<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>"),
    ),
    ReasoningFormat("minimax_m2", *_THINK, force=True, implicit_end=("<minimax:tool_call>",)),
    ReasoningFormat("minimax_append_think", *_THINK, force=True),
    # MiniMax M3: the template opens `<mm:think>` itself when thinking_mode is
    # "enabled" (the prompt then ends inside reasoning); otherwise the model writes
    # it, or begins with a bare `</mm:think>`.
    ReasoningFormat("minimax_m3", ("<mm:think>",), ("</mm:think>",), implicit_end=("]<]minimax[>[<tool_call>",)),
    ReasoningFormat("seed_oss", ("<seed:think>",), ("</seed:think>",), implicit_end=("<seed:tool_call>",)),
    # Step-3.5's template always ends the prompt with `<think>\n`.
    ReasoningFormat("step3p5", *_THINK, force=True),
    ReasoningFormat("mistral", ("[THINK]",), ("[/THINK]",), force=True, aliases=("magistral",)),
    ReasoningFormat(
        "granite",
        ("Here's my thought process:", "Here is my thought process:"),
        ("Here's my response:", "Here is my response:"),
    ),
    # The longer start markers swallow gemma's `thought` channel label, with or
    # without its newline (an empty thought channel has none).
    ReasoningFormat("gemma4", ("<|channel>thought\n", "<|channel>thought", "<|channel>"), ("<channel|>",)),
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
    `downstream`: the tool parser that receives the text. It is fed in step, so a
    reasoning marker that appears inside a tool call's arguments stays part of the
    call, and text the tool parser holds back is released before a marker.
    """

    def __init__(
        self,
        fmt: ReasoningFormat,
        *,
        thinking_enabled: bool = True,
        prompt_opened: bool = False,
        exit_markers: Iterable[str] = (),
        downstream: ToolParser | None = None,
    ):
        self.format = fmt
        self.in_reasoning = prompt_opened or (fmt.force and thinking_enabled)
        self._starts = frozenset(fmt.start)
        self._ends = frozenset(fmt.end)
        self._implicit = frozenset((*fmt.implicit_end, *exit_markers))
        # In text: a start opens reasoning, a stray end is a marker. In reasoning: an
        # end (or implicit end) closes it, a repeated start is a marker.
        self._syntax = frozenset(fmt.syntax)
        self._text_markers = MarkerSet((*fmt.start, *fmt.end, *fmt.syntax))
        self._reasoning_markers = MarkerSet((*fmt.start, *fmt.end, *self._implicit))
        self._downstream = downstream
        self._buf = ""

    def feed(self, text: str) -> list[ParseEvent]:
        markers = self._reasoning_markers if self.in_reasoning else self._text_markers
        if not self._buf and not markers.could_start(text):
            if not text:
                return []
            if self.in_reasoning:
                return [ReasoningDelta(text)]
            return self._downstream.feed(text) if self._downstream else [TextDelta(text)]
        self._buf += text
        events: list[ParseEvent] = []
        self._drain(events, final=False)
        return events

    def finish(self) -> list[ParseEvent]:
        events: list[ParseEvent] = []
        self._drain(events, final=True)
        if self._downstream is not None:
            events.extend(self._downstream.finish())
        return events

    def _text(self, events: list[ParseEvent], text: str) -> None:
        if not text:
            return
        if self._downstream is not None:
            events.extend(self._downstream.feed(text))
        else:
            events.append(TextDelta(text))

    def _content(self, events: list[ParseEvent], text: str) -> None:
        if self.in_reasoning:
            events.append(ReasoningDelta(text))
        else:
            self._text(events, text)

    def _drain(self, events: list[ParseEvent], final: bool) -> None:
        buf = self._buf
        downstream = self._downstream
        while buf:
            markers = self._reasoning_markers if self.in_reasoning else self._text_markers
            match = markers.find(buf)
            if match is None:
                held = 0 if final else markers.held_suffix(buf)
                if held < len(buf):
                    self._content(events, buf[: len(buf) - held])
                buf = buf[len(buf) - held :]
                break
            at = match.start()
            if not final and markers.is_proper_prefix(buf[at:]):
                # A complete marker that may still grow into a longer one.
                if at:
                    self._content(events, buf[:at])
                buf = buf[at:]
                break
            if at:
                self._content(events, buf[:at])
            marker = match.group()
            buf = buf[match.end() :]
            if not self.in_reasoning and downstream is not None:
                if downstream.in_call_region:
                    # Inside a tool call the marker is argument text, not syntax.
                    self._text(events, marker)
                    continue
                events.extend(downstream.release_held())
            if self.in_reasoning and marker in self._implicit and marker not in self._ends:
                # The marker belongs to what follows: pass it on, whole, as text.
                self.in_reasoning = False
                if marker in self._syntax:
                    events.append(Marker(marker))
                else:
                    self._text(events, marker)
                continue
            events.append(Marker(marker))
            if marker in self._starts:
                self.in_reasoning = True
            elif marker in self._ends:
                self.in_reasoning = False
        self._buf = buf
