"""The ASGI application: the composition of every API's routes.

Each API's routes turn a request into a `Conversation`, start it on the one
pipeline, and encode the events back in that API's grammar; nothing here talks to
an engine directly.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..apis.anthropic.errors import ERRORS as ANTHROPIC_ERRORS
from ..apis.catalogs import catalog_etag, codex_catalog, with_codex_catalog
from ..apis.models import ModelCard, anthropic_model, model_list, openai_model
from ..apis.openai_chat.errors import ERRORS as OPENAI_ERRORS
from ..faults import ApiError, Fault
from ..routing.pool import EnginePool
from . import metrics, tokenize_routes, websocket
from . import routes as generation_routes
from .admission import PriorityGate
from .limits import GuardConfig, RequestGuard, error_table, normalize_hosts, normalize_origins
from .openapi import openapi_document
from .pipeline import Pipeline
from .routes import guarded
from .state import ServerConfig, ServerState

__all__ = ["ServerConfig", "ServerState", "create_app"]

log = logging.getLogger("tokenyard.server.models")


def model_card(state: ServerState, model_id: str) -> ModelCard:
    """The served model's real limits: the engine's window; a request may ask for up
    to the whole window as output (generation stops where the window ends). An alias
    carries its model's name as `display_name`."""
    pipeline = state.pipeline_for(model_id)
    model = pipeline.model
    window = pipeline.engine.info().max_model_len
    reads = model.renderer.template.traits.reads_kwargs
    thinking = model.profile.reasoning_parser is not None
    return ModelCard(
        id=model_id,
        created=model.created,
        max_input_tokens=window,
        max_tokens=window,
        thinking=thinking,
        thinking_switch=model.profile.thinking_kwarg is not None or "enable_thinking" in reads,
        effort=thinking and "reasoning_effort" in reads,
        display_name=model.name,
    )


def _models_route(handler: Callable[[Request, ServerState, bool], Awaitable[Response]]) -> Callable[..., Any]:
    """`/v1/models` answers in Anthropic's shape when the client sends
    `anthropic-version`, OpenAI's otherwise: its errors too."""

    async def endpoint(request: Request) -> Response:
        anthropic = "anthropic-version" in request.headers
        errors = ANTHROPIC_ERRORS if anthropic else OPENAI_ERRORS
        return await guarded(errors, lambda r, s: handler(r, s, anthropic))(request)

    return endpoint


async def list_models(request: Request, state: ServerState, anthropic: bool) -> Response:
    cards = [model_card(state, i) for i in state.model_ids()]
    body = model_list(cards, anthropic)
    profile = state.config.codex_catalog
    if anthropic or profile is None or "client_version" not in request.query_params:
        return JSONResponse(body)
    # Codex asking for its catalog (model_catalog_url): the same list plus `models`,
    # each id with its own model's window and effort levels.
    catalog = codex_catalog(cards, profile)
    body = with_codex_catalog(body, catalog)
    etag = catalog_etag(body)
    log.info(
        "Codex catalog (%d models) for client_version %s",
        len(catalog["models"]),
        request.query_params["client_version"],
    )
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    return JSONResponse(body, headers={"ETag": etag})


async def get_model(request: Request, state: ServerState, anthropic: bool) -> Response:
    model_id = request.path_params["model_id"]
    card = model_card(state, model_id)
    return JSONResponse(anthropic_model(card) if anthropic else openai_model(card))


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def unknown_path(request: Request, exc: Exception) -> Response:
    """404/405 in the envelope of the API the path belongs to, never an HTML page."""
    path = request.url.path
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        message = f"{request.method} is not allowed on {path}"
        error = ApiError(Fault.METHOD_NOT_ALLOWED, message)
    else:
        error = ApiError(Fault.NOT_FOUND, f"no such endpoint: {request.method} {path}")
    table = error_table(path)
    return JSONResponse(table.body(error), status_code=table.status(error))


class Dispatch:
    """Before the router, for every request: the API it came in on is named for the
    metrics, and a POST to a generation path goes straight to its endpoint. The
    router's matching and the exception middleware (two wrappers around `send`, three
    more coroutines resumed at every wait of a streamed response, ~50 calls a
    request) bring these nothing: their endpoints answer every error themselves
    (`routes.guarded`). Any other request, and any path the router would redirect
    or refuse, takes the router."""

    def __init__(self, app: ASGIApp, endpoints: Mapping[str, Callable[[Request], Awaitable[Response]]]):
        self.app = app
        self.endpoints = endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        metrics.name_api(scope["path"])
        endpoint = self.endpoints.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if endpoint is None or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        response = await endpoint(Request(scope, receive, send))
        await response(scope, receive, send)


class _App(Starlette):
    """Starlette with the request guard and `Dispatch` outermost, outside its own
    error middleware as well: a generation's endpoint answers every error itself, and
    that middleware wraps `send` (one more coroutine for every frame of a stream). A
    request the dispatch hands on gets Starlette's whole stack, as before."""

    def __init__(
        self, guard: GuardConfig, endpoints: Mapping[str, Callable[[Request], Awaitable[Response]]], **kwargs: Any
    ):
        self._guard = guard
        self._endpoints = endpoints
        super().__init__(**kwargs)

    def build_middleware_stack(self) -> ASGIApp:
        return RequestGuard(Dispatch(super().build_middleware_stack(), self._endpoints), config=self._guard)


def direct_endpoints(routes: list[Route]) -> dict[str, Callable[[Request], Awaitable[Response]]]:
    """The POST-only routes without path parameters, by their path."""
    return {r.path: r.endpoint for r in routes if r.methods == {"POST"} and not r.param_convertors}


def create_app(state: ServerState) -> Starlette:
    generation = generation_routes.routes()
    routes = [
        *generation,
        *tokenize_routes.routes(),
        *websocket.routes(),
        Route("/v1/models", _models_route(list_models), methods=["GET"]),
        Route("/v1/models/{model_id:path}", _models_route(get_model), methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics.metrics_endpoint, methods=["GET"]),
    ]
    document: dict[str, Any] = {}

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    routes.append(Route("/openapi.json", openapi, methods=["GET"]))
    document.update(openapi_document(routes))
    metrics.watch_pools([p.engine for p in state.pipelines if isinstance(p.engine, EnginePool)])

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.slots = PriorityGate(state.config.max_concurrency)
        started: list[Pipeline] = []
        try:
            for pipeline in state.pipelines:
                await pipeline.engine.start()
                started.append(pipeline)
            yield
        finally:
            for pipeline in reversed(started):
                await pipeline.engine.close()

    config = state.config
    guard = GuardConfig(
        api_key_set=bool(config.api_key),
        allowed_hosts=normalize_hosts(config.allowed_hosts.split(",")),
        allowed_origins=normalize_origins(config.allowed_origins.split(",")),
    )
    app = _App(
        guard,
        direct_endpoints(generation),
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: unknown_path, 405: unknown_path},
    )
    app.state.tokenyard = state
    return app
