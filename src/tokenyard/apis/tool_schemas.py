"""Tool schemas checked at the edge.

Parsers, the scripted engine and templates walk a tool's JSON Schema (coercion of
XML parameter values reads `type`, `enum`, `anyOf`…). A keyword whose value has the
wrong shape (`"anyOf": 5`, `"enum": 5`, `"required": "path"`) is refused with a 400
naming it; anything else odd but harmless (an unknown `type` name, a dangling
`$ref`, vendor keywords) is accepted, and the parameter is then treated as untyped.
"""

from __future__ import annotations

from typing import Any

from .errors import invalid_request

# Keywords whose value is one subschema.
_SCHEMA = (
    *("additionalProperties", "additionalItems", "not", "contains", "propertyNames", "if", "then", "else"),
    *("unevaluatedProperties", "unevaluatedItems"),
)
# Keywords whose value maps names to subschemas.
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Keywords whose value is a list of subschemas.
_SCHEMA_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")


def check_tool_schema(schema: Any, where: str) -> None:
    """Raise a 400 naming the first ill-shaped keyword of a tool's parameter schema."""
    if not isinstance(schema, dict):
        raise invalid_request(f"{where}: a tool's parameter schema must be a JSON object", where)
    _check(schema, where)


def _check(schema: Any, where: str) -> None:
    if isinstance(schema, bool):
        return  # `true` / `false` are schemas too
    if not isinstance(schema, dict):
        raise invalid_request(f"{where}: a schema must be an object or a boolean", where)
    kind = schema.get("type")
    if kind is not None and not (
        isinstance(kind, str) or (isinstance(kind, list) and all(isinstance(k, str) for k in kind))
    ):
        _bad(where, "type", "a type name or a list of type names")
    if "required" in schema and not (
        isinstance(schema["required"], list) and all(isinstance(r, str) for r in schema["required"])
    ):
        _bad(where, "required", "a list of property names")
    if "enum" in schema and not isinstance(schema["enum"], list):
        _bad(where, "enum", "a list of values")
    for key in _SCHEMA:
        if key in schema:
            _check(schema[key], f"{where}.{key}")
    for key in _SCHEMA_MAP:
        if key in schema:
            if not isinstance(schema[key], dict):
                _bad(where, key, "an object of schemas")
            for name, sub in schema[key].items():
                _check(sub, f"{where}.{key}.{name}")
    for key in _SCHEMA_LIST:
        if key in schema:
            if not isinstance(schema[key], list):
                _bad(where, key, "a list of schemas")
            for i, sub in enumerate(schema[key]):
                _check(sub, f"{where}.{key}.{i}")
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, list):  # the older tuple form
            for i, sub in enumerate(items):
                _check(sub, f"{where}.items.{i}")
        else:
            _check(items, f"{where}.items")


def _bad(where: str, key: str, expected: str) -> None:
    raise invalid_request(f"{where}.{key}: must be {expected}", f"{where}.{key}")
