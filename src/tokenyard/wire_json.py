"""JSON a client wrote, decoded by one rule wherever it is decoded: the request body,
and the JSON clients put inside string fields (tool-call arguments, Claude Code's
`metadata.user_id`, Codex's turn metadata).

- A lone surrogate (`"\\ud800"`: a JavaScript client that cut an emoji in half
  writes one) becomes U+FFFD, as JavaScript's own `TextEncoder` does. Python keeps
  it in a `str`, and every later UTF-8 encode (template, tokenizer, log) would
  fail on it, turn after turn of the session that carries it.
- Nesting deeper than `MAX_DEPTH` is refused (`JsonTooDeep`): no API needs it, and
  it bounds every recursive walk downstream (pydantic, jinja, `json.dumps`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

# Deeper JSON than any API body needs.
MAX_DEPTH = 64

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# What may decode to a lone surrogate: a `\uD800`-`\uDFFF` escape, or (bytes that
# json.loads decodes with "surrogatepass") a UTF-8-style encoded surrogate.
_MAY_HOLD_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_MAY_HOLD_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


class JsonTooDeep(Exception):
    """JSON nested more than `limit` levels. Not a ValueError: callers that keep text
    that is not JSON as text must not keep this."""

    def __init__(self, limit: int, where: str | None = None) -> None:
        self.limit = limit
        self.where = where
        super().__init__(f"{where + ': ' if where else ''}JSON is nested more than {limit} levels deep")


def loads(data: str | bytes | bytearray, *, where: str | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(data)` by the rule above. Raises ValueError for text that is not
    JSON and `JsonTooDeep` (naming `where`) for JSON nested too deep."""
    try:
        value = json.loads(data)
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
