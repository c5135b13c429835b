"""Qwen3-Coder / Qwen3.5 / Nemotron Nano:

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Tokyo
    </parameter>
    </function>
    </tool_call>

Known failure shapes handled: the opening `<tool_call>` missing (the call starts at
`<function=`, to a declared tool: a bare tag is only weakly marked), a missing
`</function>` (`</tool_call>` ends the call), a missing `</parameter>` before the tag
of a declared parameter the call has not given yet, or before a `</function>` /
`</tool_call>` that ends the output. Otherwise a value ends only at its own
`</parameter>`, and only where call syntax (another parameter's tag, `</function>`,
`</tool_call>`) or the end of the output follows it, so markers inside it (a file of
parser fixtures, a `</parameter>` line included) stay in it; a value that never
closes runs to the end of output and the call is never dispatched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..markers import MarkerSet
from .base import FUNCTION_NAME, FormatConfig, ToolParser, split_before
from .xml_args import ArgumentsBuilder

_FUNCTION = re.compile(r"\s*<function=([^>\n]{1,256})>")
_FUNCTION_PREFIX = re.compile(r"\s*(?:<(?:f(?:u(?:n(?:c(?:t(?:i(?:o(?:n(?:=[^>\n]{0,256})?)?)?)?)?)?)?)?)?)?\Z")
_PARAMETER = re.compile(r"<parameter=([^>\n]{1,256})>")
# Tags a model misspells (Step-3.5: `<function bash>`, `<functionbash>`, a `>` left
# out before the line break, `<parameter=parameter=x>`), read only where the name is
# one the request declared (`lenient_tags`).
_LENIENT_FUNCTION = re.compile(rf"\s*<function(?:=|\s+)?({FUNCTION_NAME})(?:>|\n)")
_LENIENT_FUNCTION_PREFIX = re.compile(
    r"\s*(?:<(?:f(?:u(?:n(?:c(?:t(?:i(?:o(?:n(?:(?:=|\s+)?[\w.\-:/]{0,256})?)?)?)?)?)?)?)?)?)?\Z"
)
_LENIENT_PARAMETER = re.compile(r"<parameter=(?:parameter=)?([\w\-][\w.\-]{0,255})(?:>|\n)")
# A value's closing tag the model misspelt (`</parameter1>`, `</parameter_function>`,
# `</parameter` without its `>`): where the next parameter's tag follows it, it is the
# close, not the value's text (SGLang's drifted-end-marker tests).
_DRIFTED_CLOSE = re.compile(r"</parameter[\w\-]{0,32}>?\s{0,8}")


def _section_markers(section_close: str) -> tuple[MarkerSet, MarkerSet]:
    """What ends a call body, and what ends a parameter value, given the section's
    closing tag. A value ends at its own `</parameter>`, or (the model left that out)
    where the tag of a declared parameter the call has not given yet begins, or at a
    `</function>` / section close that nothing but the end of the output follows; any
    other tag inside it (`</tool_call>`, `<parameter=x>` in a file the model writes) is
    the value's text."""
    return (
        MarkerSet(["<parameter=", "</function>", section_close]),
        MarkerSet(["</parameter>", "<parameter=", "</function>", section_close]),
    )


_SECTION, _FUNCTION_HEAD, _BODY, _VALUE, _AFTER_CALL = range(5)


@dataclass(frozen=True)
class Qwen3CoderConfig(FormatConfig):
    """A `<function=…><parameter=…>` format; the defaults are Qwen3-Coder's own."""

    section_open: str = "<tool_call>"
    section_close: str = "</tool_call>"
    start_markers: tuple[str, ...] = ("<tool_call>", "<function=")
    # Inside reasoning, `<function=` is too often prose about code to end it.
    reasoning_exit_markers: tuple[str, ...] | None = ("<tool_call>",)
    # Drop one newline right inside the parameter tags (the template writes them).
    strip_value_newline: bool = True
    # Drop a value's closing newline only where its opening one was dropped (Seed-OSS
    # writes values inline, so a value's own trailing newline is its text).
    paired_newlines: bool = False
    # Read misspelt tags (`<function bash>`, a `>` or a `</parameter>` left out)
    # where they name a declared tool or parameter; a value then also ends at the
    # tag of a declared parameter the call has not passed yet (Step-3.5).
    lenient_tags: bool = False


class Qwen3CoderToolParser(ToolParser):
    name = "qwen3_coder"
    aliases = ("nemotron_nano", "qwen3_xml")
    # Formats that share this grammar under other tags (seed_oss) are rows of
    # formats.py with a config of their own.
    config: ClassVar[Qwen3CoderConfig] = Qwen3CoderConfig()
    section_open: ClassVar[str]
    section_close: ClassVar[str]
    strip_value_newline: ClassVar[bool]
    paired_newlines: ClassVar[bool]
    lenient_tags: ClassVar[bool]
    _body_markers, _value_end = _section_markers(config.section_close)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._body_markers, cls._value_end = _section_markers(cls.section_close)
        if cls.lenient_tags:
            # A value may also end where the next declared parameter's tag begins, or
            # at the call's or section's closing tag that ends the output.
            cls._value_end = MarkerSet(["</parameter>", "<parameter=", "</function>", cls.section_close])

    def _enter_region(self, marker: str) -> None:
        self._state = _SECTION
        self._pending = ""  # raw read before the call could be announced
        self._in_section = False

    def _parse_region(self, buf: str, final: bool) -> int:
        state = self._state
        if state == _SECTION:
            self._in_section = buf.startswith(self.section_open)
            if self._in_section:
                self._pending = self.section_open
                self._state = _FUNCTION_HEAD
                return len(self.section_open)
            self._state = _FUNCTION_HEAD
            return self._parse_region(buf, final)
        if state == _FUNCTION_HEAD:
            match = _FUNCTION.match(buf)
            if match is None and self.lenient_tags:
                match = _LENIENT_FUNCTION.match(buf)
                if match is not None and (self.tools is None or match.group(1) not in self.tools):
                    match = None
            if (
                match is not None
                and not self._in_section
                and self.tools is not None
                and match.group(1).strip() not in self.tools
            ):
                # A bare `<function=` (no `<tool_call>` before it) is only weakly marked:
                # it starts a call only to a tool the request declared.
                match = None
            if match is not None and self._valid_name(match.group(1)):
                name = match.group(1).strip()
                self._open_call(name, self._pending + match.group())
                self._pending = ""
                self._arguments = ArgumentsBuilder(
                    self, self._tool(name), strip_newline=self.strip_value_newline, paired_newlines=self.paired_newlines
                )
                self._given: set[str] = set()
                self._state = _BODY
                return match.end()
            prefix = _LENIENT_FUNCTION_PREFIX if self.lenient_tags else _FUNCTION_PREFIX
            if match is None and prefix.match(buf) and not final:
                return 0
            # Not a call after all: what was read is text.
            self._text(self._pending)
            self._pending = ""
            self._exit_region()
            return 0 if self._in_section or not buf else self._consume_text_char(buf)
        if state == _BODY:
            end, match = split_before(buf, self._body_markers, final)
            if match is None:
                self._raw(buf[:end])
                if final:  # every parameter so far closed
                    self._arguments.close()
                    self._close_at_end_of_output()
                    self._exit_region()
                return end
            self._raw(buf[: match.start()])
            marker = match.group()
            if marker == "<parameter=":
                param = _PARAMETER.match(buf, match.start())
                if param is None and self.lenient_tags:
                    param = self._lenient_parameter(buf, match.start())
                if param is None:
                    if not final and len(buf) - match.start() < 270 and "\n" not in buf[match.start() :]:
                        return match.start()
                    self._raw(buf[match.start() : match.end()])
                    return match.end()
                self._raw(param.group())
                self._given.add(param.group(1).strip())
                self._arguments.begin(param.group(1).strip())
                self._state = _VALUE
                return param.end()
            self._arguments.close()
            self._close_call(marker if marker == "</function>" else "")
            if marker == self.section_close:
                self._marker(marker)
                self._exit_region()
            else:
                self._state = _AFTER_CALL
            return match.end()
        if state == _VALUE:
            end, match = split_before(buf, self._value_end, final)
            if match is not None and match.group() in ("</function>", self.section_close):
                # Step-3.5 closing the call with `</parameter>` left out: only where
                # nothing but the end of the output follows.
                rest = buf[match.end() :].lstrip()
                if match.group() == "</function>":
                    # `</function>` then the section's close, then the end, ends it too.
                    if rest.startswith(self.section_close):
                        rest = rest[len(self.section_close) :].lstrip()
                    elif not final and self.section_close.startswith(rest):
                        rest = ""  # may still grow into the section's close: wait
                ends = final and not rest
                if not ends and not final and not rest:
                    self._raw(buf[:end])
                    self._arguments.text(buf[:end])
                    return end
                if not ends:
                    self._raw(buf[: match.end()])
                    self._arguments.text(buf[: match.end()])
                    return match.end()
                self._raw(buf[:end])
                self._arguments.text(buf[:end])
                self._arguments.end()
                self._state = _BODY
                return end if end else self._parse_region(buf, final)
            if match is not None and match.group() == "<parameter=":
                follows = self._next_parameter(buf, end, final)
                drift = _drifted_close(buf, end) if "</parameter" in buf else None
                if follows is not True:
                    # Undecided (None: wait, holding a misspelt close before the tag),
                    # or a tag the value itself holds (False).
                    stop = match.end() if follows is False else end if drift is None else drift
                    self._raw(buf[:stop])
                    self._arguments.text(buf[:stop])
                    return stop
                # The model left this value's `</parameter>` out, or misspelt it: the
                # next declared parameter's tag ends it.
                self._raw(buf[:end])
                self._arguments.text(buf[: end if drift is None else drift])
                self._arguments.end()
                self._state = _BODY
                return end if end else self._parse_region(buf, final)
            if match is None and not final and "</parameter" in buf:
                # A misspelt close may end the value once the next tag shows: hold it.
                drift = _drifted_close(buf, end)
                end = end if drift is None else drift
            self._raw(buf[:end])
            self._arguments.text(buf[:end])
            if match is None:
                if final:
                    self._arguments.end()
                    self._arguments.close()
                    self._fail_call("truncated")
                    self._exit_region()
                return end
            closes = self._closes_value(buf, match.end(), final)
            if closes is None:
                return end  # what follows the tag decides: wait for it
            if not closes:
                # A `</parameter>` the value itself holds (a file of parser fixtures).
                self._raw(match.group())
                self._arguments.text(match.group())
                return match.end()
            self._arguments.end()
            self._state = _BODY
            self._raw(match.group())
            return match.end()
        # _AFTER_CALL: the section closes, or another function follows in it.
        stripped = buf.lstrip()
        lead = len(buf) - len(stripped)
        close = self.section_close
        if stripped.startswith(close):
            self._marker(buf[: lead + len(close)])
            self._exit_region()
            return lead + len(close)
        if stripped.startswith("<function="):
            self._marker(buf[:lead])
            self._state = _FUNCTION_HEAD
            return lead if lead else self._parse_region(buf, final)
        if not final and (not stripped or close.startswith(stripped) or "<function=".startswith(stripped)):
            return 0
        self._marker(buf[:lead])
        self._exit_region()
        return lead

    def _closes_value(self, buf: str, at: int, final: bool) -> bool | None:
        """Whether the `</parameter>` ending at `at` closes the value: only where call
        syntax (another parameter's tag, `</function>`, the section's close) or the end
        of the output follows it; before anything else it is the value's own text (None
        while what follows is still unknown)."""
        rest = buf[at:].lstrip()
        if not rest:
            return True if final else None
        for tag in ("</function>", self.section_close):
            if rest.startswith(tag):
                return True
            if not final and tag.startswith(rest):
                return None
        if rest.startswith("<parameter="):
            # Any parameter the call has not given yet, declared or not (a model may
            # pass one the schema lacks: the client's validation reports it).
            return self._next_parameter(buf, len(buf) - len(rest), final, undeclared=True)
        return None if not final and "<parameter=".startswith(rest) else False

    def _next_parameter(self, buf: str, at: int, final: bool, *, undeclared: bool = False) -> bool | None:
        """Whether the `<parameter=` at `at`, inside a value, is the tag of a declared
        parameter (with `undeclared`, of any parameter) this call has not passed yet
        (None while that is unknown)."""
        param = _PARAMETER.match(buf, at) or self._lenient_parameter(buf, at)
        if param is None:
            rest = buf[at : at + 270]
            return None if not final and len(rest) < 270 and ">" not in rest and "\n" not in rest else False
        name = param.group(1).strip()
        return (undeclared or self._declares(name)) and name not in self._given

    def _declares(self, parameter: str) -> bool:
        spec = self._tool(self._call.name) if self._call is not None else None
        properties = (spec.parameters or {}).get("properties") if spec is not None else None
        return isinstance(properties, dict) and parameter in properties

    def _lenient_parameter(self, buf: str, at: int) -> re.Match[str] | None:
        """A misspelled parameter tag at `at` that names a declared parameter."""
        param = _LENIENT_PARAMETER.match(buf, at)
        return param if param is not None and self._declares(param.group(1)) else None

    def _valid_name(self, name: str) -> bool:
        from .base import is_function_name

        return is_function_name(name.strip())

    def _consume_text_char(self, buf: str) -> int:
        # Without `<tool_call>` the region began at `<function=` itself; emit that
        # character as text so the scan moves past it.
        self._text(buf[0])
        return 1


def _drifted_close(buf: str, end: int) -> int | None:
    """Where a misspelt closing tag that runs up to `end` begins (None: there is none)."""
    at = buf.rfind("</parameter", 0, end)
    if at < 0:
        return None
    found = _DRIFTED_CLOSE.match(buf, at, end)
    return at if found is not None and found.end() == end else None
