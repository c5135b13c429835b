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
import re
from collections.abc import Mapping
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


def parameter_types(tool: ToolSpec | None, name: str, siblings: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The JSON types the tool's schema allows for parameter `name`, in the order we
    try them (a string is always the last resort). Empty when undeclared. Where the
    parameters are one of several shapes (a root `oneOf`/`anyOf`), `siblings` (the
    call's parameters already read) rule out the shapes whose `const`/`enum`
    discriminator they contradict."""
    found: set[str] = set()
    root = _root(tool)
    for shape in _shapes_for(root, siblings):
        for props in shape:
            if name in props:
                _collect_types(props[name], found, root)
    return _ordered(found)


def parameter_enum(tool: ToolSpec | None, name: str, siblings: Mapping[str, Any] | None = None) -> list[Any] | None:
    """The values `name` may take where every schema that declares it lists them
    (`enum` or `const`), else None."""
    root = _root(tool)
    values: list[Any] = []
    declared = False
    for shape in _shapes_for(root, siblings):
        for props in shape:
            if name in props:
                declared = True
                allowed = _allowed_values(_resolve(props[name], root))
                if allowed is None:
                    return None
                values.extend(allowed)
    return values if declared else None


def ambiguous_shape(tool: ToolSpec | None, name: str, siblings: Mapping[str, Any] | None = None) -> bool:
    """Whether the shapes `siblings` leave open give `name` different types (the
    value can not be typed until a later discriminator is read)."""
    root = _root(tool)
    seen: set[tuple[str, ...]] = set()
    for shape in _shapes_for(root, siblings):
        found: set[str] = set()
        for props in shape:
            if name in props:
                _collect_types(props[name], found, root)
        seen.add(_ordered(found))
    return len(seen) > 1


def has_shapes(tool: ToolSpec | None) -> bool:
    """Whether the tool's parameters are one of several shapes (a root `oneOf`/`anyOf`)."""
    root = _root(tool)
    return len(_shapes(root, root, frozenset())) > 1


def tool_properties(tool: ToolSpec | None) -> dict[str, Any]:
    """Each declared parameter's schema, the top-level `oneOf`/`anyOf`/`allOf`
    branches' included (the first branch that declares a name wins)."""
    merged: dict[str, Any] = {}
    root = _root(tool)
    for shape in _shapes(root, root, frozenset()):
        for props in shape:
            for key, schema in props.items():
                merged.setdefault(key, _resolve(schema, root))
    return merged


def _root(tool: ToolSpec | None) -> dict[str, Any]:
    return tool.parameters if tool is not None and isinstance(tool.parameters, dict) else {}


def _resolve(schema: Any, root: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """A local `$ref` (`#/$defs/x`, JSON-pointer escapes included) followed to its
    schema; a missing or cyclic one is an empty schema."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if not ref.startswith("#") or ref in seen:
            return {}
        seen = seen | {ref}
        target: Any = root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        schema = target if isinstance(target, dict) else {}
    return schema


def _shapes(schema: Any, root: dict[str, Any], seen: frozenset[int]) -> list[list[dict[str, Any]]]:
    """Each shape the parameters may take, as the property maps it combines: a
    schema's own `properties` with every `allOf` part's, times each `oneOf`/`anyOf`
    branch."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or id(schema) in seen:
        return [[]]
    seen = seen | {id(schema)}
    shapes: list[list[dict[str, Any]]] = [[schema["properties"]] if isinstance(schema.get("properties"), dict) else []]
    for part in schema.get("allOf") or ():
        shapes = [shape + extra for shape in shapes for extra in _shapes(part, root, seen)]
    for key in ("anyOf", "oneOf"):
        branches = [branch for sub in schema.get(key) or () for branch in _shapes(sub, root, seen)]
        if branches:
            shapes = [shape + branch for shape in shapes for branch in branches]
    return shapes


def _shapes_for(root: dict[str, Any], siblings: Mapping[str, Any] | None) -> list[list[dict[str, Any]]]:
    shapes = _shapes(root, root, frozenset())
    if not siblings or len(shapes) < 2:
        return shapes
    kept = [shape for shape in shapes if _consistent(shape, siblings, root)]
    return kept or shapes


def _consistent(shape: list[dict[str, Any]], siblings: Mapping[str, Any], root: dict[str, Any]) -> bool:
    for props in shape:
        for key, value in siblings.items():
            if key in props:
                allowed = _allowed_values(_resolve(props[key], root))
                if allowed is not None and not any(_same(value, a) for a in allowed):
                    return False
    return True


def _allowed_values(schema: Any) -> list[Any] | None:
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are one number, true is not 1."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def schema_types(schema: Any) -> tuple[str, ...]:
    found: set[str] = set()
    _collect_types(schema, found, {})
    return _ordered(found)


def _ordered(found: set[str]) -> tuple[str, ...]:
    known = tuple(t for t in _SCALAR_ORDER if t in found)
    if found and not known:
        # Only type names JSON Schema does not have (`other_type`): the text decides,
        # as vLLM's and Dynamo's literal_eval fallback reads it.
        return _SCALAR_ORDER
    return known


def _collect_types(schema: Any, found: set[str], root: dict[str, Any]) -> None:
    schema = _resolve(schema, root)
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
            _collect_types(sub, found, root)


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


def coerce_value(text: str, types: tuple[str, ...], enum: list[Any] | None = None) -> Any:
    """Convert parameter text according to the allowed `types` (see
    `parameter_types`); where the schema lists the allowed values (`enum`), the
    reading that is one of them wins (`"7"` for `enum: ["7", 8]` stays a string)."""
    value = _coerce(text, types)
    if enum is None or any(_same(value, allowed) for allowed in enum):
        return value
    for kind in types:
        ok, other = _TRY[kind](text.strip())
        if ok and any(_same(other, allowed) for allowed in enum):
            return other
    return text if text in enum else value


def _coerce(text: str, types: tuple[str, ...]) -> Any:
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
    if quoted is not None and "string" in types and len(types) > 1:
        # `"null"` where a string or null is allowed: the quotes say which.
        return quoted
    if quoted is not None and "string" not in types:
        # `"42"` for a number: the model wrote the value as a JSON string; what it
        # holds is the value (as a delimited `3` in Gemma's syntax is 3).
        value = _coerce(quoted, tuple(t for t in types if t not in ("object", "array")))
        if value is not quoted:
            return value
    if stripped.lower() == "null" and "string" not in types:
        # `null` for a parameter no string can fill: the model gave no value
        # (vLLM's and SGLang's qwen3_coder read it so); only a string keeps the word.
        return None
    if "boolean" in types and stripped in ("1", "0"):
        # Some families write booleans as digits (Spark 2.5); only where no other
        # allowed type took the text (an integer-or-boolean `1` stays 1).
        return stripped == "1"
    return text


def _quoted_scalar(s: str) -> str | None:
    """The text inside a JSON string literal (`"42"`, or escaped as if inside a
    string: `\\"42\\"`), or None."""
    if len(s) >= 4 and s.startswith('\\"') and s.endswith('\\"'):
        s = s[1:-2] + '"'
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


_INTEGER = re.compile(r"-?[0-9]+\Z").match


def _plain_number(s: str) -> bool:
    """Python's int() and float() also read `123_456` and non-ASCII digits; a
    parameter value is a number only as JSON (or Python without separators) writes it."""
    return s.isascii() and "_" not in s


def _try_integer(s: str) -> tuple[bool, Any]:
    if not _plain_number(s):
        return False, None
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
    if not _plain_number(s):
        return False, None
    if _INTEGER(s):  # exactly: a float would round 9007199254740993
        return True, int(s)
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
