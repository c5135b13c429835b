"""Two tokenyard replicas sharing the sealing key: the next turn gives the same
prompt whichever replica serves it. Reasoning the client echoes back without its
text (Claude Code's omitted thinking, Codex's encrypted_content) is opened by
either replica, because what exact replay needs travels in the sealed field."""

from __future__ import annotations

import contextlib

from tokenyard.sealing import ReasoningSeal, load_server_key

from .serving import prompt_log, running_server
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
    from_env = load_server_key(cache_dir=tmp_path / "cache")
    assert from_file == from_env == key
    sealed = ReasoningSeal(from_file).seal("exact reasoning", "ctx")
    assert ReasoningSeal(from_env).open(sealed, "ctx") == "exact reasoning"
