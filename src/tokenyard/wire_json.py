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
pieces and the longest hold is the largest single element. Both rules are then
applied in one walk over the decoded value (`_checked`) that looks inside only the
strings that are not ASCII (a lone surrogate is not), a slice at a time: searching
the body's text for escapes took three passes over it, ~40 ms of GIL for 20 MB.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .faults import JsonTooDeep
from .parsing.patterns import always_match

# Deeper JSON than any API body needs.
MAX_DEPTH = 64
# Bodies at least this large are decoded a value at a time.
PIECEWISE_BYTES = 1 << 20

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A string is searched for lone surrogates this many characters at a time (~1 ms
# each), so that other threads get the GIL in between.
SCAN_CHARS = 1 << 18


def loads(data: str | bytes | bytearray, *, where: str | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(data)` by the rule above. Raises ValueError for text that is not
    JSON and `JsonTooDeep` (naming `where`) for JSON nested too deep."""
    try:
        value = _loads_in_pieces(data) if len(data) >= PIECEWISE_BYTES else json.loads(data)
    except RecursionError:
        raise JsonTooDeep(max_depth, where) from None
    return _checked(value, max_depth, where)


_DECODER = json.JSONDecoder()
_WHITESPACE = always_match(r"[ \t\n\r]*")


def _loads_in_pieces(data: str | bytes | bytearray) -> Any:
    """`json.loads(data)` for a top-level object, its members and the elements of its
    arrays decoded one by one. Anything unexpected is left to `json.loads`, whose
    error (or value) is then the answer."""
    text = data if isinstance(data, str) else data.decode(json.detect_encoding(data), "surrogatepass")
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


def _checked(value: Any, limit: int, where: str | None) -> Any:
    """`value` nested at most `limit` levels (iteratively: no recursion) with every
    lone surrogate in its strings and keys as U+FFFD (a valid pair was already joined
    by the decoder). Containers are fixed in place: the decoder made them."""
    if isinstance(value, str):
        return _without_lone_surrogates(value)
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise JsonTooDeep(limit, where)
        if isinstance(node, dict):
            if not all(key.isascii() for key in node) and any(_LONE_SURROGATE.search(key) for key in node):
                items = list(node.items())
                node.clear()
                node.update((_without_lone_surrogates(key), item) for key, item in items)
            for key, item in node.items():
                if isinstance(item, str):
                    if not item.isascii():
                        node[key] = _without_lone_surrogates(item)
                elif isinstance(item, (dict, list)):
                    stack.append((item, depth + 1))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    if not item.isascii():
                        node[i] = _without_lone_surrogates(item)
                elif isinstance(item, (dict, list)):
                    stack.append((item, depth + 1))
    return value


def _without_lone_surrogates(text: str) -> str:
    if text.isascii():
        return text
    if len(text) <= SCAN_CHARS:
        return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text
    search = _LONE_SURROGATE.search
    if not any(search(text, at, at + SCAN_CHARS) for at in range(0, len(text), SCAN_CHARS)):
        return text
    # Surrogates are single code points in a `str`: a slice never splits one.
    return "".join(_LONE_SURROGATE.sub("\ufffd", text[at : at + SCAN_CHARS]) for at in range(0, len(text), SCAN_CHARS))
