"""Prometheus metrics (`GET /metrics`), names prefixed `tokenyard_`.

Per request (labels `api`, `model`): time to first token, inter-token latency,
end-to-end latency, prompt/cached/completion tokens, engine errors, the prefix each
session turn reused from the session's previous prompt and the cause of every
divergence, and the dispatch lead time (a tool call ready → the end of its turn:
how much earlier streaming dispatch starts the tool). The queue: wait and depth.
Per worker of an engine pool (label `worker`), read when scraped: routing
decisions by reason, prompt tokens routed and the overlap expected there, in-flight
requests and load, health, blocks indexed from KV events, event gaps, errors, and
the time to first token seen from each worker.

The `api` label comes from the request path (`name_api`, called for every request
before its route), so no route has to pass it along.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from ..events import Event, Finish, PromptProcessed, StreamError, ToolCallReady

if TYPE_CHECKING:
    from ..routing.pool import EnginePool, Worker
    from .pipeline import Generation

REGISTRY = CollectorRegistry()

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_TOKEN_GAP = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28)
_RATIO = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)

# Per-request metrics are labelled by API and model (see above).
_REQUEST = ("api", "model")


def _histogram(
    name: str, help: str, labels: tuple[str, ...] = _REQUEST, buckets: tuple[float, ...] = _LATENCY
) -> Histogram:
    return Histogram(name, help, labels, buckets=buckets, registry=REGISTRY)


def _counter(name: str, help: str, labels: tuple[str, ...] = _REQUEST) -> Counter:
    return Counter(name, help, labels, registry=REGISTRY)


TTFT = _histogram("tokenyard_time_to_first_token_seconds", "Request arrival to the first output")
INTER_TOKEN = _histogram(
    "tokenyard_inter_token_latency_seconds", "Gap between consecutive output events", buckets=_TOKEN_GAP
)
E2E = _histogram("tokenyard_request_duration_seconds", "Request arrival to the end of its answer")
QUEUE_WAIT = _histogram("tokenyard_queue_wait_seconds", "Time waiting for a generation slot", labels=())
QUEUE_DEPTH = Gauge("tokenyard_queue_depth", "Requests waiting for a generation slot", registry=REGISTRY)
PROMPT_TOKENS = _counter("tokenyard_prompt_tokens", "Prompt tokens")
CACHED_TOKENS = _counter("tokenyard_cached_tokens", "Prompt tokens the engine found in its prefix cache")
COMPLETION_TOKENS = _counter("tokenyard_completion_tokens", "Generated tokens")
PREFIX_REUSE = _histogram(
    "tokenyard_prefix_reuse_ratio",
    "Per session turn: the share of the prompt that repeats the session's previous prompt",
    buckets=_RATIO,
)
DIVERGENCES = _counter(
    "tokenyard_prefix_divergences",
    "Session prompts that broke the previous prompt's prefix, by cause (expected ones: see "
    "prefix_watch.EXPECTED_CAUSES)",
    labels=(*_REQUEST, "cause"),
)
DISPATCH_LEAD = _histogram("tokenyard_dispatch_lead_seconds", "A tool call ready to dispatch → the end of its turn")
WEBSOCKET_CONNECTIONS = _counter(
    "tokenyard_websocket_connections", "Responses WebSocket connections accepted", labels=()
)
WEBSOCKET_RESPONSES = _counter(
    "tokenyard_websocket_responses", "Responses generated over a Responses WebSocket", labels=("model",)
)
ENGINE_ERRORS = _counter("tokenyard_engine_errors", "Generations that ended with an engine error")
SAFEGUARD_VERDICTS = _counter(
    "tokenyard_safeguard_verdicts",
    "Tool calls judged for a client's auto mode, by outcome (flagged, not_flagged, or why there was no verdict: "
    "timeout, error, input_too_long, truncated)",
    labels=("model", "outcome"),
)
SAFEGUARD_SECONDS = _histogram("tokenyard_safeguard_seconds", "A tool call complete → its verdict", labels=("model",))
WORKER_TTFT = _histogram(
    "tokenyard_worker_time_to_first_token_seconds", "Dispatch to a worker → its first chunk", labels=("worker",)
)

_API: contextvars.ContextVar[str] = contextvars.ContextVar("tokenyard_api", default="other")
_API_PATHS = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}


def name_api(path: str) -> None:
    """Names the API a request came in on (by its path), for the labels of what it produces."""
    _API.set(next((api for prefix, api in _API_PATHS.items() if path.startswith(prefix)), "other"))


def observe_queue_wait(seconds: float) -> None:
    QUEUE_WAIT.observe(seconds)


def observe_worker_ttft(worker: str, seconds: float) -> None:
    WORKER_TTFT.labels(worker).observe(seconds)


@dataclass(frozen=True)
class _Series:
    """The per-request metrics of one (api, model) pair, each looked up once: a
    `labels()` lookup costs ~8 calls, and two of them lay on the way to the first token."""

    ttft: Histogram
    inter_token: Histogram
    e2e: Histogram
    prompt_tokens: Counter
    cached_tokens: Counter
    completion_tokens: Counter
    prefix_reuse: Histogram
    dispatch_lead: Histogram
    engine_errors: Counter


@cache  # a handful of pairs: the APIs times the served models
def _series(api: str, model: str) -> _Series:
    return _Series(
        ttft=TTFT.labels(api, model),
        inter_token=INTER_TOKEN.labels(api, model),
        e2e=E2E.labels(api, model),
        prompt_tokens=PROMPT_TOKENS.labels(api, model),
        cached_tokens=CACHED_TOKENS.labels(api, model),
        completion_tokens=COMPLETION_TOKENS.labels(api, model),
        prefix_reuse=PREFIX_REUSE.labels(api, model),
        dispatch_lead=DISPATCH_LEAD.labels(api, model),
        engine_errors=ENGINE_ERRORS.labels(api, model),
    )


async def observed(generation: Generation, events: AsyncIterator[Event]) -> AsyncGenerator[Event]:
    """`events`, passed through while they are measured; closing this closes
    `events` (which aborts the engine request if it is still running)."""
    labels = (_API.get(), generation.pipeline.model.name)
    series = _series(*labels)
    started = time.perf_counter()
    report = generation.prefix
    if report is not None and report.previous_tokens:
        series.prefix_reuse.observe(report.matched_tokens / max(1, report.prompt_tokens))
        if report.divergence is not None:
            DIVERGENCES.labels(*labels, report.divergence.cause).inc()
    last_output: float | None = None
    ready: list[float] = []
    inter_token = series.inter_token
    try:
        async for event in events:
            now = time.perf_counter()
            kind = type(event)
            if kind is PromptProcessed or kind is Finish or kind is StreamError:
                if type(event) is Finish:
                    usage = event.usage
                    series.prompt_tokens.inc(usage.prompt_tokens)
                    series.cached_tokens.inc(usage.cached_tokens)
                    series.completion_tokens.inc(usage.completion_tokens)
                    series.e2e.observe(now - started)
                    for at in ready:
                        series.dispatch_lead.observe(now - at)
                elif kind is StreamError:
                    series.engine_errors.inc()
            else:
                if last_output is None:
                    series.ttft.observe(now - started)
                else:
                    inter_token.observe(now - last_output)
                last_output = now
                if kind is ToolCallReady:
                    ready.append(now)
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


class _PoolCollector(Collector):
    """The engine pools' per-worker state (one pool per served model that has one),
    read when scraped."""

    def __init__(self, pools: list[EnginePool]):
        self.pools = pools

    def collect(self) -> Iterable[Any]:
        decisions = CounterMetricFamily(
            "tokenyard_routing_decisions", "Requests routed, by worker and reason", labels=["worker", "reason"]
        )
        for pool in self.pools:
            for (name, reason), count in sorted(pool.stats.decisions.items()):
                decisions.add_metric([name, reason], count)
        yield decisions

        def per_worker(
            family: CounterMetricFamily | GaugeMetricFamily, value: Callable[[EnginePool, Worker], float | None]
        ) -> Any:
            for pool in self.pools:
                for name, worker in sorted(pool.workers.items()):
                    measured = value(pool, worker)
                    if measured is not None:
                        family.add_metric([name], measured)
            return family

        def counter(name: str, doc: str) -> CounterMetricFamily:
            return CounterMetricFamily(name, doc, labels=["worker"])

        def gauge(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=["worker"])

        yield per_worker(
            counter("tokenyard_routing_prompt_tokens", "Prompt tokens routed to each worker"),
            lambda p, w: p.stats.prompt_tokens[w.name],
        )
        yield per_worker(
            counter(
                "tokenyard_routing_overlap_tokens", "Prompt tokens routed to a worker expected to hold them cached"
            ),
            lambda p, w: p.stats.overlap_tokens[w.name],
        )
        yield per_worker(counter("tokenyard_worker_errors", "Failures of each worker"), lambda p, w: w.errors)
        yield per_worker(
            counter("tokenyard_kv_event_gaps", "Sequence gaps in a worker's KV events"),
            lambda p, w: w.events.stats.gaps if w.events else None,
        )
        yield per_worker(gauge("tokenyard_worker_healthy", "1 while the worker is in the pool"), lambda p, w: w.healthy)
        yield per_worker(gauge("tokenyard_worker_requests", "In-flight requests"), lambda p, w: w.load.requests)
        yield per_worker(
            gauge("tokenyard_worker_load_tokens", "Prompt tokens to prefill + expected output tokens in flight"),
            lambda p, w: w.load.tokens,
        )
        yield per_worker(
            gauge("tokenyard_worker_cached_blocks", "KV blocks the worker holds, from its events"),
            lambda p, w: p.router.index.block_count(w.name) if w.events else None,
        )


_watched: list[_PoolCollector] = []


def watch_pools(pools: Iterable[EnginePool]) -> None:
    """Export the workers of `pools` (one per served model with a pool; the pools
    watched last replace any before them)."""
    for collector in _watched:
        REGISTRY.unregister(collector)
    _watched.clear()
    collector = _PoolCollector(list(pools))
    REGISTRY.register(collector)
    _watched.append(collector)
    for pool in collector.pools:
        pool.on_first_chunk = observe_worker_ttft


def set_queue_depth(waiting: int) -> None:
    QUEUE_DEPTH.set(waiting)


async def metrics_endpoint(request: Request) -> Response:
    state = request.app.state.tokenyard
    set_queue_depth(state.waiting)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def observe_verdict(model: str, outcome: str, seconds: float) -> None:
    SAFEGUARD_VERDICTS.labels(model, outcome).inc()
    SAFEGUARD_SECONDS.labels(model).observe(seconds)
