"""Qwen3-Coder / Qwen3.5 / Nemotron Nano:

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Tokyo
    </parameter>
    </function>
    </tool_call>

Known failure shapes handled: the opening `<tool_call>` missing (the call starts at
`<function=`), a missing `</function>` (`</tool_call>` ends the call), a missing
`</parameter>` before a line that opens another of the tool's parameters. Otherwise a
value ends only at its own `</parameter>`, so markers inside it stay in it; a value
that never closes runs to the end of output and the call is never dispatched.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ..markers import MarkerSet
from .base import ToolParser, split_before
from .xml_args import ArgumentsBuilder

_FUNCTION = re.compile(r"\s*<function=([^>\n]{1,256})>")
_FUNCTION_PREFIX = re.compile(r"\s*(?:<(?:f(?:u(?:n(?:c(?:t(?:i(?:o(?:n(?:=[^>\n]{0,256})?)?)?)?)?)?)?)?)?)?\Z")
_PARAMETER = re.compile(r"<parameter=([^>\n]{1,256})>")


def _section_markers(section_close: str) -> tuple[MarkerSet, MarkerSet]:
    """What ends a call body, and what may end a parameter value, given the section's
    closing tag. A value ends at its own `</parameter>`: any other tag inside it
    (`</tool_call>`, `<parameter=x>` in a file the model writes) is the value's text,
    except a line starting `<parameter=NAME>` for a parameter of the tool not given
    yet (a model that left out `</parameter>`; vLLM's and SGLang's tests)."""
    return (
        MarkerSet(["<parameter=", "</function>", section_close]),
        MarkerSet(["</parameter>", "\n<parameter="]),
    )


_SECTION, _FUNCTION_HEAD, _BODY, _VALUE, _AFTER_CALL = range(5)


class Qwen3CoderToolParser(ToolParser):
    name = "qwen3_coder"
    aliases: ClassVar[tuple[str, ...]] = ("nemotron_nano", "qwen3_xml")
    # Families that share this grammar under other section tags (seed_oss) override
    # these two and the marker tuples built from them.
    section_open: ClassVar[str] = "<tool_call>"
    section_close: ClassVar[str] = "</tool_call>"
    # Drop a value's closing newline only where its opening one was (xml_args.py).
    paired_newlines: ClassVar[bool] = False
    start_markers = (section_open, "<function=")
    # Inside reasoning, `<function=` is too often prose about code to end it.
    reasoning_exit_markers = (section_open,)
    # Drop one newline right inside the parameter tags (the template writes them).
    strip_value_newline: ClassVar[bool] = True
    _body_markers, _value_end = _section_markers(section_close)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._body_markers, cls._value_end = _section_markers(cls.section_close)

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
            if match is not None and self._valid_name(match.group(1)):
                name = match.group(1).strip()
                self._open_call(name, self._pending + match.group())
                self._pending = ""
                self._call_tool = self._tool(name)
                self._given: set[str] = set()
                self._arguments = ArgumentsBuilder(
                    self, self._call_tool, strip_newline=self.strip_value_newline, paired_newlines=self.paired_newlines
                )
                self._state = _BODY
                return match.end()
            if match is None and _FUNCTION_PREFIX.match(buf) and not final:
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
            self._raw(buf[:end])
            self._arguments.text(buf[:end])
            if match is None:
                if final:
                    self._arguments.end()
                    self._arguments.close()
                    self._fail_call("truncated")
                    self._exit_region()
                return end
            if match.group() != "</parameter>":
                return self._parameter_tag_in_value(buf, end, final)
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

    def _parameter_tag_in_value(self, buf: str, at: int, final: bool) -> int:
        """`buf[at:]` starts with a newline and `<parameter=` inside a value: the next
        parameter when it names one of the tool's that is not given yet (this value
        then ends before the newline), else the value's own text."""
        param = _PARAMETER.match(buf, at + 1)
        if param is None:
            if not final and len(buf) - at < 270 and "\n" not in buf[at + 1 :]:
                return at  # the tag is not complete yet
            end = at + len("\n<parameter=")
        else:
            name = param.group(1).strip()
            tool = self._call_tool
            props = tool.parameters.get("properties") if tool is not None else None
            if isinstance(props, dict) and name in props and name not in self._given:
                self._arguments.end()
                self._state = _BODY
                return at + self._parse_region(buf[at:], final)
            end = param.end()
        self._raw(buf[at:end])
        self._arguments.text(buf[at:end])
        return end

    def _valid_name(self, name: str) -> bool:
        from .base import is_function_name

        return is_function_name(name.strip())

    def _consume_text_char(self, buf: str) -> int:
        # Without `<tool_call>` the region began at `<function=` itself; emit that
        # character as text so the scan moves past it.
        self._text(buf[0])
        return 1
