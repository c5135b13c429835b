"""Schema-typed coercion of untyped tool-call parameters.

XML-parameter formats (qwen3_coder, minimax_m2, DSML with string="false", glm47...)
carry every value as text. The tool's JSON schema decides what it becomes:
integer/number/boolean/null are converted, object/array are parsed as JSON (or a
Python literal, which models also write), anything else stays a string. A
parameter the schema does not declare stays a string. A value that does not fit
its declared type is kept as the string the model wrote rather than invented.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from ..conversation import ToolSpec

_SCALAR_ORDER = ("null", "boolean", "integer", "number", "object", "array", "string")
# Type names tool authors write that JSON Schema spells otherwise (Python's, C's).
_TYPE_ALIASES = {
    "float": "number",
    "double": "number",
    "int": "integer",
    "uint": "integer",
    "long": "integer",
    "int32": "integer",
    "int64": "integer",
    "float32": "number",
    "float64": "number",
    "bool": "boolean",
    "str": "string",
    "dict": "object",
    "list": "array",
}


def parameter_types(tool: ToolSpec | None, name: str) -> tuple[str, ...]:
    """The JSON types the tool's schema allows for parameter `name`, in the order we
    try them (a string is always the last resort). Empty when undeclared."""
    if tool is None or not isinstance(tool.parameters, dict):
        return ()
    found: set[str] = set()
    for props in _property_maps(tool.parameters):
        if name in props:
            _collect_types(props[name], found)
    return _ordered(found)


def tool_properties(tool: ToolSpec | None) -> dict[str, Any]:
    """Each declared parameter's schema, the top-level `oneOf`/`anyOf`/`allOf`
    branches' included (the first branch that declares a name wins)."""
    merged: dict[str, Any] = {}
    if tool is not None and isinstance(tool.parameters, dict):
        for props in _property_maps(tool.parameters):
            for key, schema in props.items():
                merged.setdefault(key, schema)
    return merged


def _property_maps(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The `properties` of an object schema and of its top-level `oneOf`/`anyOf`/
    `allOf` branches (a tool whose parameters are one of several shapes)."""
    maps = [schema["properties"]] if isinstance(schema.get("properties"), dict) else []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            if isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
                maps.append(sub["properties"])
    return maps


def schema_types(schema: Any) -> tuple[str, ...]:
    found: set[str] = set()
    _collect_types(schema, found)
    return _ordered(found)


def _ordered(found: set[str]) -> tuple[str, ...]:
    known = tuple(t for t in _SCALAR_ORDER if t in found)
    if found and not known:
        # Only type names JSON Schema does not have (`other_type`): the text decides,
        # as vLLM's and Dynamo's literal_eval fallback reads it.
        return _SCALAR_ORDER
    return known


def _collect_types(schema: Any, found: set[str]) -> None:
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(_TYPE_ALIASES.get(kind, kind))
    elif isinstance(kind, list):
        found.update(_TYPE_ALIASES.get(k, k) for k in kind if isinstance(k, str))
    if "enum" in schema and "type" not in schema:
        for value in schema["enum"]:
            found.add(_json_type(value))
    if "const" in schema and "type" not in schema:
        found.add(_json_type(schema["const"]))
    if "properties" in schema and "type" not in schema:
        found.add("object")
    if "items" in schema and "type" not in schema:
        found.add("array")
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            _collect_types(sub, found)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string"


def fits(value: Any, types: tuple[str, ...]) -> bool:
    """Whether a decoded JSON value is one of `types` (an integer is a number too);
    anything fits an undeclared parameter."""
    kind = _json_type(value)
    return not types or kind in types or (kind == "integer" and "number" in types)


def wants_string(types: tuple[str, ...]) -> bool:
    """Whether a value can be streamed as a JSON string while it is still arriving:
    the parameter is undeclared, or a string is the only thing it can be."""
    return not types or types == ("string",)


def coerce_value(text: str, types: tuple[str, ...]) -> Any:
    """Convert parameter text according to the allowed `types` (see
    `parameter_types`)."""
    if not types:
        return text
    stripped = text.strip()
    # Python's `None` (or `nil`) reads as null only where a string is not allowed:
    # for a `["string", "null"]` parameter "none" is a string (an enum value, a word).
    loose_null = "string" not in types
    for kind in types:
        ok, value = _TRY[kind](stripped)
        if ok:
            return value
        if kind == "null" and loose_null and stripped.lower() in ("none", "nil"):
            return None
    quoted = _quoted_scalar(stripped)
    if quoted is not None and "string" not in types:
        # `"42"` for a number: the model wrote the value as a JSON string; what it
        # holds is the value (as a delimited `3` in Gemma's syntax is 3).
        value = coerce_value(quoted, tuple(t for t in types if t not in ("object", "array")))
        if value is not quoted:
            return value
    if "boolean" in types and stripped in ("1", "0"):
        # Some families write booleans as digits (Spark 2.5); only where no other
        # allowed type took the text (an integer-or-boolean `1` stays 1).
        return stripped == "1"
    return text


def _quoted_scalar(s: str) -> str | None:
    """The text inside a JSON string literal (`"42"`), or None."""
    if len(s) < 2 or s[0] != '"' or s[-1] != '"':
        return None
    try:
        inner = json.loads(s)
    except ValueError:
        return None
    return inner if isinstance(inner, str) and inner.strip() == inner and inner else None


def _try_null(s: str) -> tuple[bool, Any]:
    return (s.lower() == "null", None)


def _try_boolean(s: str) -> tuple[bool, Any]:
    low = s.lower()
    if low in ("true", "false"):
        return True, low == "true"
    return False, None


def _try_integer(s: str) -> tuple[bool, Any]:
    try:
        return True, int(s)
    except ValueError:
        pass
    try:  # "3.0" for an integer parameter
        value = float(s)
    except ValueError:
        return False, None
    if value.is_integer():
        return True, int(value)
    return False, None


def _try_number(s: str) -> tuple[bool, Any]:
    try:
        value = float(s)
    except ValueError:
        return False, None
    if value != value or value in (float("inf"), float("-inf")):
        return False, None  # not representable in JSON
    return True, int(value) if value.is_integer() and "." not in s and "e" not in s.lower() else value


def _unescaped(s: str) -> str | None:
    """`[{\\"id\\": 1}]`: JSON the model escaped as if inside a string (GLM does
    this; SGLang's tests) is that JSON once unescaped."""
    if '\\"' not in s:
        return None
    try:
        inner = json.loads('"' + s + '"')
    except ValueError:
        return None
    return inner if isinstance(inner, str) else None


def _try_container(kind: type) -> Any:
    def attempt(s: str) -> tuple[bool, Any]:
        try:
            value = json.loads(s)
        except ValueError:
            try:
                value = ast.literal_eval(s)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                inner = _unescaped(s)
                if inner is None:
                    return False, None
                try:
                    value = json.loads(inner)
                except ValueError:
                    return False, None
        if isinstance(value, kind):
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                return False, None
            return True, value
        return False, None

    return attempt


def _try_string(s: str) -> tuple[bool, Any]:
    return False, None  # the caller keeps the original (unstripped) text


_TRY = {
    "null": _try_null,
    "boolean": _try_boolean,
    "integer": _try_integer,
    "number": _try_number,
    "object": _try_container(dict),
    "array": _try_container(list),
    "string": _try_string,
}


def dumps(value: Any) -> str:
    """The one JSON spelling every parser uses for arguments it builds itself."""
    return json.dumps(value, ensure_ascii=False)
