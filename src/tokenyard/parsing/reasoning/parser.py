"""Marker-delimited reasoning, for every family that brackets its thinking.

Families differ only in data (their markers, whether output starts inside
reasoning, which markers end reasoning without being consumed), so one parser
serves them all; the syntaxes are the family catalog's table
(`families/reasoning.py`). gpt-oss's
harmony channels are a different shape and live in `parsing/harmony.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ...events import Marker, ParseEvent, ReasoningDelta, TextDelta, ToolCallStart
from ...families.reasoning import REASONING_BY_NAME, ReasoningFormat
from ..markers import MarkerSet
from ..tools.base import ToolParser
from ..tools.quoting import FLUSH_AT

# Not a marker format: gpt-oss reasoning is a harmony channel (parsing/harmony.py).
HARMONY_REASONING_NAMES = ("gpt_oss", "harmony")


# Formats registered at start-up from `--reasoning-parser-plugin module:Class`.
_PLUGIN_FORMATS: dict[str, ReasoningFormat] = {}


def canonical_reasoning_name(name: str) -> str:
    """Our name for a reasoning parser name users type (ours, a kebab or squashed
    spelling, or vLLM's/SGLang's/Dynamo's); `UnknownParserError` otherwise."""
    if name in REASONING_BY_NAME or name in _PLUGIN_FORMATS or name in HARMONY_REASONING_NAMES:
        return name  # already ours (every turn's parsers ask): nothing to resolve
    from ...families.peer_names import PEER_REASONING_MAPPING
    from ..registry import resolve_name

    return resolve_name(
        "reasoning", name, reasoning_parser_names(), PEER_REASONING_MAPPING, "--reasoning-parser-plugin"
    )


def reasoning_format(name: str) -> ReasoningFormat:
    """Look a reasoning format up by any name users type (case-insensitive)."""
    key = canonical_reasoning_name(name)
    if key in HARMONY_REASONING_NAMES:
        raise ValueError("gpt-oss reasoning is a harmony channel: parsed by parsing.harmony.HarmonyParser")
    return _PLUGIN_FORMATS.get(key) or REASONING_BY_NAME[key]


def reasoning_parser_names() -> list[str]:
    return sorted([*REASONING_BY_NAME, *_PLUGIN_FORMATS, *HARMONY_REASONING_NAMES])


def register_reasoning_format(fmt: ReasoningFormat) -> str:
    """Add a marker format from outside the tree (a plugin) under its name and aliases."""
    for key in (fmt.name, *fmt.aliases):
        _PLUGIN_FORMATS[key.lower()] = fmt
    return fmt.name.lower()


def load_reasoning_parser_plugin(spec: str) -> str:
    """Load and register a `--reasoning-parser-plugin module:Name`: a `ReasoningFormat`
    instance, or a class whose attributes `name`, `start`, `end` (and optionally
    `force`, `implicit_end`, `aliases`) describe one. Returns its name."""
    from ..registry import load_plugin

    value: Any = load_plugin(spec)
    if isinstance(value, ReasoningFormat):
        return register_reasoning_format(value)
    try:
        fmt = ReasoningFormat(
            str(value.name),
            tuple(value.start),
            tuple(value.end),
            force=bool(getattr(value, "force", False)),
            implicit_end=tuple(getattr(value, "implicit_end", ())),
            aliases=tuple(getattr(value, "aliases", ())),
        )
    except (AttributeError, TypeError) as error:
        raise ValueError(
            f"plugin {spec!r}: not a ReasoningFormat, nor a class with name, start and end markers"
        ) from error
    if not fmt.name or not fmt.start or not fmt.end or not all(isinstance(m, str) and m for m in fmt.start + fmt.end):
        raise ValueError(f"plugin {spec!r}: a reasoning format needs a name and non-empty start and end markers")
    return register_reasoning_format(fmt)


class ReasoningParser:
    """Sans-IO: `feed(text)` and `finish()` return ordered `ReasoningDelta`,
    `TextDelta` and `Marker` events.

    `prompt_opened`: the rendered prompt already ends inside a reasoning block.
    `thinking_enabled=False`: the request turned thinking off, so output is never
    assumed to be reasoning (explicit markers the model writes are still honoured).
    `exit_markers`: tool-call start markers; met inside reasoning they may end it
    (with `exit_at_line_start`, only at the start of a line): the model starting a
    call without closing its reasoning. Such a call is held until decided (see
    `_hold`): a real call only if nothing but whitespace or more calls follows it
    to the end of output; if the reasoning's end marker or more reasoning text
    follows, the model quoted or planned it and it stays reasoning.
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
        exit_at_line_start: bool = False,
        downstream: ToolParser | None = None,
    ):
        self.format = fmt
        self.in_reasoning = prompt_opened or (fmt.force and thinking_enabled)
        self._starts = frozenset(fmt.start)
        self._ends = frozenset(fmt.end)
        self._implicit = frozenset((*fmt.implicit_end, *exit_markers))
        # For formats whose models quote their call syntax while they think ("The
        # format is <seed:tool_call>..."), a tool-call marker ends reasoning only at
        # the start of a line, where a call would start; mid-sentence it is reasoning.
        self._line_start_only = frozenset(exit_markers) - frozenset(fmt.end) if exit_at_line_start else frozenset()
        # Whether the reasoning emitted so far ends a line (spaces and tabs aside).
        self._at_line_start = True
        # In text: a start opens reasoning, a stray end is a marker. In reasoning: an
        # end (or implicit end) closes it, a repeated start is a marker.
        self._syntax = frozenset(fmt.syntax)
        self._end_of_turn = frozenset(fmt.end_of_turn)
        self._turn_over = False
        stray_ends = () if fmt.prose else fmt.end
        repeated_starts = () if fmt.prose else fmt.start
        self._text_markers = MarkerSet((*fmt.start, *stray_ends, *fmt.syntax))
        self._reasoning_markers = MarkerSet((*repeated_starts, *fmt.end, *self._implicit))
        self._downstream = downstream
        # Text that can start neither a reasoning marker nor a tool-call marker, while
        # the tool parser is idle, is text: one check instead of one per parser.
        self._idle_text_markers = (
            MarkerSet((*fmt.start, *stray_ends, *fmt.syntax, *downstream.start_markers, *downstream.stray_markers))
            if downstream is not None and downstream.start_markers
            else None
        )
        # Hot-path shortcuts (bound methods, no per-token attribute chains). The tool
        # parser's string hot path only where its engine has one: else no call per token.
        self._take_string = (
            downstream.take_string_text
            if downstream is not None
            and type(downstream).take_string_text is not ToolParser.take_string_text
            and downstream.take_string_text_first(self._text_markers.markers)
            else None
        )
        self._text_trigger = self._text_markers.trigger
        self._text_lead = self._text_markers.lead
        self._reasoning_trigger = self._reasoning_markers.trigger
        self._reasoning_lead = self._reasoning_markers.lead
        self._idle_trigger = self._idle_text_markers.trigger if self._idle_text_markers is not None else None
        self._idle_lead = self._idle_text_markers.lead if self._idle_text_markers is not None else ""
        self._quotes = downstream._quotes if downstream is not None else None
        self._quote_pending = self._quotes.pending if self._quotes is not None else None
        self._buf = ""
        # Tool-call markers that end reasoning only through a held, undecided call.
        self._exits = frozenset(exit_markers) - self._ends - self._syntax
        # While a call met inside reasoning is undecided: its raw text so far, and a
        # copy of the tool parser reading it (its events kept until the decision).
        self._held_call = ""
        self._trial: ToolParser | None = None
        self._held_fed = 0  # how much of it the copy has read
        self._held_end = -1  # where the reasoning's end marker after it ends, once met
        self._held_text_after = False  # reasoning text since the copy's last call syntax
        self._held_calls = False  # whether the copy met a call at all
        self._reopens = frozenset((*fmt.start, *fmt.end_of_turn)) - self._ends
        self._held_markers = MarkerSet((*fmt.end, *self._reopens))

    def feed(self, text: str) -> list[ParseEvent]:
        if self._buf or not text or self._turn_over or self._trial is not None:
            if self._turn_over:
                return [Marker(text)] if text else []
            if self._trial is not None:
                events: list[ParseEvent] = []
                self._hold(events, text, final=False)
                return events
        elif self.in_reasoning:
            if self._reasoning_lead not in text or self._reasoning_trigger(text) is None:
                if self._line_start_only:
                    self._note_reasoning(text)
                return [ReasoningDelta(text)]
        else:
            downstream = self._downstream
            if downstream is None:
                if self._text_lead not in text or self._text_trigger(text) is None:
                    return [TextDelta(text)]
            elif downstream._in_region:
                take = self._take_string
                if take is not None:
                    taken = take(text)
                    if taken is not None:
                        return taken  # string text of a call's argument: no marker in it is syntax
                if self._text_lead not in text or self._text_trigger(text) is None:
                    # Inside a tool call (a long argument): no reasoning marker can start here.
                    return downstream.feed(text)
            else:
                idle = self._idle_trigger
                if idle is not None and not downstream._buf and (self._idle_lead not in text or idle(text) is None):
                    pending = self._quote_pending
                    if pending is not None:
                        pending.append(text)  # QuoteContext.note, inlined
                        if len(pending) >= FLUSH_AT:
                            self._quotes.settle()  # type: ignore[union-attr]  # set together with _quote_pending
                    return [TextDelta(text)]
                if self._text_lead not in text or self._text_trigger(text) is None:
                    return downstream.feed(text)
        markers = self._reasoning_markers if self.in_reasoning else self._text_markers
        if not self._buf and not markers.could_start(text):
            if not text:
                return []
            if self.in_reasoning:
                if self._line_start_only:
                    self._note_reasoning(text)
                return [ReasoningDelta(text)]
            return self._downstream.feed(text) if self._downstream else [TextDelta(text)]
        self._buf += text
        events = []
        self._drain(events, final=False)
        return events

    def drop_held(self) -> None:
        """The splitter released what was held back as text (splitter.py)."""
        self._buf = ""
        if self._trial is not None:  # an undecided call, released: reasoning ended at it
            self._trial = None
            self._held_call = ""
        if self._downstream is not None:
            self._downstream.drop_held()

    def finish(self) -> list[ParseEvent]:
        if self._turn_over:
            return []  # everything was reported when the turn ended
        events: list[ParseEvent] = []
        self._drain(events, final=True)
        if self._trial is not None:
            self._hold(events, "", final=True)
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
            if self._line_start_only:
                self._note_reasoning(text)
            events.append(ReasoningDelta(text))
        else:
            self._text(events, text)

    def _note_reasoning(self, text: str) -> None:
        tail = text.rstrip(" \t")
        if tail:
            self._at_line_start = tail[-1] == "\n"

    def _drain(self, events: list[ParseEvent], final: bool) -> None:
        buf = self._buf
        downstream = self._downstream
        while buf:
            markers = self._reasoning_markers if self.in_reasoning else self._text_markers
            match = markers.find(buf)
            if match is None:
                held = 0 if final else markers.held_suffix(buf)
                if final and self.in_reasoning and self.format.special_tokens:
                    cut = markers.held_suffix(buf)
                    if cut and buf[len(buf) - cut :].startswith(self.format.special_tokens):
                        # Cut off inside a marker after its special token: syntax.
                        if cut < len(buf):
                            self._content(events, buf[: len(buf) - cut])
                        events.append(Marker(buf[len(buf) - cut :]))
                        buf = ""
                        break
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
            if marker in self._end_of_turn:
                # The turn is over (an engine stops here): a call still open is cut, and
                # whatever follows is not part of the message.
                if downstream is not None:
                    events.extend(downstream.finish())
                events.append(Marker(marker + buf))
                buf = ""
                self.in_reasoning = False
                self._turn_over = True
                break
            if not self.in_reasoning and downstream is not None:
                if downstream.in_call_region:
                    # Inside a tool call the marker is argument text, not syntax.
                    self._text(events, marker)
                    continue
                events.extend(downstream.release_held())
            if self.in_reasoning and marker in self._line_start_only and not self._at_line_start:
                self._content(events, marker)
                continue
            if self.in_reasoning and marker in self._exits and downstream is not None:
                # A call started inside reasoning: undecided until what follows it shows.
                # The copy has its own call ids: deciding uses none up.
                self._trial = copy.deepcopy(downstream)
                self._held_call = ""
                self._held_fed = 0
                self._held_end = -1
                self._held_text_after = False
                self._buf = ""
                self._hold(events, marker + buf, final=final)
                return
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
                if not self.in_reasoning:
                    self._at_line_start = True
                self.in_reasoning = True
            elif marker in self._ends:
                self.in_reasoning = False
        self._buf = buf

    def _hold(self, events: list[ParseEvent], text: str, final: bool) -> None:
        """Read `text` into the call held inside reasoning (a copy of the tool parser
        reads it), and decide it once what follows shows:
        - the output (or the turn) ends first, a new reasoning block opens, or the
          marker starts no call at all: the reasoning ended at the call marker (models that call without
          closing it; a marker that starts no call is the tool parser's text);
        - the reasoning's end marker comes first, with reasoning text between the
          last call (or call syntax) and it: the call was quoted or planned while
          thinking, and all of it is reasoning;
        - the end marker comes right after the calls: they are real, unless the
          next thing after the marker is a call (the model made the call it had
          planned, so the one inside was its plan).
        A call longer than half the hold-back bound is decided as at the end of
        output; other held text past the bound the splitter releases as text.
        Either way the held text is read again on the decided path, so every
        character lands exactly once."""
        trial = self._trial
        assert trial is not None
        held = self._held_call + text
        self._held_call = held
        if len(held) > trial.max_held // 2 and trial._call is not None:
            # A long call: decided by the old rule well before the hold-back bound
            # (splitter.py), so it streams rather than being released as text.
            self._replay(events, held, real=True, final=final)
            return
        stops = self._held_markers
        while self._held_end < 0:
            start = self._held_fed
            match = stops.find(held, start)
            stop = match.start() if match is not None else len(held) - (0 if final else stops.held_suffix(held, start))
            if stop > start:
                for event in trial.feed(held[start:stop]):
                    if type(event) is TextDelta:
                        if not event.text.isspace():
                            self._held_text_after = True
                    else:
                        self._held_text_after = False
                        if type(event) is ToolCallStart:
                            self._held_calls = True
            self._held_fed = stop
            if match is None:
                if final:
                    self._replay(events, held, real=True, final=True)
                return
            if trial.in_call_region:  # inside a call's arguments: the marker is their text
                self._held_fed = match.end()
                for event in trial.feed(match.group()):
                    if type(event) is not TextDelta:
                        self._held_text_after = False
                continue
            marker = match.group()
            if marker in self._reopens or not self._held_calls or self._held_text_after:
                # A new reasoning block (or the turn's end) after it: this one had ended.
                quoted = self._held_calls and self._held_text_after and marker not in self._reopens
                self._replay(events, held, real=not quoted, final=final)
                return
            self._held_end = match.end()
        after = held[self._held_end :].lstrip()
        if not after and not final:
            return
        if any(m.startswith(after) for m in self._exits) and after and not final:
            return  # may be the start of a call
        quoted = any(after.startswith(m) for m in self._exits)
        self._replay(events, held, real=not quoted, final=final)

    def _replay(self, events: list[ParseEvent], held: str, *, real: bool, final: bool) -> None:
        """Read the held text again: from its call marker on as text for the tool
        parser (`real`: the reasoning ended there), or as reasoning, after the
        marker that can not start a call a second time."""
        self._trial = None
        self._held_call = ""
        marker = max((m for m in self._exits if held.startswith(m)), key=len)
        if real:
            self.in_reasoning = False
            self._text(events, marker)
        else:
            self._content(events, marker)
        self._buf = held[len(marker) :]
        self._drain(events, final)
