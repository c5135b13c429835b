"""Every setting of `tokenyard serve`, declared once.

Each setting is one typed dataclass field with its help (`setting(...)`). From that
declaration come its command-line flag (`--max-model-len`), its environment variable
(`TOKENYARD_MAX_MODEL_LEN`), its key in a models file (`ModelSettings` fields only)
and its row in the README's flag tables. A value that cannot be read is a
`SettingError`: one line naming the setting, what it was given and what it takes.

`ModelSettings` describes one served model (a models-file entry has the same keys);
`ServeSettings` is the rest of the server.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Defaults other modules take too (the library's own defaults are the flags').
DEFAULT_MODEL = "smollm2"
# The longest an engine may stay silent (before its first chunk or between two)
# before the pipeline aborts the generation. Engines that work long before their
# first token (the embedded engine's prefill on a CPU) send heartbeats: empty chunks.
DEFAULT_ENGINE_TIMEOUT = 120.0
# The output cap of a request that states none (Codex sends none).
DEFAULT_MAX_TOKENS = 4096
DEFAULT_SAFEGUARDS_TIMEOUT = 60.0
DEFAULT_SESSION_HEADERS = ("x-session-id",)
# The Codex catalog entry whose profile served ids inherit where none is named
# (`tokenyard codex-catalog`, the servers `tokenyard codex` starts).
DEFAULT_CODEX_PROFILE = "gpt-5.5"

ENV_PREFIX = "TOKENYARD_"
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off", "")


class SettingError(ValueError):
    """A value a setting cannot take; the message is one line naming both."""


@dataclass(frozen=True)
class Spec:
    """What a field's declaration says besides its type and default."""

    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    # Choices that carry a value after them ("dynamo=" takes dynamo=URL).
    prefixed_choices: tuple[str, ...] = ()
    # The flag when it is not the field's name (`--engine-url` fills `engine_urls`).
    flag: str | None = None
    # Older environment variables that still work (TOKENYARD_SEAL_KEY).
    env_aliases: tuple[str, ...] = ()
    # How one environment variable holds a list.
    separator: str = ","
    # README table the setting is listed in.
    table: str = "serve"
    # Describes one served model only: never inherited by a models-file entry; and,
    # unless `alone` says it may be given anyway, refused without --model (it
    # belongs in a --serve-model or models-file entry then).
    per_model: bool = False
    alone: bool = False
    # A models-file key (ModelSettings fields), under this name when not the field's.
    key: str | None = None
    # The range a number may take (`above`: that value itself refused, as a timeout of 0
    # that would close every connection at once). A float is always finite.
    at_least: float | None = None
    above: float | None = None
    at_most: float | None = None


def setting(default: Any, help: str, **spec: Any) -> Any:
    """A declared setting: a dataclass field whose metadata is its `Spec`."""
    return field(default=default, metadata={"setting": Spec(help, **spec)})


@dataclass(frozen=True)
class Setting:
    """One declaration, read back: the field, its type and its `Spec`."""

    name: str
    kind: type  # str, int, float, bool or Path
    optional: bool  # None is a value
    many: bool  # a tuple of `kind`, the flag repeatable
    default: Any
    spec: Spec

    @property
    def flag(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag[2:].upper().replace("-", "_")

    @property
    def key(self) -> str:
        return self.spec.key or self.name

    @property
    def switch(self) -> bool:
        return self.kind is bool and not self.many

    @property
    def accepts(self) -> str:
        if self.spec.choices:
            return "one of " + ", ".join((*self.spec.choices, *(p + "…" for p in self.spec.prefixed_choices)))
        kind = {
            int: "an integer",
            float: "a number",
            bool: "1/0, true/false, yes/no or on/off",
            Path: "a file path",
        }.get(self.kind, "text")
        low, above, high = self.spec.at_least, self.spec.above, self.spec.at_most
        if low is not None and high is not None:
            return f"{kind} from {low:g} to {high:g}"
        if low is not None:
            return f"{kind} of at least {low:g}"
        if above is not None:
            return f"{kind} above {above:g}"
        return kind

    def within(self, value: Any) -> bool:
        """Whether a number is in the declared range (and, a float, finite); any other
        kind of value is."""
        if self.kind not in (int, float):
            return True
        if self.kind is float and not math.isfinite(value):
            return False
        low, above, high = self.spec.at_least, self.spec.above, self.spec.at_most
        return (low is None or value >= low) and (above is None or value > above) and (high is None or value <= high)

    def read(self, text: str, where: str) -> Any:
        """One value as written in a variable or a file; `where` names it."""
        try:
            return self._value(text)
        except ValueError:
            raise SettingError(f"{where}: {text!r} is not {self.accepts}") from None

    def parse_flag(self, text: str) -> Any:
        """One value as written after the flag (argparse's `type`)."""
        try:
            return self._value(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.accepts}") from None

    def _value(self, text: str) -> Any:
        if self.kind is bool:
            lowered = text.strip().lower()
            if lowered not in TRUE + FALSE:
                raise ValueError(text)
            return lowered in TRUE
        value: Any = self.kind(text)
        if self.spec.choices and value not in self.spec.choices:
            if not any(value.startswith(p) for p in self.spec.prefixed_choices):
                raise ValueError(text)
        if not self.within(value):
            raise ValueError(text)
        return Path(value).expanduser() if self.kind is Path else value

    def from_env(self, environ: Mapping[str, str]) -> tuple[bool, Any]:
        """(found, value) from TOKENYARD_<FLAG> or an older alias."""
        for name in (self.env, *(ENV_PREFIX + a.upper() for a in self.spec.env_aliases)):
            text = environ.get(name)
            if text is None or (text == "" and not self.switch):
                continue
            where = f"{name}={text} ({self.flag})"
            if self.many:
                parts = [p for p in text.split(self.spec.separator) if p]
                return True, tuple(self.read(p, where) for p in parts)
            return True, self.read(text, where)
        return False, None


def declared(cls: type) -> list[Setting]:
    """The settings `cls` declares, in order."""
    hints = typing.get_type_hints(cls)
    found = []
    for item in dataclasses.fields(cls):
        spec = item.metadata.get("setting")
        if spec is None:
            continue
        kind, optional, many = hints[item.name], False, False
        if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
            args = [a for a in typing.get_args(kind) if a is not type(None)]
            kind, optional = args[0], True
        if typing.get_origin(kind) is tuple:
            kind, many = typing.get_args(kind)[0], True
        found.append(Setting(item.name, kind, optional, many, item.default, spec))
    return found


@dataclass
class ModelSettings:
    """One served model: from --model and its flags, a --serve-model or a models-file entry."""

    model: str = setting(
        DEFAULT_MODEL,
        "a model directory (tokenizer and chat template; the weights for `embedded`), a `.gguf` file, or a "
        f"built-in model: `{DEFAULT_MODEL}` (default unless --serve-model or --models-config name the models) or "
        "`qwen2.5-coder-1.5b`",
        per_model=True,
        alone=True,
    )
    engine: str = setting(
        "embedded",
        "`embedded`: transformers on the CPU (default); `llama.cpp`: a llama-server tokenyard starts and stops, "
        "for a GGUF on a CPU; `remote`: a vLLM/SGLang/llama.cpp server (--engine-url); `scripted`: deterministic "
        "answers in any family's wire format, for tests and demos; `simulated`: scripted answers with a GPU "
        "server's KV-cache bookkeeping and timing",
        choices=("embedded", "scripted", "simulated", "remote", "llama.cpp"),
    )
    served_model_names: tuple[str, ...] = setting(
        (),
        "the model id clients use; repeat it for aliases (e.g. claude-sonnet-4-6)",
        flag="--served-model-name",
        metavar="NAME",
        per_model=True,
    )
    reasoning_parser: str | None = setting(
        None,
        "override the family's reasoning parser (detected from the model's chat template and config); "
        "vLLM's, SGLang's and Dynamo's names work",
        metavar="NAME",
        per_model=True,
    )
    tool_call_parser: str | None = setting(
        None, "override the family's tool-call parser; peers' names work too", metavar="NAME", per_model=True
    )
    recover_fenced_calls: bool | None = setting(
        None,
        "turn a ```json fenced call to a declared tool at the very end of a turn (several in one fence: that many), "
        "or that call object as the whole output, into a real call, Qwen2.5's doubled braces {{...}} included (a "
        "small-model failure shape; default: on for the built-in qwen2.5-coder-1.5b, off otherwise). A fence with "
        "text after it, an undeclared name, other keys or broken JSON stays text",
        per_model=True,
        alone=True,
    )
    chat_template: Path | None = setting(
        None, "a jinja chat template to use instead of the model's", metavar="FILE", per_model=True
    )
    keep_anthropic_preamble: bool = setting(
        False,
        "keep Claude Code's per-session billing header in the prompt (stripped by default: it breaks prefix caching)",
    )
    script: Path | None = setting(
        None,
        "scripted and simulated engines: a JSON file of turns (default: built-in rules that call a shell tool, "
        "then quote its result). As the safety classifier it allows every call, unless the file is "
        '`{"turns": […], "verdicts": [{"contains": "rm -rf", "answer": "<block>yes</block>"}, …]}`',
        metavar="FILE",
        per_model=True,
    )
    token_delay: float = setting(0.0, "scripted engine: delay per token", metavar="SECONDS", at_least=0)
    max_model_len: int | None = setting(
        None, "context window to enforce", metavar="TOKENS", per_model=True, alone=True, at_least=1
    )
    time_scale: float = setting(
        1.0, "simulated engine: real seconds per simulated second", table="scale-out", at_least=0
    )
    kv_block_size: int = setting(16, "simulated engine: tokens per KV block", table="scale-out", at_least=1)
    kv_blocks: int | None = setting(None, "simulated engine: KV blocks in the pool", table="scale-out", at_least=1)
    max_batched_tokens: int = setting(
        8192, "simulated engine: tokens per scheduler step", table="scale-out", at_least=1
    )
    # A single remote engine, for callers that build settings in code.
    engine_url: str | None = None
    engine_urls: tuple[str, ...] = setting(
        (),
        "remote engine: the OpenAI-compatible completions server (e.g. http://127.0.0.1:8001); repeat it for a "
        "pool of servers of the same model, routed by KV-cache overlap against load",
        flag="--engine-url",
        metavar="URL",
        per_model=True,
        key="engine_url",
    )
    kv_events: tuple[str, ...] = setting(
        (),
        "remote engine pool: a worker's KV-event stream (vLLM's --kv-events-config endpoint and replay endpoint, "
        "e.g. tcp://127.0.0.1:5557; SGLang publishes the same format); one per --engine-url in the same order "
        "('' for none)",
        metavar="ENDPOINT[,REPLAY]",
        separator=";",
        per_model=True,
        table="scale-out",
    )
    router_policy: str = setting(
        "kv",
        "engine pool: how a worker is chosen: kv (cached prefix against load), least-loaded, round-robin, or "
        "dynamo=URL (Dynamo's selection service, python -m dynamo.select_service, chooses and books each request; "
        "tokenyard's kv router while it does not answer)",
        choices=("kv", "least-loaded", "round-robin"),
        prefixed_choices=("dynamo=",),
        metavar="POLICY",
        table="scale-out",
    )
    workers: int = setting(
        1,
        "simulated engine: N workers, each publishing vLLM-format KV events over loopback ZMQ, with integer block "
        "hashes as vLLM publishes them (demos, benchmarks)",
        metavar="N",
        table="scale-out",
        at_least=1,
    )
    forward_priority: bool = setting(
        False,
        "send agent-hint priorities to the engines in each one's order: vLLM lower value first (it needs "
        "--scheduling-policy priority); SGLang higher first, or lower first when its /server_info shows "
        "--schedule-low-priority-values-first (it needs --enable-priority-scheduling)",
        table="scale-out",
    )
    session_header: str = setting(
        ",".join(DEFAULT_SESSION_HEADERS),
        "remote engines: the header(s), comma-separated, that carry the conversation's session to the engine or "
        "its router (llm-d, vllm-router) so a session stays on one worker; 'none' sends none (see *Deploying at "
        "scale*)",
        metavar="NAMES",
        table="scale-out",
    )
    forward_harness_headers: bool = setting(
        True,
        "remote engines: also send the harness's own session headers (x-claude-code-session-id, session-id, "
        "x-session-affinity), which llm-d's agent-identity plugin reads",
        table="scale-out",
    )
    engine_model: str | None = setting(
        None, "remote engine: the model name it serves (default: the first it lists)", metavar="NAME", per_model=True
    )
    engine_api_key: str | None = setting(None, "remote engine: its API key", metavar="KEY")
    engine_slots: int = setting(2, "llama.cpp engine: requests llama-server runs at once", metavar="N", at_least=1)
    engine_threads: int | None = setting(
        None, "llama.cpp engine: CPU threads (default: llama-server's choice)", metavar="N", at_least=1
    )


@dataclass
class ServeSettings:
    """Everything else `tokenyard serve` reads: the server, its limits, its models' sources."""

    serve_model: tuple[str, ...] = setting(
        (),
        "serve one more model as NAME (repeatable), e.g. fast=/models/Qwen3-0.6B,engine-url=http://127.0.0.1:8002,"
        "alias=claude-haiku-4-5; keys as in --models-config",
        metavar="NAME=MODEL[,KEY=VALUE…]",
        separator=";",
    )
    models_config: Path | None = setting(
        None,
        'a TOML ([[models]] tables) or JSON ({"models": [...]}) file of models to serve; its keys are the '
        "per-model settings' names (engine_url for --engine-url), plus name and aliases; engine-wide flags are "
        "their defaults (see *Several models in one server*)",
        metavar="FILE",
    )
    tool_parser_plugin: tuple[str, ...] = setting(
        (),
        "load a tool parser from outside the tree (a tokenyard.parsing.tools.base.ToolParser subclass); "
        "repeatable; then name it with --tool-call-parser (see *Parsing a model's output*)",
        metavar="MODULE:CLASS",
    )
    reasoning_parser_plugin: tuple[str, ...] = setting(
        (),
        "load a reasoning parser from outside the tree (a ReasoningFormat); repeatable; then name it with "
        "--reasoning-parser",
        metavar="MODULE:CLASS",
    )
    enable_streaming_tool_dispatch: bool = setting(
        False,
        "announce each complete tool call with a tool_call_dispatch event while the turn goes on (see *Streaming "
        "tool dispatch*)",
    )
    safeguards_model: str | None = setting(
        None,
        "the served model that judges each tool call for clients that ask (Claude Code's auto mode); "
        "default: the model the request names",
        metavar="NAME",
    )
    safeguards_timeout: float = setting(
        DEFAULT_SAFEGUARDS_TIMEOUT,
        "how long one tool call's verdict may take; a call without a verdict is not run, nor are the turn's later "
        "calls sent",
        metavar="SECONDS",
        above=0,
    )
    api_key: str | None = setting(None, "require this key (x-api-key or Authorization: Bearer)", metavar="KEY")
    server_key: str | None = setting(
        None,
        "key that seals reasoning handed to clients (Anthropic `signature`, Responses `encrypted_content`; "
        "default: one kept in the cache folder); replicas behind one load balancer must share it",
        metavar="KEY",
        env_aliases=("seal_key",),
    )
    seal_key_file: Path | None = setting(
        None, "file holding the sealing key (64 hex digits, or any text, hashed): what replicas share", metavar="FILE"
    )
    host: str = setting("127.0.0.1", "where to listen", metavar="HOST")
    port: int = setting(8000, "the port to listen on", metavar="PORT", at_least=1, at_most=65535)
    processes: int = setting(
        1,
        "serve from N processes on one port (uvicorn --workers style), each loading its own models and engines; "
        "they share the sealing key, which is all exact replay needs (see *Replicas and processes*)",
        metavar="N",
        at_least=1,
    )
    max_concurrency: int = setting(4, "generations at once; more requests queue", metavar="N", at_least=1)
    engine_timeout: float = setting(
        DEFAULT_ENGINE_TIMEOUT,
        "abort a generation whose engine sends nothing for this long (a stalled engine): the client gets the "
        "API's error; 0 waits forever (the embedded engine sends heartbeats while it prefills)",
        metavar="SECONDS",
        at_least=0,
    )
    offload_workers: int | None = setting(
        None,
        "threads that render, tokenize and parse large bodies off the event loop (default: one; more only add GIL contention, except for tokenizing many long prompts at once)",
        metavar="N",
        at_least=1,
    )
    no_offload: bool = setting(False, "render and tokenize on the event loop (for measuring; slows every request)")
    default_max_tokens: int = setting(
        DEFAULT_MAX_TOKENS, "the output cap of a request that states none (Codex sends none)", metavar="N", at_least=1
    )
    prompt_log: Path | None = setting(
        None, "append each request and its rendered prompt as a JSON line", metavar="FILE"
    )
    log_prompt_excerpts: bool = setting(
        False,
        "quote prompt text around a prefix divergence in the log (off: positions, token counts and causes only)",
    )
    check_events: bool = setting(
        False,
        "debug: check every response's event stream against the event grammar (events.py); a violation is "
        "logged and ends that stream with an error",
    )
    allowed_hosts: str = setting(
        "",
        "comma-separated Host names served without an API key besides loopback ones (localhost, *.localhost, "
        "127.0.0.0/8, ::1; '*': any); guards a keyless local server against DNS rebinding",
        metavar="NAMES",
    )
    allowed_origins: str = setting(
        "",
        "comma-separated browser origins (e.g. http://localhost:3000) allowed to call the API, with CORS and "
        "preflight; "
        "other cross-origin browser requests are refused",
        metavar="ORIGINS",
    )
    max_queue_wait: float = setting(
        60.0,
        "how long a request may wait for a generation slot before it is refused as overloaded",
        metavar="SECONDS",
        at_least=0,
    )
    max_header_bytes: int = setting(
        64 * 1024,
        "largest request head (request line and headers) read; larger heads are refused unread",
        metavar="BYTES",
        at_least=1,
    )
    header_timeout: float = setting(
        30.0,
        "a connection that has not sent a complete request head within this time is closed",
        metavar="SECONDS",
        above=0,
    )
    keep_alive_timeout: float = setting(
        5.0, "idle time before a kept-alive connection is closed", metavar="SECONDS", at_least=0
    )
    send_timeout: float = setting(
        30.0,
        "a client that reads nothing of its response for this long is disconnected (its generation stops and "
        "frees its slot)",
        metavar="SECONDS",
        above=0,
    )
    limit_concurrency: int = setting(
        4096, "open connections plus in-flight requests; beyond it the server answers 503", metavar="N", at_least=1
    )
    ws_ping_interval: float = setting(
        20.0,
        "a Responses WebSocket is pinged this often, silences included (a long prefill or tool call), and "
        "closed when a ping goes unanswered this long (its generation stops); 0: no pings",
        metavar="SECONDS",
        at_least=0,
    )
    ws_max_lifetime: float = setting(
        3600.0,
        "a Responses WebSocket is closed this long after it opened, once its response in flight ends, with "
        "OpenAI's websocket_connection_limit_reached error (clients reconnect); 0: no limit",
        metavar="SECONDS",
        at_least=0,
    )
    codex_profile: str | None = setting(
        None,
        "serve Codex a model catalog (GET /v1/models?client_version=…, for model_catalog_url) whose entries "
        f"inherit this Codex catalog model's profile, e.g. {DEFAULT_CODEX_PROFILE} (see *Point Codex at it*)",
        metavar="SLUG",
    )
    codex_models: Path | None = setting(
        None,
        "the Codex catalog JSON to take --codex-profile from (default: `codex debug models --bundled`)",
        metavar="FILE",
    )
    log_level: str = setting(
        "info",
        "log lines name positions, token counts and causes, never prompt text (unless --log-prompt-excerpts)",
        choices=("debug", "info", "warning", "error"),
    )


SERVE_SETTINGS = (*declared(ModelSettings), *declared(ServeSettings))


def flag_table(table: str) -> str:
    """The README's Markdown table of one group of serve settings."""
    rows = ["| flag | environment | what it does |", "|---|---|---|"]
    for item in SERVE_SETTINGS:
        if item.spec.table != table:
            continue
        flag = f"`{item.flag}`"
        if item.switch and item.default is not False:
            flag += f", `--no-{item.flag[2:]}`"
        elif not item.switch:
            metavar = item.spec.metavar or ("{" + ",".join(item.spec.choices) + "}" if item.spec.choices else "")
            flag = f"`{item.flag} {metavar or item.name.upper()}`" + (" (repeat)" if item.many else "")
        default = item.default
        shown = "" if default in (None, (), "", False) else f" (default {_shown(default)})"
        text = item.spec.help.replace("|", "\\|")
        env = ", ".join(
            f"`{ENV_PREFIX}{name.upper()}`" for name in (item.env[len(ENV_PREFIX) :], *item.spec.env_aliases)
        )
        rows.append(f"| {flag} | {env} | {text}{shown} |")
    return "\n".join(rows) + "\n"


def _shown(value: Any) -> str:
    if value is True:
        return "on"
    return f"`{value}`"


_TABLE = re.compile(r"(<!-- settings: (?P<table>[\w-]+) -->\n)(.*?)(<!-- /settings -->)", re.S)


def with_flag_tables(readme: str) -> str:
    """`readme` with each `<!-- settings: TABLE -->` block regenerated."""
    return _TABLE.sub(lambda m: m.group(1) + flag_table(m.group("table")) + m.group(4), readme)


if __name__ == "__main__":  # python -m tokenyard.settings README.md: rewrite its flag tables
    import sys

    readme = Path(sys.argv[1])
    readme.write_text(with_flag_tables(readme.read_text(encoding="utf-8")), encoding="utf-8")
