"""Pythonic calls (Llama 4, and others prompted to answer in Python call syntax):

    [get_weather(city="Tokyo", days=3), get_time(zone='Asia/Tokyo')]
    <|python_start|>[get_weather(city="Tokyo", days=3)]<|python_end|>

Keyword arguments are Python literals (strings, numbers, True/False/None, lists,
tuples, sets, dicts, f-strings without placeholders, `**{...}` unpacked into
keywords; JSON's true/false/null too, which LFM2's and OLMo 3's
templates write inside values) and become the JSON arguments. A call is announced once its name
and `(` are read; its arguments come as one delta when its closing `)` is parsed,
since only the complete call syntax can be converted, and it is ready there. `[`,
`,`, `]` and the optional wrapper are Markers. Text that merely starts with `[`
(`[1, 2]`, `[see docs](url)`, `[x] done`) stays text.
"""

from __future__ import annotations

import ast
import io
import json
import keyword
import re
import tokenize
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

from ..patterns import always_match
from .base import FormatConfig, JsonCallReader, is_function_name, starts_with
from .call_list import CallListParser

_PYTHON_START = "<|python_start|>"
_PYTHON_END = "<|python_end|>"
# Names as the APIs allow them (a digit or `-` may begin one: `2fa_verify`).
_NAME_START = re.compile(r"[\w\-]").match
_NAME_RUN = always_match(r"[\w.\-]*")
# Inside a call: runs of characters that neither quote nor bracket anything.
_CODE_RUN = always_match(r"[^'\"()\[\]{}]*")
_STRING_RUN = {
    "'": always_match(r"[^'\\]*"),
    '"': always_match(r'[^"\\]*'),
    "'''": always_match(r"[^'\\]*"),
    '"""': always_match(r'[^"\\]*'),
}
_CLOSERS = {"(": ")", "[": "]", "{": "}"}

_MARKER, _WRAPPED, _ITEM, _NAME, _ARGS, _AFTER_CALL, _END_TAG, _JSON = range(8)


@dataclass(frozen=True)
class PythonicConfig(FormatConfig):
    """A pythonic call-list format; the defaults are Llama 4's own."""

    # The special tokens some families wrap the list in (LFM2, OLMo 3 have their own).
    wrapper_open: str = _PYTHON_START
    wrapper_close: str = _PYTHON_END
    # Whether a list item may also be a JSON call object (LFM2 writes either).
    json_items: bool = False
    # False: the wrapper holds calls one per line, no brackets (OLMo 3).
    bracketed: bool = True
    start_markers: tuple[str, ...] = ("[", _PYTHON_START)
    # A `[` in reasoning is prose.
    reasoning_exit_markers: tuple[str, ...] | None = (_PYTHON_START,)


class PythonicToolParser(CallListParser):
    name = "pythonic"
    aliases = ("llama4_pythonic",)
    config: ClassVar[PythonicConfig] = PythonicConfig()
    wrapper_open: ClassVar[str]
    wrapper_close: ClassVar[str]
    json_items: ClassVar[bool]
    bracketed: ClassVar[bool]

    def _accepts_call_name(self, name: str) -> bool:
        # A bare `[` is weak evidence (`[f(x) for x in y]` in prose): without the
        # python wrapper, only a declared tool starts a call list.
        return self._wrapped or self._any_call or self.tools is None or name in self.tools

    def _enter_region(self, marker: str) -> None:
        self._state = _MARKER
        self._wrapped = marker == self.wrapper_open
        self._pending = ""  # read, not yet known to be syntax (Marker) or text
        self._any_call = False
        self._delivered = False
        self._reader: JsonCallReader | None = None
        self._bare_object = False  # one JSON call object in the wrapper, no list

    def _step(self, buf: str, final: bool) -> int:
        state = self._state
        if state == _MARKER:
            if self._wrapped:
                self._pending = self.wrapper_open
                self._state = _WRAPPED
                return len(self.wrapper_open)
            self._pending = "["
            self._state = _ITEM
            return 1
        if state == _NAME:
            return self._read_name(buf, final)
        if state == _ARGS:
            return self._read_arguments(buf, final)
        if state == _JSON:
            return self._read_json_call(buf, final)
        i = self._pend_whitespace(buf, final)
        if i == len(buf):
            return i
        c = buf[i]
        if not self.bracketed and state in (_ITEM, _AFTER_CALL):
            at = self._wrapper_close_at(buf, i, final)
            if at is not None:
                return at
        if state == _WRAPPED:
            if not self.bracketed:
                self._state = _ITEM
                return i
            if c == "[":
                self._pending += c
                self._state = _ITEM
                return i + 1
            if c == "{" and self.json_items:  # a single call object where a list belongs
                self._reader = JsonCallReader(self)
                self._bare_object = True
                self._state = _JSON
                return i
        elif state == _ITEM:
            if _NAME_START(c):
                self._name = ""
                self._state = _NAME
                return i
            if c == "]" and (self._any_call or self._wrapped):  # a trailing comma, or an empty wrapped list
                return self._list_closed(i + 1)
            if c == "{" and self.json_items:
                self._reader = JsonCallReader(self)
                self._state = _JSON
                return i
        elif state == _AFTER_CALL:
            if not self.bracketed and _NAME_START(c):  # the next line's call
                self._state = _ITEM
                return i
            if c == ",":
                self._pending += c
                self._state = _ITEM
                return i + 1
            if c == "]":
                return self._list_closed(i + 1)
        elif state == _END_TAG:
            at = self._wrapper_close_at(buf, i, final)
            if at is not None:
                return at
        self._end_list()
        return i

    def _lead_is_text(self) -> bool:
        # A bare `[` is text the model wrote; the python wrapper is a special token.
        return not self._wrapped and not self._delivered

    def _list_closed(self, end: int) -> int:
        self._pending += "]"
        if self._lead_is_text():  # no call of the list was delivered: its `]` is text too
            self._end_list()
        elif self._wrapped:
            self._marker(self._pending)
            self._pending = ""
            self._state = _END_TAG
        else:
            self._end_list(closed=True)
        return end

    def _read_name(self, buf: str, final: bool) -> int:
        self._name, end, decides = self._pend_run(buf, final, _NAME_RUN, self._name)
        if not decides:
            return end
        if buf[end] == "(" and is_function_name(self._name) and self._accepts_call_name(self._name):
            self._pending = self._pending[: -len(self._name)]
            self._open_call(self._name, self._name + "(")
            self._stack = [")"]
            self._quote = ""
            self._source: list[str] = []
            self._state = _ARGS
            return end + 1
        self._end_list()
        return end

    def _read_arguments(self, buf: str, final: bool) -> int:
        """Track strings and brackets up to the `)` that closes the call."""
        stack = self._stack
        i, n = 0, len(buf)
        while i < n:
            quote = self._quote
            if quote:
                i = _STRING_RUN[quote](buf, i).end()
                if i == n:
                    break
                if buf[i] == "\\":
                    if i + 1 == n and not final:
                        break  # what it escapes decides
                    i += 2
                elif len(quote) == 1 or buf.startswith(quote, i):
                    i += len(quote)
                    self._quote = ""
                elif n - i < 3 and quote.startswith(buf[i:]) and not final:
                    break  # a closing triple quote may be arriving
                else:
                    i += 1
                continue
            i = _CODE_RUN(buf, i).end()
            if i == n:
                break
            c = buf[i]
            if c in _CLOSERS:
                stack.append(_CLOSERS[c])
                i += 1
            elif c in ")]}":
                i += 1
                if c != stack.pop():
                    return self._call_ended(buf, i, matched=False)
                if not stack:
                    return self._call_ended(buf, i, matched=True)
            elif buf.startswith(c * 3, i):
                self._quote = c * 3
                i += 3
            elif n - i < 3 and buf[i:] == c * (n - i) and not final:
                break  # `"` or `""` may still open a triple-quoted string
            else:
                self._quote = c
                i += 1
        i = min(i, n)
        self._source.append(buf[:i])
        self._raw(buf[:i])
        if final:
            self._fail_call("truncated")
            self._exit_region()
        return i

    def _call_ended(self, buf: str, end: int, matched: bool) -> int:
        self._source.append(buf[: end - 1])
        self._raw(buf[: end - 1])
        arguments = _arguments_json("".join(self._source)) if matched else None
        if arguments is None:
            self._fail_call("invalid_arguments", buf[end - 1 : end])
        else:
            self._stream_args(arguments)
            self._close_call(buf[end - 1 : end])
        if not matched:  # brackets out of step: the list is broken, the rest is text
            self._exit_region()
            return end
        self._any_call = True
        self._state = _AFTER_CALL
        return end

    def _wrapper_close_at(self, buf: str, i: int, final: bool) -> int | None:
        """At `i`, the wrapper's closing tag ends the list (the position after it), or
        may still (`i`: wait for more); None when it is not there."""
        close = self.wrapper_close
        found = starts_with(buf[i:], close)
        if found:
            self._pending += close
            self._end_list(closed=True)
            return i + len(close)
        return i if found is None and not final else None

    def _read_json_call(self, buf: str, final: bool) -> int:
        reader = self._reader
        assert reader is not None
        closed = _END_TAG if self._bare_object else _AFTER_CALL
        end = self._read_object(reader, buf, final, closed=closed, broken=None)
        self._any_call = self._any_call or self._state == closed
        return end

    @property
    def in_call_region(self) -> bool:
        return self._call_open or (self._in_region and self._state == _JSON)


def _arguments_json(inside: str) -> str | None:
    """`a=1, b='x'` (the inside of a call's parentheses) as a JSON object, or None
    when it is not keyword arguments with literal values. A NUL byte (which Python
    source cannot hold) is read as its escape; raw newlines that only make sense
    inside a string (a multi-line shell command) are read as escapes when the text
    does not parse otherwise; so are keyword-named parameters and zero-padded
    integers (`_rewritten_literals`), and quotes the model left unescaped inside a
    string (`_requoted_strings`)."""
    source = inside.replace("\x00", "\\x00")
    arguments = _keyword_literals(source)
    if arguments is None:
        arguments = _rewritten_literals(source)
    if arguments is None and "\n" in source:
        arguments = _keyword_literals(source.replace("\r", "\\r").replace("\n", "\\n"))
    if arguments is None:
        requoted = _requoted_strings(source)
        if requoted is not None:
            arguments = _keyword_literals(requoted) or _rewritten_literals(requoted)
    if arguments is None:
        return None
    try:
        return json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return None


# Where a string argument may end: before the next `name=`, a `)` or the end.
_STRING_END = re.compile(r"\s*(?:,\s*[A-Za-z_]\w*\s*=|\)|$)")
_ARGUMENT_HEAD = re.compile(r"\s*[A-Za-z_]\w*\s*=\s*")
_COMMA = re.compile(r"\s*,")


def _requoted_strings(inside: str) -> str | None:
    """`command='sed -n '1,5p' f.py'`: a string whose own quote char appears
    unescaped inside it (a shell command, the commonest case). Its closing quote
    is the one followed by the next `name=` or the end, when exactly one quote is:
    then the inner ones are escaped. Any other reading (`city='echo 'hi',
    unit='c'` could end at either quote) is ambiguous and gives None: nothing is
    guessed."""
    out: list[str] = []
    i, n = 0, len(inside)
    while i < n:
        head = _ARGUMENT_HEAD.match(inside, i)
        if head is None or head.end() >= n or inside[head.end()] not in "'\"":
            break  # not a plain string argument: the rest is left to Python
        quote, start = inside[head.end()], head.end() + 1
        ends = [j for j in range(start, n) if inside[j] == quote and _STRING_END.match(inside, j + 1)]
        if len(ends) != 1:
            return None
        body = inside[start : ends[0]]
        out.append(inside[i:start] + re.sub(r"(?<!\\)" + quote, "\\" + quote, body) + quote)
        i = ends[0] + 1
        comma = _COMMA.match(inside, i)
        if comma is None:
            break
        out.append(comma.group())
        i = comma.end()
    rewritten = "".join(out) + inside[i:]
    return None if rewritten == inside else rewritten


def _rewritten_literals(inside: str) -> dict[str, Any] | None:
    """Two spellings Python rejects though their meaning is plain, read as meant:
    a parameter named like a Python keyword (`from=1`: a schema may well have
    `from` or `class`), at the call's top level after `(` or `,` and before `=`,
    is read under a stand-in name and given back its own; a zero-padded decimal
    integer (`month=07`, which Python 3 no longer reads as octal) is its decimal
    value. Strings are left as written."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(inside).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    line_starts = [0]
    for line in io.StringIO(inside):
        line_starts.append(line_starts[-1] + len(line))

    def offset(position: tuple[int, int]) -> int:
        return line_starts[position[0] - 1] + position[1]

    edits: list[tuple[int, int, str]] = []
    renamed: dict[str, str] = {}
    depth, previous = 0, ","
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    for index, token in enumerate(significant):
        following = significant[index + 1] if index + 1 < len(significant) else None
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif (
            depth == 0
            and token.type == tokenize.NAME
            and keyword.iskeyword(token.string)
            and previous == ","
            and following is not None
            and following.string == "="
        ):
            stand_in = f"_tokenyard_keyword_{len(renamed)}_"
            if stand_in in inside:
                return None
            renamed[stand_in] = token.string
            edits.append((offset(token.start), offset(token.end), stand_in))
        elif (
            token.type == tokenize.NUMBER
            and set(token.string) == {"0"}
            and following is not None
            and following.type == tokenize.NUMBER
            and following.string.isdigit()
            and following.start == token.end
        ):
            edits.append((offset(token.start), offset(following.end), str(int(token.string + following.string))))
        if token.type != tokenize.ENDMARKER:
            previous = token.string
    if not edits:
        return None
    for start, end, replacement in reversed(edits):
        inside = inside[:start] + replacement + inside[end:]
    arguments = _keyword_literals(inside)
    if arguments is None:
        return None
    return {renamed.get(name, name): value for name, value in arguments.items()}


def _keyword_literals(inside: str) -> dict[str, Any] | None:
    try:
        with warnings.catch_warnings():
            # `"\d+"` is the model's text, kept as written; not a warning to log.
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            call = ast.parse(f"f({inside})", mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            return None
        arguments = {}
        for keyword in call.keywords:
            value = _literal(keyword.value)
            if keyword.arg is not None:
                arguments[keyword.arg] = value
            elif isinstance(value, dict):  # `**{'a': 1}`: its keys are arguments, later ones win
                arguments.update(value)
            else:
                return None
        return arguments
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None


_NAMES = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}


def _literal(node: ast.expr) -> Any:
    """A JSON value from a literal's syntax tree (ValueError when it is not one):
    Python's literals, sets and tuples as lists in written order, JSON's names."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (str, int, float))
        or (isinstance(node, ast.Constant) and node.value is None)
    ):
        return node.value
    if isinstance(node, ast.JoinedStr) and all(
        isinstance(part, ast.Constant) and isinstance(part.value, str) for part in node.values
    ):  # an f-string with no placeholders is a plain string
        return "".join(part.value for part in node.values)  # type: ignore[attr-defined]  # checked above
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("** inside a dict")
        return {_key(key): _literal(value) for key, value in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    raise ValueError("not a literal")


def _key(node: ast.expr | None) -> str:
    value = _literal(node) if node is not None else None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)) or value is None:
        return json.dumps(value)  # JSON object keys are strings
    raise ValueError("unhashable key")
