"""`/openapi.json` is a valid OpenAPI 3.1 document that names every route the server
serves, with the request schemas the routes enforce; the fuzz test's seed bodies
(tests/server/test_fuzz.py) conform to it, and it lists no POST endpoint the fuzz
test leaves out."""

from __future__ import annotations

import httpx
import jsonschema
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route

from tokenyard.server.app import create_app
from tokenyard.server.openapi import openapi_path

from .serving import running_server
from .test_fuzz import ENDPOINTS


@pytest.fixture(scope="module")
def served():
    with running_server("qwen3") as (url, state):
        response = httpx.get(f"{url}/openapi.json", timeout=30)
        assert response.status_code == 200 and response.headers["content-type"] == "application/json"
        yield url, state, response.json()


def test_the_document_is_valid_openapi_3_1(served):
    _, _, document = served
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_route_served_is_in_the_document(served):
    url, state, document = served
    app = create_app(state)  # the same routes the running server was built with
    served_routes = {
        (openapi_path(route.path), method.lower())
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert served_routes == documented
    assert {("/v1/messages", "post"), ("/v1/responses", "post"), ("/openapi.json", "get")} <= documented
    # What the document says is there answers (not the unknown-path 404).
    for path, method in documented:
        if method == "get":
            concrete = path.replace("{model_id}", "test/model")
            assert httpx.get(f"{url}{concrete}", timeout=30).status_code == 200, path


def _request_schema(document: dict, path: str) -> dict:
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    # Resolve the component references against the whole document.
    return {**schema, "components": document["components"]}


@pytest.mark.parametrize("path,valid,shape", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_the_fuzz_seeds_conform_to_the_documented_request_schemas(served, path, valid, shape):
    _, _, document = served
    jsonschema.Draft202012Validator(_request_schema(document, path)).validate(valid)
    documented_errors = document["paths"][path]["post"]["responses"]["4XX"]["content"]["application/json"]["schema"]
    assert documented_errors["$ref"].endswith("AnthropicError" if shape == "anthropic" else "OpenAIError")


def test_every_documented_post_endpoint_is_fuzzed(served):
    _, _, document = served
    posts = {path for path, item in document["paths"].items() if "post" in item}
    assert posts == {path for path, _, _ in ENDPOINTS}


def test_a_body_the_schema_refuses_is_refused_by_the_server(served):
    url, _, document = served
    body = {"model": "test/model", "max_tokens": 0, "messages": []}  # max_tokens >= 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_request_schema(document, "/v1/messages")).validate(body)
    response = httpx.post(f"{url}/v1/messages", json=body, timeout=30)
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"
