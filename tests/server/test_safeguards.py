"""Claude Code's auto mode against the server, with the official `anthropic` SDK as
the client: a request that carries `safeguards` gets a verdict for each tool_use
of the turn in `safeguard_results` (streamed in the final `message_delta`, or at
the top level of a whole message), judged by the scripted model playing the
classifier; no verdict (deadline, garbage answer) is never an allow."""

from __future__ import annotations

import anthropic
import pytest

from tokenyard.server.app import ServerConfig
from tokenyard.server.metrics import REGISTRY
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir
from .serving import running_server

BETA = "dangerous-tool-use-2026-09-03"
CONTEXT = {
    "v": 1,
    "permission_mode": "auto",
    "platform": "linux",
    "home_dir": "/home/u",
    "trusted_directories": {"primary": {"path": "/home/u/project", "resolved": ["/home/u/project"]}},
    "rules": {"allow": [], "deny": [], "ask": []},
    "auto_mode": {"allow": [], "soft_deny": [], "hard_deny": [], "environment": []},
}
SAFEGUARDS = [{"type": "dangerous_tool_use", "classifier_context": CONTEXT}]
BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
BLOCK_REASON = "It deletes the user's home directory"
TWO_CALLS = [
    [
        {"call": {"name": "Bash", "arguments": {"command": "rm -rf ~"}}},
        {"call": {"name": "Bash", "arguments": {"command": "mkdir build"}}},
    ],
    [{"text": "done"}],
]
VERDICTS = [{"contains": "rm -rf", "answer": f"<reason>{BLOCK_REASON}.</reason><block>yes</block>"}]


def client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, default_headers={"anthropic-beta": BETA})


def params(**extra):
    return {
        "model": "test/model",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": "Clean up."}],
        "tools": [BASH],
        "extra_body": {"safeguards": SAFEGUARDS},
        **extra,
    }


def tool_uses(results) -> dict:
    [result] = results
    assert result["type"] == "dangerous_tool_use" and result["status"]["type"] == "available"
    return result["status"]["tool_uses"]


def streamed(c: anthropic.Anthropic, **extra):
    with c.messages.stream(**params(**extra)) as stream:
        events = list(stream)
        final = stream.get_final_message()
    [delta] = [e for e in events if e.type == "message_delta"]
    return final, delta.delta.model_extra or {}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_each_tool_use_gets_its_verdict(tmp_path, stream):
    script = {"turns": TWO_CALLS, "verdicts": VERDICTS}
    with running_server("qwen3", tmp_path=tmp_path, script=script) as (url, _):
        c = client(url)
        if stream:
            message, extra = streamed(c)
            results = extra.get("safeguard_results")
        else:
            message = c.messages.create(**params())
            results = (message.model_extra or {}).get("safeguard_results")
    rm, mkdir = [b for b in message.content if b.type == "tool_use"]
    assert rm.input == {"command": "rm -rf ~"} and mkdir.input == {"command": "mkdir build"}
    verdicts = tool_uses(results)
    assert set(verdicts) == {rm.id, mkdir.id}
    assert verdicts[rm.id] == {"type": "evaluated", "outcome": "flagged", "explanation": BLOCK_REASON}
    assert verdicts[mkdir.id] == {"type": "evaluated", "outcome": "not_flagged"}


def test_a_turn_without_calls_says_so(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path, script=[[{"text": "hello"}]]) as (url, _):
        message, extra = streamed(client(url))
    assert [b.type for b in message.content] == ["text"]
    assert tool_uses(extra["safeguard_results"]) == {}


def test_without_safeguards_nothing_is_judged(tmp_path):
    script = {"turns": TWO_CALLS, "verdicts": VERDICTS}
    with running_server("qwen3", tmp_path=tmp_path, script=script) as (url, _):
        c = client(url)
        _, extra = streamed(c, extra_body={})
        message = c.messages.create(**params(extra_body={}))
    assert "safeguard_results" not in extra
    assert "safeguard_results" not in (message.model_extra or {})


@pytest.mark.parametrize("answer", ["Looks fine to me, go ahead.", "<block>perhaps</block>"])
def test_an_answer_without_one_clear_verdict_fails_closed(tmp_path, answer):
    script = {"turns": TWO_CALLS, "verdicts": [{"answer": answer}]}
    with running_server("qwen3", tmp_path=tmp_path, script=script) as (url, _):
        _, extra = streamed(client(url))
    verdicts = tool_uses(extra["safeguard_results"])
    assert len(verdicts) == 2
    assert all(v == {"type": "unavailable", "reason": "error"} for v in verdicts.values())


def slow_judge(tmp_path, token_delay: float) -> ModelSettings:
    return ModelSettings(
        model=str(model_dir("qwen3")),
        engine="scripted",
        served_model_names=("test/judge",),
        tool_call_parser="hermes",
        reasoning_parser="qwen3",
        token_delay=token_delay,
    )


def timeouts() -> float:
    value = REGISTRY.get_sample_value(
        "tokenyard_safeguard_verdicts_total", {"model": "test/judge", "outcome": "timeout"}
    )
    return value or 0.0


def test_a_classifier_past_its_deadline_fails_closed_and_the_turn_still_ends(tmp_path):
    """The judge (`--safeguards-model`) writes a token a second; the deadline is a
    fraction of that: every call gets `unavailable: timeout`, and the turn ends."""
    config = ServerConfig(safeguards_model="test/judge", safeguards_timeout=0.3)
    timeouts_before = timeouts()
    with running_server(
        "qwen3", tmp_path=tmp_path, script={"turns": TWO_CALLS}, config=config, more_models=[slow_judge(tmp_path, 1.0)]
    ) as (url, _):
        message, extra = streamed(client(url))
    assert message.stop_reason == "tool_use"
    verdicts = tool_uses(extra["safeguard_results"])
    assert len(verdicts) == 2
    assert all(v == {"type": "unavailable", "reason": "timeout"} for v in verdicts.values())
    assert timeouts() == timeouts_before + 2


def test_the_safeguards_model_judges(tmp_path):
    """With `--safeguards-model`, another served model judges (here: its default
    rule, allow); the request's own model is not asked."""
    config = ServerConfig(safeguards_model="test/judge")
    script = {"turns": TWO_CALLS, "verdicts": [{"answer": "<block>yes</block>"}]}  # the main model would block
    with running_server(
        "qwen3", tmp_path=tmp_path, script=script, config=config, more_models=[slow_judge(tmp_path, 0.0)]
    ) as (url, _):
        _, extra = streamed(client(url))
    verdicts = tool_uses(extra["safeguard_results"])
    assert [v["outcome"] for v in verdicts.values()] == ["not_flagged", "not_flagged"]


def test_a_safeguards_model_that_is_not_served_is_refused():
    with pytest.raises(ValueError, match="safeguards model"):
        with running_server("qwen3", config=ServerConfig(safeguards_model="nope")):
            pass


def test_the_next_calls_classifier_prompt_extends_the_last_token_for_token(capsys):
    """Through a real chat template and tokenizer (Qwen3's): the classifier prompt for
    a turn's second call repeats the first one's tokens up to the call under review,
    so the engine's prefix cache serves all of that."""
    from tokenyard.conversation import Conversation, Message, Text, ToolCall
    from tokenyard.safeguards import ACTION_HEADER, classifier_conversation
    from tokenyard.server.loading import load

    model, _ = load(ModelSettings(model=str(model_dir("qwen3")), engine="scripted", served_model_names=("judge",)))
    session = Conversation(model="m", messages=[Message(role="user", parts=[Text(text="Clean up the build.")])])
    calls = [ToolCall(id=f"c{n}", name="Bash", arguments=f'{{"command": "rm -rf build/{n}"}}') for n in range(2)]
    first, second = (
        model.renderer.render(classifier_conversation(session, calls[:n], CONTEXT, model="judge")) for n in (1, 2)
    )
    shared = next(
        (i for i, (a, b) in enumerate(zip(first.token_ids, second.token_ids, strict=False)) if a != b),
        len(first.token_ids),
    )
    before_action = len(model.tokenizer.encode(first.text[: first.text.index(ACTION_HEADER)]))
    assert shared >= before_action - 1  # the token at the seam may merge differently
    with capsys.disabled():
        print(f"\nclassifier prompt: {shared} of {len(second.token_ids)} tokens repeat the previous call's")
