"""Swiss AI Apertus (`apertus`; SGLang's `apertus2509`): a JSON list of
single-key objects, the key naming the function and its value the arguments,
between special tokens:

    <|tools_prefix|>[{"get_weather": {"city": "Tokyo", "days": 3}}, {"get_time": {}}]<|tools_suffix|>

The list machinery is json_call_list.py's; `_NamedCallReader` reads the
`{"NAME": {...}}` objects (the arguments stream as the model writes them).
"""

from __future__ import annotations

from ..json_stream import JsonStreamError, JsonValueScanner
from .base import BadCallSyntax, JsonCallReader, NotACall, ToolParser, is_function_name, json_string
from .json_call_list import JsonCallListConfig, JsonCallListParser

# States.
_OPEN, _KEY_START, _KEY, _COLON, _ARGS_START, _ARGS, _CLOSE = range(7)
_SPACE = " \t\r\n"


class _NamedCallReader(JsonCallReader):
    """Streams one `{"NAME": {arguments}}` object; the same contract as
    `JsonCallReader` (`feed` returns the index past the closing brace, or -1)."""

    def __init__(self, owner: ToolParser, raw_prefix: str = ""):
        super().__init__(owner, raw_prefix)
        self._step = _OPEN
        self._key_text: list[str] = []
        self._name = ""

    @property
    def arguments_complete(self) -> bool:
        return self._step == _CLOSE

    def feed(self, text: str) -> int:
        owner = self._owner
        i, n = 0, len(text)
        segment = 0  # start of the raw not yet attributed
        try:
            while i < n:
                step = self._step
                if step == _KEY or step == _ARGS:
                    scanner = self._scanner
                    assert scanner is not None
                    out, end = scanner.feed(text[i:] if i else text)
                    if step == _ARGS:
                        owner._stream_args(out)
                    else:
                        self._key_text.append(out)
                    if end < 0:
                        i = n
                        break
                    i += end
                    if step == _ARGS:
                        self._step = _CLOSE
                        continue
                    name = json_string("".join(self._key_text))
                    if name is None or not is_function_name(name) or not owner._accepts_call_name(name):
                        raise NotACall(i - 1)
                    self._name = name
                    self._step = _COLON
                    continue
                c = text[i]
                if c in _SPACE:
                    i += 1
                    continue
                if step == _OPEN:
                    if c != "{":
                        raise NotACall(i)
                    self._step = _KEY_START
                elif step == _KEY_START:
                    if c != '"':
                        raise NotACall(i)
                    self._scanner = JsonValueScanner()
                    self._step = _KEY
                    continue  # the scanner reads the opening quote
                elif step == _COLON:
                    if c != ":":
                        raise NotACall(i)
                    # The name is known: the call is real from here.
                    self.pre_raw.append(text[segment : i + 1])
                    segment = i + 1
                    owner._open_call(self._name, "".join(self.pre_raw))
                    self.pre_raw = []
                    self.started = True
                    self._step = _ARGS_START
                elif step == _ARGS_START:
                    if c != "{":  # the arguments must be an object
                        raise BadCallSyntax(i)
                    self._scanner = JsonValueScanner()
                    self._step = _ARGS
                    continue
                elif step == _CLOSE:
                    if c != "}":
                        raise BadCallSyntax(i)
                    owner._raw(text[segment : i + 1])
                    return i + 1
                i += 1
        except JsonStreamError as error:
            if self.started:
                owner._stream_args(error.valid)
            raise self._broken(error, text, segment, i) from error
        except (NotACall, BadCallSyntax) as error:
            self._pass_on(error, text, segment)
        return self._read_all(text, segment)


class ApertusToolParser(JsonCallListParser):
    name = "apertus"
    aliases = ("apertus2509",)
    config = JsonCallListConfig(start_markers=("<|tools_prefix|>",), close_tag="<|tools_suffix|>")
    reader = _NamedCallReader
