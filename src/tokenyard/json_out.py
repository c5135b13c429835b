"""What we write as JSON on the request path (stream frames, the engine request's
body), as compact UTF-8 bytes, written by orjson: several times faster than the
stdlib's encoder, which on a cold request cost ~80 µs for one engine body of a few
hundred token ids. The stdlib writes what orjson refuses (an integer past 64 bits,
a key that is not a string: a model may write either into a tool's input), with the
same compact separators and non-ASCII kept as it is."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
