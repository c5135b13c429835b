"""`/openapi.json`: an OpenAPI 3.1 document of the endpoints this server serves.

Paths come from the app's own routes; request bodies are the JSON Schemas of the
pydantic models the routes validate with (the same classes, so the document can
not drift from what is enforced); each route says here only what a model can not:
its summary, which API's error envelope it answers in, and whether it streams.
A route with no entry here fails at start-up, so none goes undocumented.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.routing import BaseRoute, Route

from .. import __version__
from ..apis.anthropic.schema import CountTokensRequest, MessagesRequest
from ..apis.openai_chat.schema import ChatCompletionRequest
from ..apis.openai_responses.schema import ResponsesRequest
from .tokenize_routes import DetokenizeRequest, TokenizeChatRequest, TokenizeTextRequest


@dataclass(frozen=True)
class Operation:
    summary: str
    errors: Literal["anthropic", "openai"]  # the envelope its refusals come in
    body: tuple[type[BaseModel], ...] = ()  # one of these models (POST)
    streams: bool = False  # `"stream": true` answers text/event-stream
    media_type: str = "application/json"


OPERATIONS: dict[tuple[str, str], Operation] = {
    ("/v1/messages", "post"): Operation("Anthropic Messages", "anthropic", (MessagesRequest,), streams=True),
    ("/v1/messages/count_tokens", "post"): Operation(
        "Anthropic token count of a Messages request", "anthropic", (CountTokensRequest,)
    ),
    ("/v1/chat/completions", "post"): Operation(
        "OpenAI Chat Completions", "openai", (ChatCompletionRequest,), streams=True
    ),
    ("/v1/responses", "post"): Operation("OpenAI Responses", "openai", (ResponsesRequest,), streams=True),
    ("/v1/tokenize", "post"): Operation(
        "Tokenize a prompt, or a chat as generation would render it (vLLM)",
        "openai",
        (TokenizeTextRequest, TokenizeChatRequest),
    ),
    ("/v1/detokenize", "post"): Operation("Token ids back to text (vLLM)", "openai", (DetokenizeRequest,)),
    ("/v1/models", "get"): Operation(
        "The served models (Anthropic's shape with an `anthropic-version` header, else OpenAI's)", "openai"
    ),
    ("/v1/models/{model_id}", "get"): Operation("One served model", "openai"),
    ("/health", "get"): Operation("Liveness", "openai"),
    ("/metrics", "get"): Operation("Prometheus metrics", "openai", media_type="text/plain"),
    ("/openapi.json", "get"): Operation("This document", "openai"),
}

_STRING = {"type": "string"}
_NULLABLE_STRING = {"type": ["string", "null"]}
ERROR_SCHEMAS: dict[str, dict[str, Any]] = {
    "AnthropicError": {
        "type": "object",
        "required": ["type", "error"],
        "properties": {
            "type": {"const": "error"},
            "error": {
                "type": "object",
                "required": ["type", "message"],
                "properties": {"type": _STRING, "message": _STRING},
            },
        },
    },
    "OpenAIError": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "param", "code"],
                "properties": {
                    "message": _STRING,
                    "type": _STRING,
                    "param": _NULLABLE_STRING,
                    "code": _NULLABLE_STRING,
                },
            }
        },
    },
}
_ERROR_REF = {"anthropic": "#/components/schemas/AnthropicError", "openai": "#/components/schemas/OpenAIError"}
# `{model_id:path}` (starlette's converter syntax) is `{model_id}` in OpenAPI.
_CONVERTER = re.compile(r"\{(\w+):\w+\}")


def openapi_path(path: str) -> str:
    return _CONVERTER.sub(r"{\1}", path)


def openapi_document(routes: Iterable[BaseRoute]) -> dict[str, Any]:
    """The document for `routes`; raises KeyError for a route with no `OPERATIONS` entry."""
    served = [
        (openapi_path(route.path), method.lower(), route)
        for route in routes
        if isinstance(route, Route)
        for method in sorted(route.methods or ())
        if method != "HEAD"  # starlette adds HEAD to every GET
    ]
    operations = {(path, method): OPERATIONS[(path, method)] for path, method, _ in served}
    models = list(dict.fromkeys(model for op in operations.values() for model in op.body))
    refs, definitions = models_json_schema(
        [(model, "validation") for model in models], ref_template="#/components/schemas/{model}"
    )
    paths: dict[str, dict[str, Any]] = {}
    for path, method, route in served:
        item = _operation(
            operations[(path, method)], [refs[(m, "validation")] for m in operations[(path, method)].body]
        )
        params = list(route.param_convertors)
        if params:
            item["parameters"] = [{"name": p, "in": "path", "required": True, "schema": _STRING} for p in params]
        paths.setdefault(path, {})[method] = item
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tokenyard",
            "version": __version__,
            "description": "Anthropic Messages, OpenAI Chat Completions and OpenAI Responses in front of model engines.",
        },
        "paths": paths,
        "components": {
            "schemas": {**definitions.get("$defs", {}), **ERROR_SCHEMAS},
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
        # A key is needed only when the server was started with one.
        "security": [{}, {"apiKey": []}, {"bearer": []}],
    }


def _operation(op: Operation, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    success: dict[str, Any] = {
        op.media_type: {"schema": {"type": "object"} if op.media_type.endswith("json") else _STRING}
    }
    if op.streams:
        success["text/event-stream"] = {"schema": _STRING}
    error = {
        "description": "refused or failed, in the API's error envelope",
        "content": {"application/json": {"schema": {"$ref": _ERROR_REF[op.errors]}}},
    }
    item: dict[str, Any] = {
        "summary": op.summary,
        "responses": {"200": {"description": "success", "content": success}, "4XX": error, "5XX": error},
    }
    if bodies:
        schema = bodies[0] if len(bodies) == 1 else {"anyOf": bodies}
        item["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
    return item
