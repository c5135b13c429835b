"""Structured outputs: whether an answer has the shape the request demanded.

One check for every API and engine (sans-IO). An engine that guides its decoding
produces conforming JSON by construction; one that cannot is still held to the
format here, so a client never receives a non-conforming answer as a normal finish.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import referencing.exceptions

from .conversation import OutputFormat
from .faults import InvalidOutputFormat


def output_format(kind: str, schema: Any, *, name: str | None, where: str, schema_param: str) -> OutputFormat | None:
    """The canonical format for what a request asked (`kind` "text": none). Raises
    `InvalidOutputFormat` naming `schema_param` for a missing or invalid schema."""
    if kind == "text":
        return None
    if kind == "json_object":
        return OutputFormat(type="json_object", name=name)
    if kind != "json_schema":
        raise InvalidOutputFormat(f"{where}.type: unsupported output format {kind!r}", f"{where}.type")
    if schema is None:
        raise InvalidOutputFormat(f"{schema_param}: a json_schema format needs a schema", schema_param)
    if not isinstance(schema, dict):
        raise InvalidOutputFormat(f"{schema_param}: a schema must be a JSON object", schema_param)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise InvalidOutputFormat(f"{schema_param}: not a valid JSON Schema: {error.message}", schema_param) from None
    return OutputFormat(type="json_schema", json_schema=schema, name=name)


def output_violation(form: OutputFormat, text: str) -> str | None:
    """Why `text` does not have the shape `form` demands, or None when it does."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "the model's answer is not JSON"
    if form.type == "json_object" or form.json_schema is None:
        return None if isinstance(value, dict) else "the model's answer is not a JSON object"
    schema = form.json_schema
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except (referencing.exceptions.Unresolvable, RecursionError) as problem:
        return f"the answer could not be checked against the schema: {problem}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"the model's answer does not match the schema at {where}: {error.message}"
