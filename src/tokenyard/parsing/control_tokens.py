"""Control tokens a model writes mid-answer: markers, never text.

A model sometimes samples one of its template's control tokens in the middle of an
answer without ending the turn (Qwen2.5's `<|im_start|>` after a fenced call, a
`<|fim_middle|>`...). It is not a stop token, so generation goes on, and its text
must not reach content, reasoning or a call.

Which special tokens are control tokens depends on the family: gpt-oss's
`<|channel|>` or Kimi's `<|tool_call_begin|>` are special tokens too, and they are
the output syntax its parsers read. `syntax_texts` collects what the family's
parsers recognise; `control_texts` is the tokenizer's special tokens minus those.

- Engines that return token ids: the pipeline drops those ids (by id, so the same
  spelling written with ordinary tokens stays text).
- Engines that return only text: `ControlTokenFilter` cuts the control texts out of
  the stream (sans-IO, holding back only what may still grow into one).

Like a stop token, a dropped control token is counted in the usage and reported as
no event: a `Marker` here, outside the parsers' order, could split a reasoning block
in an encoder.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterable, Iterator

from .markers import MarkerSet
from .reasoning.parser import HARMONY_REASONING_NAMES, canonical_reasoning_name, reasoning_format
from .registry import HARMONY_TOOL_NAMES, check_tool_parser_name, tool_parser_class

_PARSING = __name__.rpartition(".")[0]


def _strings(value: object, depth: int = 0) -> Iterator[str]:
    """The marker strings a parser's tables hold: strings, collections of them,
    `MarkerSet`s and small dataclass records of them (a few levels deep)."""
    if isinstance(value, str):
        yield value
    elif depth > 3:
        return
    elif isinstance(value, MarkerSet):
        yield from value.markers
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from _strings(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name), depth + 1)
    elif type(value).__module__.startswith(_PARSING) and hasattr(value, "__dict__"):
        # A parser's syntax record (glm45's `KeyValueSyntax`)
        for item in vars(value).values():
            yield from _strings(item, depth + 1)


def _tables(namespace: dict[str, object]) -> Iterator[str]:
    for name, value in namespace.items():
        if not name.startswith("__"):  # docstrings and module dunders are prose
            yield from _strings(value)


def syntax_texts(reasoning_parser: str | None, tool_parser: str | None) -> frozenset[str]:
    """Every marker string the family's reasoning and tool parsers read (their
    classes' and modules' tables): special tokens in these are output syntax."""
    found: set[str] = set()
    reasoning = canonical_reasoning_name(reasoning_parser) if reasoning_parser else ""
    tool = check_tool_parser_name(tool_parser) if tool_parser else ""
    if reasoning in HARMONY_REASONING_NAMES or tool in HARMONY_TOOL_NAMES:
        from . import harmony

        found.update(_tables(vars(harmony)))
    else:
        if reasoning:
            found.update(_strings(reasoning_format(reasoning)))
        if tool:
            for cls in tool_parser_class(tool).__mro__:
                found.update(_tables(dict(vars(cls))))
                module = sys.modules.get(cls.__module__)
                # A module's tables belong to the classes it defines by name; a
                # format built from a row of tools/formats.py carries all it reads.
                if module is not None and cls.__module__.startswith(_PARSING) and vars(module).get(cls.__name__) is cls:
                    found.update(_tables(vars(module)))
    return frozenset(s for s in found if s)


def control_texts(special: Iterable[str], syntax: Iterable[str]) -> frozenset[str]:
    """The special tokens that are no part of the output syntax (`syntax_texts`):
    a special token's text found inside a syntax string is syntax."""
    joined = "\x00".join(syntax)  # one substring search per token
    return frozenset(t for t in special if t and t not in joined)


class ControlTexts:
    """The control tokens' texts, compiled once for `ControlTokenFilter`: a regex of
    the literal texts, and every proper prefix (what a stream must hold back). A
    family has up to ~1,300 of them (reserved tokens), which a `MarkerSet` (built for
    a few markers) takes seconds to compile."""

    __slots__ = ("find", "prefixes", "hold")

    def __init__(self, texts: Iterable[str]):
        unique = sorted({t for t in texts if t}, key=len, reverse=True)
        if not unique:
            raise ValueError("no control token texts")
        self.find = re.compile("|".join(map(re.escape, unique))).search
        self.prefixes = frozenset(t[:i] for t in unique for i in range(1, len(t)))
        self.hold = max(map(len, unique)) - 1


class ControlTokenFilter:
    """Text in, text out with every control token cut (None: nothing to cut). It holds
    back only a suffix that may still grow into one; `final` releases it."""

    __slots__ = ("_texts", "_buf")

    def __init__(self, texts: ControlTexts | None):
        self._texts = texts
        self._buf = ""

    def feed(self, text: str, final: bool = False) -> str:
        texts = self._texts
        if texts is None:
            return text
        buf = self._buf + text
        kept: list[str] = []
        pos = 0
        while (match := texts.find(buf, pos)) is not None:
            kept.append(buf[pos : match.start()])
            pos = match.end()
        held = 0
        if not final:
            prefixes = texts.prefixes
            for size in range(min(texts.hold, len(buf) - pos), 0, -1):
                if buf[-size:] in prefixes:
                    held = size
                    break
        kept.append(buf[pos : len(buf) - held])
        self._buf = buf[len(buf) - held :]
        return "".join(kept)
