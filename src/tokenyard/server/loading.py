"""From command-line settings to a served model and its engine."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from ..engines.base import Engine
from ..engines.remote import RemoteEngine
from ..engines.session_headers import SessionForwarding
from ..kv_blocks import KvEventSink
from ..models.builtin import BUILTIN_MODELS, builtin_gguf, builtin_of
from ..models.cache import cache_root
from ..models.resolve import load_model_tokenizer
from ..parsing.reasoning.parser import HARMONY_REASONING_NAMES, canonical_reasoning_name, reasoning_format
from ..parsing.registry import check_tool_parser_name
from ..prompting.profiles import detect_profile
from ..prompting.render import PromptRenderer
from ..prompting.template import ChatTemplate
from ..routing.dynamo import POLICY_PREFIX, DynamoSelector
from ..routing.kv_events import KvMirror
from ..routing.kv_index import KvIndex
from ..routing.kv_publisher import ZmqKvPublisher
from ..routing.kv_subscriber import KvEventSubscriber
from ..routing.pool import EnginePool, Worker
from ..routing.router import POLICIES, Router
from ..settings import ModelSettings
from .pipeline import ServedModel

# An HTTP header name (RFC 9110 token).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def load(settings: ModelSettings) -> tuple[ServedModel, Engine]:
    tokenizer, folder = load_model_tokenizer(settings.model, needs_weights=settings.engine == "embedded")
    source = settings.chat_template.read_text(encoding="utf-8") if settings.chat_template else tokenizer.chat_template
    if not source:
        raise ValueError(f"{settings.model}: no chat template found; pass --chat-template FILE")
    name_hint = settings.served_model_names[0] if settings.served_model_names else settings.model
    markers = None
    # Peer spellings (vLLM's `openai_gptoss`, SGLang's `deepseekv31`...) become ours.
    reasoning_name = canonical_reasoning_name(settings.reasoning_parser) if settings.reasoning_parser else None
    tool_name = check_tool_parser_name(settings.tool_call_parser) if settings.tool_call_parser else None
    if reasoning_name and reasoning_name not in HARMONY_REASONING_NAMES:
        fmt = reasoning_format(reasoning_name)
        markers = (fmt.start[-1], fmt.end[0])
    # A built-in model's GGUF served by path is that model: same detection, same defaults.
    builtin = builtin_of(settings.model)
    recover = settings.recover_fenced_calls
    if recover is None and builtin is not None:
        recover = builtin.recover_fenced_calls
    known = f"{builtin.name} " if builtin is not None else ""
    profile = detect_profile(folder, source, name=f"{known}{settings.model} {name_hint}").with_overrides(
        reasoning_name, tool_name, markers, recover
    )
    template = ChatTemplate(source, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token)
    renderer = PromptRenderer(profile, template, tokenizer, keep_anthropic_preamble=settings.keep_anthropic_preamble)
    names = settings.served_model_names or (served_id(settings.model),)
    penalty = builtin.frequency_penalty if builtin is not None and builtin.frequency_penalty else None
    model = ServedModel(
        names[0],
        profile,
        tokenizer,
        renderer,
        aliases=tuple(names[1:]),
        created=int(time.time()),
        frequency_penalty=penalty,
    )
    if settings.engine in ("scripted", "simulated"):
        from ..engines.scripted import ScriptedEngine

        scripted = ScriptedEngine(
            tokenizer,
            tool_format=profile.tool_parser,
            reasoning_format=profile.reasoning_parser,
            script=settings.script,
            token_delay=settings.token_delay,
            max_model_len=settings.max_model_len or 1_000_000,
            name=names[0],
        )
        engine: Engine = scripted
        if settings.engine == "simulated":
            from ..engines.simulated import SimulatedEngine

            window = settings.max_model_len or 262_144
            blocks = settings.kv_blocks or max(65_536, -(-window // settings.kv_block_size))

            def simulated(kv_events: KvEventSink | None = None) -> SimulatedEngine:
                return SimulatedEngine(
                    tokenizer,
                    scripted,
                    block_size=settings.kv_block_size,
                    num_blocks=blocks,
                    max_batched_tokens=settings.max_batched_tokens,
                    max_model_len=window,
                    time_scale=settings.time_scale,
                    kv_events=kv_events,
                    name=names[0],
                )

            engine = simulated() if settings.workers <= 1 else _simulated_pool(settings, simulated)
    elif settings.engine == "embedded":
        from ..engines.embedded import EmbeddedEngine

        if folder is None:
            raise ValueError("the embedded engine needs a model directory, a .gguf file or a built-in model")
        engine = EmbeddedEngine(folder)
    elif settings.engine == "remote":
        urls = settings.engine_urls or ((settings.engine_url,) if settings.engine_url else ())
        if not urls:
            raise ValueError("--engine remote needs --engine-url URL (an OpenAI-compatible completions server)")
        remotes = [
            RemoteEngine(
                url,
                model=settings.engine_model,
                api_key=settings.engine_api_key,
                max_model_len=settings.max_model_len,
                forward_priority=settings.forward_priority,
                session_forwarding=session_forwarding(settings),
            )
            for url in urls
        ]
        engine = remotes[0] if len(remotes) == 1 and not settings.kv_events else _remote_pool(settings, remotes)
    elif settings.engine == "llama.cpp":
        from ..engines.llama_server import LlamaServerEngine, find_llama_server

        if builtin is None and not settings.model.endswith(".gguf"):
            raise ValueError("--engine llama.cpp serves a .gguf file or a built-in model")
        gguf = builtin_gguf(builtin.name) if builtin is not None else Path(settings.model)
        engine = LlamaServerEngine(
            find_llama_server(cache_root()),
            gguf,
            context=settings.max_model_len,
            slots=settings.engine_slots,
            threads=settings.engine_threads,
        )
    else:
        raise ValueError(f"unknown engine {settings.engine!r}; known: embedded, scripted, simulated, remote, llama.cpp")
    return model, engine


def served_id(model: str) -> str:
    """The id a model is served under when no --served-model-name is given: a built-in
    model's name, a `.gguf` file's name without its folder and suffix, a model
    directory's name."""
    if model in BUILTIN_MODELS:
        return model
    path = Path(model)
    return path.stem if path.suffix == ".gguf" else path.name


def session_forwarding(settings: ModelSettings) -> SessionForwarding:
    names = tuple(n.strip().lower() for n in settings.session_header.split(",") if n.strip())
    if names == ("none",):
        names = ()
    bad = [n for n in names if not _TOKEN.fullmatch(n)]
    if bad:
        raise ValueError(f"--session-header: {', '.join(map(repr, bad))} is not an HTTP header name")
    return SessionForwarding(names, settings.forward_harness_headers)


def _router(settings: ModelSettings) -> Router:
    if settings.router_policy.startswith(POLICY_PREFIX):
        return Router(KvIndex())  # what routes while Dynamo's service does not answer
    if settings.router_policy not in POLICIES:
        known = ", ".join([*POLICIES, f"{POLICY_PREFIX}URL"])
        raise ValueError(f"unknown router policy {settings.router_policy!r}; known: {known}")
    return Router(KvIndex(), policy=settings.router_policy)


def _pool(settings: ModelSettings, workers: list[Worker], router: Router) -> EnginePool:
    oracle = None
    if settings.router_policy.startswith(POLICY_PREFIX):
        url = settings.router_policy.removeprefix(POLICY_PREFIX)
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"--router-policy {POLICY_PREFIX}URL: {url!r} is not an http(s) URL")
        if not any(w.events is not None for w in workers):
            raise ValueError(f"--router-policy {POLICY_PREFIX}URL needs workers that publish KV events (--kv-events)")
        names = settings.served_model_names or (served_id(settings.model),)
        oracle = DynamoSelector(url, names[0])
    return EnginePool(workers, router, oracle=oracle)


def _remote_pool(settings: ModelSettings, remotes: list[RemoteEngine]) -> EnginePool:
    if len(settings.kv_events) > len(remotes):
        raise ValueError(f"{len(settings.kv_events)} --kv-events endpoints for {len(remotes)} --engine-url workers")
    router = _router(settings)
    workers = []
    for n, remote in enumerate(remotes):
        name = remote.base_url.split("://", 1)[-1]
        events = None
        if n < len(settings.kv_events) and settings.kv_events[n]:
            endpoint, _, replay = settings.kv_events[n].partition(",")
            events = KvEventSubscriber(KvMirror(name, router.index), endpoint, replay_endpoint=replay or None)
        workers.append(Worker(name, remote, url=remote.base_url, events=events, health_url=f"{remote.base_url}/health"))
    return _pool(settings, workers, router)


def _simulated_pool(settings: ModelSettings, simulated: Callable[[KvEventSink], Engine]) -> EnginePool:
    """Simulated workers, each publishing vLLM-format KV events on a loopback port the
    router subscribes to: the same path a fleet of vLLM servers takes."""
    router = _router(settings)
    workers = []
    for n in range(settings.workers):
        name = f"simulated-{n}"
        publisher = ZmqKvPublisher("tcp://127.0.0.1:0", replay_endpoint="tcp://127.0.0.1:0")
        publisher.bind()
        assert publisher.replay_endpoint is not None
        events = KvEventSubscriber(
            KvMirror(name, router.index), publisher.endpoint, replay_endpoint=publisher.replay_endpoint
        )
        workers.append(Worker(name, simulated(publisher), events=events, publisher=publisher))
    return _pool(settings, workers, router)
