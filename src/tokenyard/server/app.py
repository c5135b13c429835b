"""The ASGI application: the composition of every API's routes.

Each API's routes turn a request into a `Conversation`, start it on the one
pipeline, and encode the events back in that API's grammar; nothing here talks to
an engine directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..apis.catalogs import catalog_etag, codex_catalog, with_codex_catalog
from ..apis.errors import ApiError, openai_error_body
from ..apis.models import ModelCard, anthropic_model, model_list, openai_model
from . import anthropic_routes, openai_chat_routes, responses_routes, tokenize_routes
from .anthropic_routes import anthropic_error
from .common import ServerConfig, ServerState, check_auth

__all__ = ["ServerConfig", "ServerState", "create_app"]

log = logging.getLogger("tokenyard.server.models")


def model_card(state: ServerState, model_id: str) -> ModelCard:
    """The served model's real limits: the engine's window; a request may ask for up
    to the whole window as output (generation stops where the window ends)."""
    model = state.pipeline.model
    window = state.pipeline.engine.info().max_model_len
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
    )


async def list_models(request: Request) -> Response:
    state: ServerState = request.app.state.tokenyard
    anthropic = "anthropic-version" in request.headers
    try:
        check_auth(request, state)
    except ApiError as error:
        return _models_error(error, anthropic)
    body = model_list([model_card(state, i) for i in state.model_ids()], anthropic)
    profile = state.config.codex_profile
    if anthropic or profile is None or "client_version" not in request.query_params:
        return JSONResponse(body)
    # Codex asking for its catalog (model_catalog_url): the same list plus `models`.
    catalog = codex_catalog(
        state.model_ids(),
        profile,
        context_window=state.pipeline.engine.info().max_model_len,
        reasoning=state.pipeline.model.profile.reasoning_parser is not None,
    )
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


async def get_model(request: Request) -> Response:
    state: ServerState = request.app.state.tokenyard
    anthropic = "anthropic-version" in request.headers
    model_id = request.path_params["model_id"]
    try:
        check_auth(request, state)
        state.check_model(model_id)
    except ApiError as error:
        return _models_error(error, anthropic)
    card = model_card(state, model_id)
    return JSONResponse(anthropic_model(card) if anthropic else openai_model(card))


def _models_error(error: ApiError, anthropic: bool) -> JSONResponse:
    if anthropic:
        return anthropic_error(error)
    return JSONResponse(openai_error_body(error), status_code=error.status)


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_app(state: ServerState) -> Starlette:
    routes = [
        *anthropic_routes.routes(),
        *responses_routes.routes(),
        *openai_chat_routes.routes(),
        *tokenize_routes.routes(),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", get_model, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        state.slots = asyncio.Semaphore(state.config.max_concurrency)
        await state.pipeline.engine.start()
        try:
            yield
        finally:
            await state.pipeline.engine.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.tokenyard = state
    return app
