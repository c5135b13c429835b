"""Two tokenyard replicas sharing the sealing key: the next turn gives the same
prompt whichever replica serves it. Reasoning the client echoes back without its
text (Claude Code's omitted thinking, Codex's encrypted_content) is opened by
either replica, because what exact replay needs travels in the sealed field."""

from __future__ import annotations

import contextlib
import json
import threading

import pytest

from tokenyard.cli import build_parser
from tokenyard.sealing import ReasoningSeal, load_server_key

from .serving import WrappedEngine, prompt_log, running_server
from .test_anthropic_api import ask
from .test_anthropic_api import client as anthropic_client
from .test_openai_responses import client as openai_client
from .test_openai_responses import codex_body, replayed, stream, user


@contextlib.contextmanager
def _replicas(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with running_server("qwen3", tmp_path=tmp_path / "a") as a, running_server("qwen3", tmp_path=tmp_path / "b") as b:
        yield a, b


def test_claude_code_turns_alternate_between_replicas(tmp_path):
    omitted = {"type": "adaptive", "display": "omitted"}
    with _replicas(tmp_path) as ((url_a, state_a), (url_b, state_b)):
        first, _ = ask(anthropic_client(url_a), [{"role": "user", "content": "go"}], thinking=omitted)
        thinking, call = first.content
        assert thinking.thinking == "" and thinking.signature
        history = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]},
        ]
        ask(anthropic_client(url_b), history, thinking=omitted)
        ask(anthropic_client(url_a), history, thinking=omitted)
        on_b, on_a = prompt_log(state_b)[-1]["prompt_text"], prompt_log(state_a)[-1]["prompt_text"]
        assert on_b == on_a and "I should call Bash first" in on_b
        assert on_b.startswith(prompt_log(state_a)[0]["prompt_text"])  # a prefix-extension of turn 1


def test_codex_turns_alternate_between_replicas(tmp_path):
    with _replicas(tmp_path) as ((url_a, state_a), (url_b, state_b)):
        final, _ = stream(openai_client(url_a), codex_body([user("list the files")]))
        history = [user("list the files"), *[replayed(item) for item in final.output]]
        calls = [item for item in final.output if item.type == "function_call"]
        history += [{"type": "function_call_output", "call_id": c.call_id, "output": "a.txt"} for c in calls]
        stream(openai_client(url_b), codex_body(history))
        stream(openai_client(url_a), codex_body(history))
        on_b, on_a = prompt_log(state_b)[-1]["prompt_text"], prompt_log(state_a)[-1]["prompt_text"]
        assert on_b == on_a
        assert on_b.startswith(prompt_log(state_a)[0]["prompt_text"])


def test_replicas_share_the_key_by_file_or_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKENYARD_SERVER_KEY", raising=False)
    monkeypatch.delenv("TOKENYARD_SEAL_KEY", raising=False)
    key = bytes(range(32))
    (tmp_path / "seal.key").write_text(key.hex() + "\n")
    from_file = load_server_key(key_file=tmp_path / "seal.key", cache_dir=tmp_path / "cache")
    monkeypatch.setenv("TOKENYARD_SEAL_KEY", key.hex())
    from_env = load_server_key(build_parser().parse_args(["serve"]).server_key, cache_dir=tmp_path / "cache")
    assert from_file == from_env == key
    sealed = ReasoningSeal(from_file).seal("exact reasoning", "ctx")
    assert ReasoningSeal(from_env).open(sealed, "ctx") == "exact reasoning"


# ---- alternating turns, one harness shape at a time ---------------------------------


class _Recorder(WrappedEngine):
    """Notes the prompt token ids each replica sends its engine, in arrival order."""

    def __init__(self, inner, name, log, lock):
        super().__init__(inner)
        self.name, self.log, self.lock = name, log, lock

    def generate(self, request):
        with self.lock:
            self.log.append((self.name, list(request.prompt_token_ids)))
        return self.inner.generate(request)


@contextlib.contextmanager
def _recorded_replicas(tmp_path, family, script, **options):
    log, lock = [], threading.Lock()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        running_server(family, script=script, tmp_path=tmp_path / "a", **options) as (url_a, state_a),
        running_server(family, script=script, tmp_path=tmp_path / "b", **options) as (url_b, state_b),
    ):
        state_a.pipeline.engine = _Recorder(state_a.pipeline.engine, "a", log, lock)
        state_b.pipeline.engine = _Recorder(state_b.pipeline.engine, "b", log, lock)
        yield (url_a, url_b), log


def _assert_each_prompt_extends_the_last(log, turns):
    assert [name for name, _ in log] == ["a", "b"] * (turns // 2) + ["a"] * (turns % 2)
    for (_, before), (where, after) in zip(log, log[1:], strict=False):
        assert after[: len(before)] == before, f"turn on {where} does not extend the previous turn's prompt"


CALL = '<tool_call>\n{"name": "Bash", "arguments": {"command":"step  N","timeout":N}}\n</tool_call>'


def _calls(n: int, *, think: bool) -> list:
    """A model that thinks (optionally), then writes a compact-JSON call, n times."""
    turns = []
    for i in range(n):
        call = CALL.replace("N", str(i))
        turns.append([{"raw": (f"<think>\nThinking about step {i}.\n</think>\n\n" if think else "") + call}])
    return [*turns, [{"text": "done"}]]


TURNS = 5


def test_claude_code_loop_alternating_replicas_extends_every_prompt(tmp_path):
    """Claude Code: thinking omitted (restored from the signature) and calls echoed as
    objects. The model writes compact JSON, which no replica has seen at first."""
    omitted = {"type": "adaptive", "display": "omitted"}
    with _recorded_replicas(tmp_path, "qwen3", _calls(TURNS, think=True)) as ((url_a, url_b), log):
        history = [{"role": "user", "content": "go"}]
        for turn in range(TURNS):
            answer, _ = ask(anthropic_client((url_a, url_b)[turn % 2]), history, thinking=omitted)
            call = answer.content[-1]
            history += [
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]},
            ]
    _assert_each_prompt_extends_the_last(log, TURNS)


def test_openclaw_rewritten_ids_alternating_replicas_extends_every_prompt(tmp_path):
    """OpenClaw over anthropic-messages with thinking off: ids come back stripped to
    [A-Za-z0-9], calls as objects."""

    def strip(call_id):
        return "".join(ch for ch in call_id if ch.isalnum())

    with _recorded_replicas(tmp_path, "llama-3.1", _llama_calls(TURNS)) as ((url_a, url_b), log):
        history = [{"role": "user", "content": "go"}]
        for turn in range(TURNS):
            answer, _ = ask(anthropic_client((url_a, url_b)[turn % 2]), history, thinking={"type": "disabled"})
            call = answer.content[-1].model_dump(exclude_none=True)
            history += [
                {"role": "assistant", "content": [{**call, "id": strip(call["id"])}]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": strip(call["id"]), "content": "ok"}],
                },
            ]
    _assert_each_prompt_extends_the_last(log, TURNS)


def _llama_calls(n: int) -> list:
    turns = [
        [{"raw": '{"name": "Bash", "parameters": {"command":"step  N","timeout":N}}'.replace("N", str(i))}]
        for i in range(n)
    ]
    return [*turns, [{"text": "done"}]]


@pytest.mark.parametrize("client_kind", ["codex", "openclaw"])
def test_responses_loop_alternating_replicas_extends_every_prompt(tmp_path, client_kind):
    """Codex sends `arguments` back as it got them; OpenClaw re-serialises them compactly
    (JSON.stringify), and both echo `encrypted_content` verbatim."""

    def echo(item):
        data = replayed(item)
        if client_kind == "openclaw" and item.type == "function_call":
            data["arguments"] = json.dumps(json.loads(data["arguments"]), separators=(",", ":"), ensure_ascii=False)
        return data

    script = [
        [
            {
                "raw": '<think>\nStep N.\n</think>\n\n<tool_call>\n{"name": "exec", "arguments": {"cmd": "step  N"}}\n'
                "</tool_call>".replace("N", str(i))
            }
        ]
        for i in range(TURNS)
    ]
    with _recorded_replicas(tmp_path, "qwen3", [*script, [{"text": "done"}]]) as ((url_a, url_b), log):
        history = [user("go")]
        for turn in range(TURNS):
            final, _ = stream(openai_client((url_a, url_b)[turn % 2]), codex_body(history))
            history += [echo(item) for item in final.output]
            calls = [item for item in final.output if item.type == "function_call"]
            history += [{"type": "function_call_output", "call_id": c.call_id, "output": "ok"} for c in calls]
    _assert_each_prompt_extends_the_last(log, TURNS)
