"""JSON a client wrote, decoded by one rule wherever it is decoded: the request body,
and the JSON clients put inside string fields (tool-call arguments, Claude Code's
`metadata.user_id`, Codex's turn metadata).

- A lone surrogate (`"\\ud800"`: a JavaScript client that cut an emoji in half
  writes one) becomes U+FFFD, as JavaScript's own `TextEncoder` does. Python keeps
  it in a `str`, and every later UTF-8 encode (template, tokenizer, log) would
  fail on it, turn after turn of the session that carries it.
- Nesting deeper than `MAX_DEPTH` is refused (`JsonTooDeep`): no API needs it, and
  it bounds every recursive walk downstream (pydantic, jinja, `json.dumps`).

A body is decoded by orjson (a cold 2 KB body: ~9 µs against the stdlib's ~27),
and by the stdlib where orjson refuses what the stdlib accepts (a lone surrogate,
`NaN`, a number past a double's range, UTF-16 bytes) or where orjson read an integer
past 64 bits as a float, losing its digits: a walk over orjson's value sees any float
of that size (and the depth; its strings need no look, orjson has refused every lone
surrogate) and the body is decoded again by the stdlib. Either way the value is the
stdlib's (tests/test_wire_json.py compares them).

A large body is decoded a value at a time (`_loads_in_pieces`): `json.loads` holds
the GIL for its whole run, so decoding 12 MB of tools on a worker thread froze the
event loop for seconds; decoded piece by piece, the loop gets the GIL between
pieces and the longest hold is the largest single element. Both rules are then
applied in one walk over the decoded value (`_checked`) that looks inside only the
strings that are not ASCII (a lone surrogate is not), a slice at a time: searching
the body's text for escapes took three passes over it, ~40 ms of GIL for 20 MB.
A large body's pieces are checked as they are decoded, and their containers are
taken out of the cyclic garbage collector's sight (`_untrack`): JSON holds no
reference cycles, so the collector could never free any of it, only walk it, and
each full collection walks every container the process tracks with the GIL held
(60,000 tools: 240K containers, ~40 ms of CPU a walk, three walks while they were
decoded; loop_latency.py's gc timing). Reference counting still frees them. A
container code later fills with objects that form a cycle through it would stay
uncollected (a dict is tracked again when a container is put in it; a list not).
"""

from __future__ import annotations

import ctypes
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import orjson

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
        if len(data) >= PIECEWISE_BYTES:
            return _loads_in_pieces(data, max_depth, where)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:  # what only the stdlib reads, or its error
            return _checked(json.loads(data), max_depth, where)
        if _widened_or_too_deep(value, max_depth, where):
            return _checked(json.loads(data), max_depth, where)
        return value
    except RecursionError:
        raise JsonTooDeep(max_depth, where) from None


# orjson keeps every integer from -2**63 to 2**64 - 1; past that it makes a float at
# least this large.
_WIDENED = float(2**63)


_DECODER = json.JSONDecoder()
_WHITESPACE = always_match(r"[ \t\n\r]*")


def _loads_in_pieces(data: str | bytes | bytearray, limit: int, where: str | None) -> Any:
    """`loads(data)` for a top-level object, its members and the elements of its
    arrays decoded (and checked) one by one. Anything unexpected is left to
    `json.loads`, whose error (or value) is then the answer."""
    text = data if isinstance(data, str) else data.decode(json.detect_encoding(data), "surrogatepass")
    try:
        return _object_in_pieces(text, limit, where)
    except (ValueError, IndexError):
        return _checked(json.loads(text), limit, where, untrack=True)


def _object_in_pieces(text: str, limit: int, where: str | None) -> dict[str, Any]:
    skip = _WHITESPACE
    at = skip(text, 0).end()
    if text[at] != "{":
        raise ValueError("not an object")
    if limit < 1:
        raise JsonTooDeep(limit, where)
    out: dict[str, Any] = {}
    at = skip(text, at + 1).end()
    if text[at] == "}":
        at += 1
    while text[at - 1] != "}":
        if text[at] != '"':
            raise ValueError("no key")
        key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]  # public, untyped
        key = _without_lone_surrogates(key)
        at = skip(text, at).end()
        if text[at] != ":":
            raise ValueError("no colon")
        at = skip(text, at + 1).end()
        if text[at] == "[":
            out[key], at = _array_in_pieces(text, at, limit - 1, where)
        else:
            value, at = _DECODER.raw_decode(text, at)
            out[key] = _checked(value, limit - 1, where, untrack=True)
        at = skip(text, at).end()
        if text[at] not in ",}":
            raise ValueError("no comma")
        at = skip(text, at + 1).end() if text[at] == "," else at + 1
    if skip(text, at).end() != len(text):
        raise ValueError("trailing data")
    _untrack(out)
    return out


def _array_in_pieces(text: str, at: int, limit: int, where: str | None) -> tuple[list[Any], int]:
    """The array at `text[at]`, `limit` levels deep at most, its elements decoded one by one."""
    if limit < 1:
        raise JsonTooDeep(limit, where)
    skip = _WHITESPACE
    items: list[Any] = []
    _untrack(items)
    at = skip(text, at + 1).end()
    if text[at] == "]":
        return items, at + 1
    while True:
        item, at = _DECODER.raw_decode(text, at)
        kind = type(item)  # the decoder makes exact types; no call per number (5M ids to detokenize)
        if kind is dict or kind is list:
            _checked(item, limit - 1, where, untrack=True)
        elif kind is str and not item.isascii():
            item = _without_lone_surrogates(item)
        items.append(item)
        at = skip(text, at).end()
        if text[at] == "]":
            return items, at + 1
        if text[at] != ",":
            raise ValueError("no comma")
        at = skip(text, at + 1).end()


def _widened_or_too_deep(value: Any, limit: int, where: str | None) -> bool:
    """Whether orjson's `value` holds a float as large as orjson makes of an integer
    past 64 bits; raises `JsonTooDeep` for nesting past `limit`. orjson refuses every
    lone surrogate, so its strings need no look (that look was 2/3 of a 130 KB Claude
    Code body's walk). A level at a time, iteratively: no recursion."""
    level = [value]
    depth = 0
    while level:
        below = []
        for node in level:
            kind = type(node)
            if kind is dict or kind is list:
                below.append(node)
            elif kind is float and abs(node) >= _WIDENED:
                return True
        if not below:
            return False
        depth += 1
        if depth > limit:
            raise JsonTooDeep(limit, where)
        level = [item for node in below for item in (node.values() if type(node) is dict else node)]
    return False


def _checked(value: Any, limit: int, where: str | None, *, untrack: bool = False) -> Any:
    """`value` nested at most `limit` levels (iteratively: no recursion) with every
    lone surrogate in its strings and keys as U+FFFD (a valid pair was already joined
    by the decoder), and with `untrack`, its containers out of the garbage
    collector's sight. Containers are fixed in place: the decoder made them."""
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
            entries: Iterable[tuple[Any, Any]] = node.items()  # a value replaced in place: no resize
        elif isinstance(node, list):
            entries = enumerate(node)
        else:
            continue  # a scalar at the top (only containers are pushed): nothing to untrack
        for slot, item in entries:
            if isinstance(item, str):
                if not item.isascii():
                    node[slot] = _without_lone_surrogates(item)
            elif isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
        if untrack:  # after the node's own changes: putting a container in a dict tracks it again
            _untrack(node)
    return value


def _load_untrack() -> Callable[[object], None]:
    try:
        # Only for dicts and lists (it reads the collector's header, which other types
        # lack); a PyDLL: called with the GIL held.
        untrack = ctypes.pythonapi.PyObject_GC_UnTrack
    except AttributeError:  # not CPython: its collector is its own business
        return lambda value: None
    untrack.argtypes = [ctypes.py_object]
    untrack.restype = None
    return untrack


_untrack = _load_untrack()


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
