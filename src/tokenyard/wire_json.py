"""JSON a client wrote, decoded by one rule wherever it is decoded: the request body,
and the JSON clients put inside string fields (tool-call arguments, Claude Code's
`metadata.user_id`, Codex's turn metadata).

- A lone surrogate (`"\\ud800"`: a JavaScript client that cut an emoji in half
  writes one) becomes U+FFFD, as JavaScript's own `TextEncoder` does. Python keeps
  it in a `str`, and every later UTF-8 encode (template, tokenizer, log) would
  fail on it, turn after turn of the session that carries it.
- Nesting deeper than `MAX_DEPTH` is refused (`JsonTooDeep`): no API needs it, and
  it bounds every recursive walk downstream (pydantic, jinja, `json.dumps`).

A large body is decoded a value at a time (`_loads_in_pieces`): `json.loads` holds
the GIL for its whole run, so decoding 12 MB of tools on a worker thread froze the
event loop for seconds; decoded piece by piece, the loop gets the GIL between
pieces and the longest hold is the largest single element.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .faults import JsonTooDeep
from .parsing.patterns import always_match

# Deeper JSON than any API body needs.
MAX_DEPTH = 64
# Bodies at least this large are decoded a value at a time.
PIECEWISE_BYTES = 1 << 20

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# What may decode to a lone surrogate: a `\uD800`-`\uDFFF` escape, or (bytes that
# json.loads decodes with "surrogatepass") a UTF-8-style encoded surrogate.
_MAY_HOLD_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_MAY_HOLD_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def loads(data: str | bytes | bytearray, *, where: str | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(data)` by the rule above. Raises ValueError for text that is not
    JSON and `JsonTooDeep` (naming `where`) for JSON nested too deep."""
    try:
        value = _loads_in_pieces(data) if len(data) >= PIECEWISE_BYTES else json.loads(data)
    except RecursionError:
        raise JsonTooDeep(max_depth, where) from None
    if not check_depth(value, max_depth):
        raise JsonTooDeep(max_depth, where)
    return replace_lone_surrogates(value) if _may_hold_surrogate(data) else value


def _may_hold_surrogate(data: str | bytes | bytearray) -> bool:
    # Substring tests first: they run at memchr speed, the regex at a tenth of it
    # (what is left are escapes or UTF-8 of U+D000-U+D7FF: Hangul, mostly).
    if isinstance(data, str):
        if data.isascii():
            return ("\\ud" in data or "\\uD" in data) and _MAY_HOLD_SURROGATE_TEXT.search(data) is not None
        return _MAY_HOLD_SURROGATE_TEXT.search(data) is not None
    if b"\\ud" in data or b"\\uD" in data or b"\xed" in data:
        return _MAY_HOLD_SURROGATE_BYTES.search(data) is not None
    return False


_DECODER = json.JSONDecoder()
_WHITESPACE = always_match(r"[ \t\n\r]*")


def _loads_in_pieces(data: str | bytes | bytearray) -> Any:
    """`json.loads(data)` for a top-level object, its members and the elements of its
    arrays decoded one by one. Anything unexpected is left to `json.loads`, whose
    error (or value) is then the answer."""
    text = data if isinstance(data, str) else bytes(data).decode(json.detect_encoding(data), "surrogatepass")
    try:
        return _object_in_pieces(text)
    except (ValueError, IndexError):
        return json.loads(text)


def _object_in_pieces(text: str) -> dict[str, Any]:
    skip = _WHITESPACE
    at = skip(text, 0).end()
    if text[at] != "{":
        raise ValueError("not an object")
    out: dict[str, Any] = {}
    at = skip(text, at + 1).end()
    if text[at] == "}":
        at += 1
    while text[at - 1] != "}":
        if text[at] != '"':
            raise ValueError("no key")
        key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]  # public, untyped
        at = skip(text, at).end()
        if text[at] != ":":
            raise ValueError("no colon")
        at = skip(text, at + 1).end()
        if text[at] == "[":
            out[key], at = _array_in_pieces(text, at)
        else:
            out[key], at = _DECODER.raw_decode(text, at)
        at = skip(text, at).end()
        if text[at] not in ",}":
            raise ValueError("no comma")
        at = skip(text, at + 1).end() if text[at] == "," else at + 1
    if skip(text, at).end() != len(text):
        raise ValueError("trailing data")
    return out


def _array_in_pieces(text: str, at: int) -> tuple[list[Any], int]:
    skip = _WHITESPACE
    items: list[Any] = []
    at = skip(text, at + 1).end()
    if text[at] == "]":
        return items, at + 1
    while True:
        item, at = _DECODER.raw_decode(text, at)
        items.append(item)
        at = skip(text, at).end()
        if text[at] == "]":
            return items, at + 1
        if text[at] != ",":
            raise ValueError("no comma")
        at = skip(text, at + 1).end()


def check_depth(value: Any, limit: int) -> bool:
    """Whether `value` is nested at most `limit` levels (iteratively: no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def replace_lone_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its strings and keys as U+FFFD (a valid
    pair was already joined by the JSON decoder). Recursive: call it on values
    `check_depth` bounded."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, list):
        return [replace_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {replace_lone_surrogates(k): replace_lone_surrogates(v) for k, v in value.items()}
    return value
