"""MiniMax M3: every structural tag is preceded by the namespace token `]<]minimax[>[`
(written `NS` here), and parameters are elements named after the argument:

    NS<tool_call>
    NS<invoke name="create_order">NS<user_id>42NS</user_id>NS<items>NS<item>NS<sku>b-1NS</sku>NS</item>NS</items>NS</invoke>
    NS</tool_call>

Values are raw text (never escaped: only the namespace token is structure). A
parameter holding child elements is an object, or an array where its schema says
so or every child is an `<item>` (how the template writes lists); repeated names
collect into a list. Scalars are typed by the tool's schema (`true`, `3`). The
template writes null, an empty list and an empty dict as an empty element: one
reads back as null, [] or {} where the schema admits no string, as the text
written ("") where a string may fill it or the schema is silent (vLLM's reading).

Streaming: the call starts at its `<invoke name=...>`; a parameter whose schema
says it is a string streams as it arrives, any other is emitted whole when its
closing tag is read (its type, or even whether it is a list, is not known before).
A parameter left unterminated when the call ends is dropped from the arguments
(its text stays in the call's raw), as the peers do.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..coercion import coerce_value, dumps, schema_types, tool_properties
from ..markers import MarkerSet
from .base import ToolParser, is_function_name

NS = "]<]minimax[>["
SECTION_OPEN = NS + "<tool_call>"
SECTION_CLOSE = NS + "</tool_call>"
INVOKE_CLOSE = NS + "</invoke>"
_NS_SET = MarkerSet([NS])
# A namespaced tag: `<name>` or `</name>`, names bounded and single-line.
_TAG = re.compile(r"<(/?)([^<>\n]{1,256})>")
_INVOKE = re.compile(r"""<invoke name=(?:"([^"\n]{1,256})"|'([^'\n]{1,256})'|([^\s"'<>]{1,256}))>""")
_TAG_LIMIT = 300  # how far past a namespace token its tag may still be arriving
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]').search

_SECTION, _BETWEEN, _HEAD, _BODY, _STRING, _HELD = range(6)

# An element: its text, or (text, [(name, element), ...]) when it has children.
_Element = str | tuple[str, list[tuple[str, Any]]]


def _fragment(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1] if _NEEDS_ESCAPE(text) else text


def _tag_at(buf: str, at: int, final: bool) -> tuple[re.Match[str] | None, bool]:
    """The tag right after the namespace token at `at`: (match, need_more)."""
    match = _TAG.match(buf, at + len(NS))
    if match is not None:
        return match, False
    rest = buf[at + len(NS) :]
    waiting = not final and len(rest) < _TAG_LIMIT and (not rest or (rest[0] == "<" and ">" not in rest))
    return None, waiting


class MinimaxM3ToolParser(ToolParser):
    name = "minimax_m3"
    aliases = ()
    start_markers = (SECTION_OPEN,)

    def _enter_region(self, marker: str) -> None:
        self._state = _SECTION

    # ---- the region state machine --------------------------------------------------

    def _parse_region(self, buf: str, final: bool) -> int:
        state = self._state
        if state >= _STRING:  # inside a parameter value: the hot path
            return self._value(buf, final)
        if state == _SECTION:
            self._marker(SECTION_OPEN)
            self._state = _BETWEEN
            return len(SECTION_OPEN)
        if state == _BETWEEN:
            return self._between(buf, final)
        if state == _HEAD:
            return self._head(buf, final)
        return self._body(buf, final)

    def _between(self, buf: str, final: bool) -> int:
        stripped = buf.lstrip()
        lead = len(buf) - len(stripped)
        if not stripped:  # whitespace: framing if structure follows, else prose
            if final:
                self._marker(buf)
                return len(buf)
            return 0
        if stripped.startswith(NS) or (not final and NS.startswith(stripped)):
            if lead:
                self._marker(buf[:lead])
                return lead
            if buf.startswith(SECTION_CLOSE):
                self._marker(SECTION_CLOSE)
                self._exit_region()
                return len(SECTION_CLOSE)
            if buf.startswith(NS + "<invoke"):
                self._state = _HEAD
                return self._head(buf, final)
            if not final and (SECTION_CLOSE.startswith(buf) or (NS + "<invoke").startswith(buf)):
                return 0
        # Prose inside the section: text, up to the next namespace token.
        at = buf.find(NS, 1)
        end = len(buf) if at < 0 else at
        if at < 0 and not final:
            end -= _NS_SET.held_suffix(buf, 1)
        self._text(buf[:end])
        return end

    def _head(self, buf: str, final: bool) -> int:
        if not buf.startswith(NS):
            self._state = _BETWEEN
            return self._between(buf, final)
        match = _INVOKE.match(buf, len(NS))
        if match is not None:
            name = next(g for g in match.groups() if g is not None).strip()
            if is_function_name(name):
                self._open_call(name, buf[: match.end()])
                tool = self._tool(name)
                self._properties: dict[str, Any] = tool_properties(tool)
                self._unclosed_parameter = False
                self._count = 0
                self._state = _BODY
                return match.end()
        else:
            rest = buf[len(NS) : len(NS) + _TAG_LIMIT]  # the namespace token itself holds a `>`
            if not final and len(rest) < _TAG_LIMIT and "\n" not in rest and ">" not in rest:
                return 0
        # Not an invoke after all: its text is prose inside the section.
        self._text(NS)
        self._state = _BETWEEN
        return len(NS)

    def _body(self, buf: str, final: bool) -> int:
        at = buf.find(NS)
        if at < 0:
            end = len(buf) if final else len(buf) - _NS_SET.held_suffix(buf)
            self._raw(buf[:end])
            if final:
                self._end_call(truncated=True)
            return end
        if at:
            self._raw(buf[:at])
            return at
        match, waiting = _tag_at(buf, 0, final)
        if waiting:
            return 0
        if match is None:
            self._raw(NS)
            return len(NS)
        closing, tag = match.group(1), match.group(2)
        end = match.end()
        if closing and tag == "invoke":
            self._end_call(raw=buf[:end])
            self._state = _BETWEEN
            return end
        if closing and tag == "tool_call":
            self._end_call()  # `</invoke>` missing: the section's end closes the call
            self._marker(buf[:end])
            self._exit_region()
            return end
        if tag.startswith("invoke "):
            self._end_call()  # `</invoke>` missing: the next invoke starts
            self._state = _HEAD
            return self._head(buf, final)
        self._raw(buf[:end])
        if closing:  # a stray closing tag between parameters
            return end
        self._begin_parameter(tag.strip())
        return end

    def _begin_parameter(self, key: str) -> None:
        self._key = key
        schema = self._properties.get(key)
        self._schema: Any = schema
        self._stack: list[str] = []
        self._held: list[str] = []
        if schema is not None and schema_types(schema) == ("string",):
            self._state = _STRING
            self._stream_args(("{" if self._count == 0 else ", ") + dumps(key) + ': "')
            self._count += 1
        else:
            self._state = _HELD

    def _value(self, buf: str, final: bool) -> int:
        streaming = self._state == _STRING
        at = buf.find(NS)
        if at != 0:
            if at > 0:
                end = at
            elif final or "]" not in buf:  # no namespace token can be starting
                end = len(buf)
            else:
                end = len(buf) - _NS_SET.held_suffix(buf)
            self._raw(buf[:end])
            if streaming:
                self._stream_args(_fragment(buf[:end]))
            else:
                self._held.append(buf[:end])
            if final and at < 0:
                self._end_parameter(complete=False)
                self._end_call(truncated=True)
            return end
        match, waiting = _tag_at(buf, 0, final)
        if waiting:
            return 0
        if match is None:  # a namespace token that opens no tag: value text
            piece = NS
        else:
            closing, tag = match.group(1), match.group(2)
            if closing and tag in ("invoke", "tool_call") or tag.startswith("invoke "):
                # The call ends inside this parameter, whose own closing tag never came:
                # its arguments can not be trusted, so the call is not dispatched.
                self._end_parameter(complete=False)
                self._unclosed_parameter = True
                self._state = _BODY
                return self._body(buf, final)
            piece = match.group()
            if closing and not self._stack and tag == self._key:
                self._raw(NS + piece)
                self._end_parameter(complete=True)
                self._state = _BODY
                return len(NS) + len(piece)
            if closing:
                if self._stack and self._stack[-1] == tag:
                    self._stack.pop()
            else:
                self._stack.append(tag)
            piece = NS + piece
        self._raw(piece)
        if streaming:  # markup inside a string-typed value stays its text
            self._stream_args(_fragment(piece))
        else:
            self._held.append(piece)
        return len(piece)

    def _end_parameter(self, complete: bool) -> None:
        if self._state == _STRING:
            self._stream_args('"')
        elif complete:
            body = "".join(self._held)
            element = _parse_element(body)
            if not isinstance(element, str) and _string_alternative(self._schema):
                value: Any = body  # a union with a string alternative is a string, as written
            else:
                value = _convert(element, self._schema)
            self._stream_args(("{" if self._count == 0 else ", ") + dumps(self._key) + ": " + dumps(value))
            self._count += 1
        self._held = []

    def _end_call(self, raw: str = "", truncated: bool = False) -> None:
        if not self._call_open:
            return
        self._stream_args("}" if self._count else "{}")
        if truncated:
            self._fail_call("truncated", raw)
            self._exit_region()
        elif self._unclosed_parameter:
            self._fail_call("invalid_arguments", raw)
        else:
            self._close_call(raw)


def _parse_element(body: str) -> _Element:
    """The element whose inner text is `body`: nested namespaced tags become
    children; a tag left open is closed where the body ends."""
    pieces = body.split(NS)
    # Frames: (name, text parts, children).
    stack: list[tuple[str, list[str], list[tuple[str, Any]]]] = [("", [pieces[0]], [])]
    for piece in pieces[1:]:
        match = _TAG.match(piece)
        if match is None:
            stack[-1][1].append(NS + piece)
            continue
        rest = piece[match.end() :]
        closing, name = match.group(1), match.group(2)
        if not closing:
            stack.append((name, [rest], []))
        elif len(stack) > 1 and stack[-1][0] == name:
            done = stack.pop()
            stack[-1][2].append((done[0], _element(done[1], done[2])))
            stack[-1][1].append(rest)
        else:
            stack[-1][1].append(NS + piece)
    while len(stack) > 1:
        done = stack.pop()
        stack[-1][2].append((done[0], _element(done[1], done[2])))
    return _element(stack[0][1], stack[0][2])


def _element(texts: list[str], children: list[tuple[str, Any]]) -> _Element:
    text = "".join(texts)
    return (text, children) if children else text


def _container(schema: Any) -> str | None:
    types = schema_types(schema)
    if "array" in types and "object" not in types:
        return "array"
    if "object" in types:
        return "object"
    return None


def _alternatives(schema: Any) -> list[Any]:
    """The alternatives of a bare `anyOf`/`oneOf` union schema (none otherwise)."""
    if not isinstance(schema, dict) or "type" in schema or "properties" in schema:
        return []
    return [alt for alt in (schema.get("anyOf") or schema.get("oneOf") or ()) if isinstance(alt, dict)]


def _string_alternative(schema: Any) -> bool:
    return any(schema_types(alt) == ("string",) for alt in _alternatives(schema))


def _resolve_union(schema: Any, children: list[tuple[str, Any]]) -> Any:
    """The alternative of a union that structured content fits: the array one for
    `<item>` children, else the object one."""
    alternatives = _alternatives(schema)
    wanted = "array" if all(name == "item" for name, _ in children) else "object"
    for kinds in ((wanted,), ("array", "object")):
        for alt in alternatives:
            if _container(alt) in kinds:
                return alt
    return schema


# How the template writes a number or a boolean inside a structure (`{{ val }}`,
# `{{ val | tojson }}`): a JSON literal, no leading zero (`018956` stays text).
_TEMPLATE_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false").fullmatch


def _convert(element: _Element, schema: Any, nested: bool = False) -> Any:
    schema = schema if isinstance(schema, dict) else None
    if schema is not None and not isinstance(element, str):
        schema = _resolve_union(schema, element[1])
    kind = _container(schema) if schema is not None else None
    if isinstance(element, str):
        if schema is None:
            # A leaf of a structure the schema does not describe: the template wrote
            # the model's JSON value, so a number or boolean reads back as one.
            return json.loads(element) if nested and _TEMPLATE_SCALAR(element) else element
        types = schema_types(schema)
        if types and "string" not in types and not element.strip():
            # The template writes an empty list or dict, and null (a list's item), as
            # nothing: where no string can fill the value, that is what it was.
            return None if kind is None else [] if kind == "array" else {}
        return coerce_value(element, types)
    text, children = element
    if kind is None and schema is None and all(name == "item" for name, _ in children):
        kind = "array"
    if kind == "array":
        items = schema.get("items") if schema is not None else None
        return [_convert(child, items, True) for _, child in children]
    properties = (schema or {}).get("properties") or {}
    additional = (schema or {}).get("additionalProperties")
    out: dict[str, Any] = {}
    repeated: set[str] = set()
    for name, child in children:
        value = _convert(child, properties.get(name, additional), True)
        if name not in out:
            out[name] = value
        elif name in repeated:
            out[name].append(value)
        else:
            out[name] = [out[name], value]
            repeated.add(name)
    if text.strip():  # text beside child elements is kept, under a name no child uses
        field = "$text"
        while field in out:
            field = "$" + field
        out[field] = text
    return out
