"""Marker-delimited reasoning, for every family that brackets its thinking.

Families differ only in data (their markers, whether output starts inside
reasoning, which markers end reasoning without being consumed), so one parser
serves them all; `REASONING_FORMATS` is the table of REFERENCE §1. gpt-oss's
harmony channels are a different shape and live in `parsing/harmony.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...events import Marker, ParseEvent, ReasoningDelta, TextDelta
from ..markers import MarkerSet
from ..tools.base import ToolParser
from ..tools.quoting import FLUSH_AT


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
    # Special tokens that only ever begin a marker: reasoning that ends, at the end of
    # output, in a cut-off marker starting with one ends in a marker, not reasoning.
    special_tokens: tuple[str, ...] = ()
    # The markers are ordinary prose, not control tokens: a start inside reasoning
    # or an end outside it is text the model wrote, kept as written.
    prose: bool = False
    # End-of-turn tokens (the engine stops at them; each must also be in `end` and
    # `syntax`): what follows one is not part of the message, so it is reported as
    # markers, never reasoning, content or calls.
    end_of_turn: tuple[str, ...] = ()


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
    ReasoningFormat("deepseek_v41", *_THINK, implicit_end=("<｜DSML｜ calls>", "<｜DSML｜ invoke name=")),
    # Apertus thinks in its `inner` block; a tool call may start inside it.
    ReasoningFormat("apertus", ("<|inner_prefix|>",), ("<|inner_suffix|>",), aliases=("apertus2509",)),
    # Cohere Command: the template opens the thinking block; a plain answer comes in
    # a text block (`<|START_RESPONSE|>` in Command A, `<|START_TEXT|>` in Command 4),
    # calls in an action block.
    ReasoningFormat(
        "cohere_command",
        ("<|START_THINKING|>",),
        ("<|END_THINKING|>",),
        force=True,
        implicit_end=("<|START_RESPONSE|>", "<|START_TEXT|>", "<|START_ACTION|>"),
        aliases=("cohere_command3", "cohere_command4"),
        syntax=("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>"),
    ),
    # ERNIE 4.5 Thinking starts inside reasoning; an answer may come in `<response>` tags.
    ReasoningFormat("ernie45", *_THINK, force=True, implicit_end=("<response>",), syntax=("<response>", "</response>")),
    # Hunyuan-A13B answers in `<answer>` tags after its reasoning.
    ReasoningFormat("hunyuan_a13b", *_THINK, implicit_end=("<answer>",), syntax=("<answer>", "</answer>")),
    # Hunyuan HY3/HY4: `<think>` spelled with or without the checkpoint's token suffix;
    # the template opens it for reasoning_effort low/high.
    ReasoningFormat(
        "hy_v3",
        ("<think>", "<think:opensource>"),
        ("</think>", "</think:opensource>"),
        implicit_end=("<tool_calls>", "<tool_calls:opensource>"),
        aliases=("hy_v4", "hunyuan"),
    ),
    # K2 Horizon: one pair of think tokens per reasoning effort.
    ReasoningFormat(
        "k2_horizon",
        ("<ifm|think>", "<ifm|think_fast>", "<ifm|think_faster>"),
        ("</ifm|think>", "</ifm|think_fast>", "</ifm|think_faster>"),
        force=True,
        implicit_end=("<ifm|tool_calls>",),
    ),
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
        # The think close is also read without its separator (the model left it out).
        ("<|close|>think<|sep|>", "<|close|>think"),
        force=True,
        implicit_end=("<|open|>response<|sep|>", "<|open|>tools<|sep|>"),
        syntax=("<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>"),
        special_tokens=("<|open|>", "<|close|>"),
    ),
    ReasoningFormat("minimax_m2", *_THINK, force=True, implicit_end=("<minimax:tool_call>",)),
    ReasoningFormat("minimax_append_think", *_THINK, force=True),
    # MiniMax M3: the template opens `<mm:think>` itself when thinking_mode is
    # "enabled" (the prompt then ends inside reasoning); otherwise the model writes
    # it, or begins with a bare `</mm:think>`.
    ReasoningFormat("minimax_m3", ("<mm:think>",), ("</mm:think>",), implicit_end=("]<]minimax[>[<tool_call>",)),
    ReasoningFormat("seed_oss", ("<seed:think>",), ("</seed:think>",), implicit_end=("<seed:tool_call>",)),
    # Inkling's thinking is one kind of its typed blocks; `<|end_message|>` ends every
    # kind (the inkling tool parser owns the other blocks' framing).
    ReasoningFormat("inkling", ("<|content_thinking|>",), ("<|end_message|>", "<|content_model_end_sampling|>")),
    # Step-3.5's template always ends the prompt with `<think>\n`.
    ReasoningFormat("step3p5", *_THINK, force=True),
    # Solar Open 2: the generation prompt always opens `<|think:start|>` (and closes it
    # too for reasoning_effort low); a call may begin inside reasoning.
    ReasoningFormat(
        "solar_open2",
        ("<|think:start|>",),
        ("<|think:end|>",),
        force=True,
        implicit_end=("<|tool_call:start|>",),
    ),
    # Muse Glimmer: channel-scoped messages; `to=self` is reasoning, `to=user` the
    # answer, the framing tokens syntax (the tool channel belongs to muse_glimmer's
    # tool parser). Headers are matched from `to=`, not the space before it, so
    # ordinary prose seldom takes the marker path. A channel may open without its
    # role (`<|start|>to=self`) or its recipient (`<|start|><|message|>`: the user's).
    ReasoningFormat(
        "muse_glimmer",
        ("to=self<|message|>",),
        ("<|eom|>", "<|eot|>"),
        syntax=("<|start|>assistant", "<|start|><|message|>", "<|start|>", "to=user<|message|>", "<|eot|>", "<|eom|>"),
        aliases=("muse",),
    ),
    # OLMo 3 Think: the generation prompt opens `<think>`.
    ReasoningFormat("olmo3", *_THINK, force=True),
    # PLaMo 3: thinking from the first token (unless off); the end-of-turn token is
    # syntax, never content, and ends reasoning it interrupts and the turn.
    ReasoningFormat(
        "plamo3",
        ("<|plamo:begin_think:plamo|>",),
        ("<|plamo:end_think:plamo|>", "<|plamo:tag|>"),
        force=True,
        syntax=("<|plamo:tag|>",),
        end_of_turn=("<|plamo:tag|>",),
    ),
    # Ling 3 and Spark 2.5: the generation prompt opens `<think>` unless thinking is off.
    ReasoningFormat("ling3", *_THINK, force=True),
    ReasoningFormat("spark25", *_THINK, force=True),
    # MiMo reads as thinking from its first token (vLLM and SGLang alike) unless
    # thinking is off; a `<think>` it writes itself is syntax.
    ReasoningFormat("mimo", *_THINK, force=True),
    ReasoningFormat("mistral", ("[THINK]",), ("[/THINK]",), force=True, aliases=("magistral",)),
    ReasoningFormat(
        "granite",
        ("Here's my thought process:", "Here is my thought process:"),
        ("Here's my response:", "Here is my response:"),
        prose=True,
    ),
    # The longer start markers swallow gemma's `thought` channel label, with or
    # without its newline (an empty thought channel has none).
    ReasoningFormat("gemma4", ("<|channel>thought\n", "<|channel>thought", "<|channel>"), ("<channel|>",)),
)

_BY_NAME = {name: fmt for fmt in REASONING_FORMATS for name in (fmt.name, *fmt.aliases)}

# Not a marker format: gpt-oss reasoning is a harmony channel (parsing/harmony.py).
HARMONY_REASONING_NAMES = ("gpt_oss", "harmony")


# Formats registered at start-up from `--reasoning-parser-plugin module:Class`.
_PLUGIN_FORMATS: dict[str, ReasoningFormat] = {}


def canonical_reasoning_name(name: str) -> str:
    """Our name for a reasoning parser name users type (ours, a kebab or squashed
    spelling, or vLLM's/SGLang's/Dynamo's); `UnknownParserError` otherwise."""
    from ..peer_names import PEER_REASONING_MAPPING
    from ..registry import resolve_name

    return resolve_name(
        "reasoning", name, reasoning_parser_names(), PEER_REASONING_MAPPING, "--reasoning-parser-plugin"
    )


def reasoning_format(name: str) -> ReasoningFormat:
    """Look a reasoning format up by any name users type (case-insensitive)."""
    key = canonical_reasoning_name(name)
    if key in HARMONY_REASONING_NAMES:
        raise ValueError("gpt-oss reasoning is a harmony channel: parsed by parsing.harmony.HarmonyParser")
    return _PLUGIN_FORMATS.get(key) or _BY_NAME[key]


def reasoning_parser_names() -> list[str]:
    return sorted([*_BY_NAME, *_PLUGIN_FORMATS, *HARMONY_REASONING_NAMES])


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
    `exit_markers`: tool-call start markers; met inside reasoning they end it and
    are passed on, unconsumed, as text for the tool parser (with
    `exit_at_line_start`, only at the start of a line).
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
        # Hot-path shortcuts (bound methods, no per-token attribute chains).
        self._text_trigger = self._text_markers.trigger
        self._reasoning_trigger = self._reasoning_markers.trigger
        self._idle_trigger = self._idle_text_markers.trigger if self._idle_text_markers is not None else None
        self._quotes = downstream._quotes if downstream is not None else None
        self._quote_pending = self._quotes.pending if self._quotes is not None else None
        self._buf = ""

    def feed(self, text: str) -> list[ParseEvent]:
        if self._buf or not text or self._turn_over:
            if self._turn_over:
                return [Marker(text)] if text else []
        elif self.in_reasoning:
            if self._reasoning_trigger(text) is None:
                if self._line_start_only:
                    self._note_reasoning(text)
                return [ReasoningDelta(text)]
        else:
            downstream = self._downstream
            if downstream is None:
                if self._text_trigger(text) is None:
                    return [TextDelta(text)]
            elif downstream._in_region:
                taken = downstream.take_string_text(text)
                if taken is not None:
                    return taken  # string text of a call's argument: no marker in it is syntax
                if self._text_trigger(text) is None:
                    # Inside a tool call (a long argument): no reasoning marker can start here.
                    return downstream.feed(text)
            else:
                idle = self._idle_trigger
                if idle is not None and not downstream._buf and idle(text) is None:
                    pending = self._quote_pending
                    if pending is not None:
                        pending.append(text)  # QuoteContext.note, inlined
                        if len(pending) >= FLUSH_AT:
                            self._quotes.settle()  # type: ignore[union-attr]  # set together with _quote_pending
                    return [TextDelta(text)]
                if self._text_trigger(text) is None:
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
        events: list[ParseEvent] = []
        self._drain(events, final=False)
        return events

    def finish(self) -> list[ParseEvent]:
        if self._turn_over:
            return []  # everything was reported when the turn ended
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
