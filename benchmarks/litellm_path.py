"""What each turn of a Claude Code tool loop must prefill when the request goes
through LiteLLM to vLLM's chat completions, against tokenyard, template by template.

No engine runs here: both paths are rendered with the real chat templates and
tokenizers of the fixtures, and an engine's prefix cache is modelled as what it
holds after turn N (turn N's prompt plus the tokens the model generated). The
tokens of turn N+1's prompt beyond the longest common prefix with that are what the
engine must prefill.

The LiteLLM → vLLM path, as their sources have it (LiteLLM main,
`anthropic/experimental_pass_through/adapters/transformation.py` and
`hosted_vllm/chat/transformation.py`; vLLM 0.32 `renderers/chat_utils.py`):
- thinking blocks become `thinking_blocks`, which hosted_vllm turns into `thinking`
  content parts; vLLM joins those with the text parts as the message's *content*
  (`"\\n".join`). Claude Code 2.1.330 sends its thinking with `display: "omitted"`,
  so the text is empty: the model's reasoning never comes back. (LiteLLM's
  `forward_reasoning_content` forwards a client's `reasoning_content`; it does not
  convert Anthropic thinking blocks.)
- `tool_use.input` is sent as `json.dumps(input)`; vLLM parses it back into a
  mapping for the template, which writes it with `tojson`.
- tool results become `tool` messages; the system blocks one system message. The
  billing header stays in it (vLLM 0.32 strips it from system text; earlier ones do
  not) — it changes only between sessions (it derives from the session's first
  prompt), so it costs the first turn of each session, not later ones.

Run: python benchmarks/litellm_path.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fixture_model  # noqa: E402

FAMILIES = (
    "qwen3",
    "qwen3.5",
    "glm-4.7",
    "kimi-k2-thinking",
    "minimax-m3",
    "deepseek-v3.1",
    "deepseek-v3.2",
    "gpt-oss",
    "seed-oss",
    "step3.5",
)
THOUGHT = "I should look at the failing test and run it again with more output before I change the parser. "
NOW = datetime(2026, 11, 23, tzinfo=UTC)


def tool_loop(turns: int, thinking_words: int) -> list[dict[str, Any]]:
    """An Anthropic request's messages after `turns` tool turns, as Claude Code sends
    them (thinking blocks echoed; `thinking` is the model's text here and is emptied
    where the client omits it)."""
    thinking = " ".join((THOUGHT * (thinking_words // len(THOUGHT.split()) + 1)).split()[:thinking_words])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Make the test suite pass."}]
    for n in range(turns):
        call = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": "Bash", "input": {"command": f"pytest -x t{n}.py"}}
        messages.append({"role": "assistant", "content": [{"type": "thinking", "thinking": thinking}, call]})
        output = "\n".join(f"tests/t{n}.py::test_{i} PASSED" for i in range(60))
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]}
        )
    return messages


SYSTEM = [
    "x-anthropic-billing-header: cc_version=2.1.330.a3f; cc_entrypoint=sdk-cli;",
    "You are Claude Code, Anthropic's official CLI for Claude.",
    "You are an interactive CLI tool that helps users with software engineering tasks. " * 60,
]
TOOLS = [
    {
        "name": name,
        "description": f"{name}: run it. " * 40,
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
    for name in ("Bash", "Read", "Edit", "Grep")
]


def litellm_vllm_messages(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The chat messages and tools vLLM's template gets for an Anthropic request that
    went through LiteLLM (thinking omitted by the client, see the module docstring)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "\n".join(SYSTEM)}]
    for message in messages:
        content = message["content"]
        if message["role"] == "user":
            if isinstance(content, str):
                out.append({"role": "user", "content": content})
                continue
            for block in content:
                if block["type"] == "tool_result":
                    out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]})
            continue
        texts = ["" for b in content if b["type"] == "thinking"] + [b["text"] for b in content if b["type"] == "text"]
        calls = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.loads(json.dumps(b["input"]))},
            }
            for b in content
            if b["type"] == "tool_use"
        ]
        out.append({"role": "assistant", "content": "\n".join(texts), "tool_calls": calls})
    tools = [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
        }
        for t in TOOLS
    ]
    return out, tools


def tokenyard_request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 32000,
        "system": [{"type": "text", "text": t} for t in SYSTEM],
        "tools": TOOLS,
        "messages": messages,
        "thinking": {"type": "adaptive"},
    }


def measure(family: str, turns: int, thinking_words: int) -> dict[str, Any]:
    from tokenyard.apis.anthropic.requests import to_conversation
    from tokenyard.apis.anthropic.schema import MessagesRequest
    from tokenyard.server.loading import load
    from tokenyard.settings import ModelSettings

    model, _ = load(ModelSettings(model=str(fixture_model(family)), engine="scripted"))
    renderer, tokenizer = model.renderer, model.tokenizer

    def ours(messages: list[dict[str, Any]], generation: bool = True) -> list[int]:
        conversation = to_conversation(MessagesRequest.model_validate(tokenyard_request(messages)))
        return renderer.render(conversation, add_generation_prompt=generation, now=NOW).token_ids

    def theirs(messages: list[dict[str, Any]]) -> list[int]:
        chat, tools = litellm_vllm_messages(messages)
        kwargs = {"reasoning_effort": "medium"} if family == "gpt-oss" else {}
        text = renderer.template.render(chat, tools, add_generation_prompt=True, now=NOW, **kwargs)
        return tokenizer.encode(text)

    loop = tool_loop(turns, thinking_words)
    ours_new: list[int] = []
    theirs_new: list[int] = []
    for n in range(1, turns):
        before, after = loop[: 2 * n - 1], loop[: 2 * n + 1]
        # What the model generated on turn n: tokenyard's exact rendering of its answer
        # (prompt N plus output N is a prefix of the next prompt: the design rule).
        prompt_n = ours(before)
        generated = ours(loop[: 2 * n], generation=False)[len(prompt_n) :]
        ours_next = ours(after)
        ours_new.append(len(ours_next) - _common(ours_next, prompt_n + generated))
        theirs_n, theirs_next = theirs(before), theirs(after)
        theirs_new.append(len(theirs_next) - _common(theirs_next, theirs_n + generated))
    # The loop ends with an answer, and the user asks for more: templates that keep
    # reasoning only within the current tool sequence (Qwen3's) now drop it.
    answered = [*loop, {"role": "assistant", "content": [{"type": "text", "text": "All tests pass now."}]}]
    follow_up = [*answered, {"role": "user", "content": "Now commit the fix."}]
    prompt_end = ours(loop)
    generated = ours(answered, generation=False)[len(prompt_end) :]
    ours_next = ours(follow_up)
    theirs_end, theirs_next = theirs(loop), theirs(follow_up)
    return {
        "family": family,
        "prompt_tokens": len(prompt_end),
        "theirs_prompt_tokens": len(theirs_end),
        "ours_new": sum(ours_new) / len(ours_new),
        "theirs_new": sum(theirs_new) / len(theirs_new),
        "ours_follow_up": len(ours_next) - _common(ours_next, prompt_end + generated),
        "theirs_follow_up": len(theirs_next) - _common(theirs_next, theirs_end + generated),
    }


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="three families, four turns")
    args = parser.parse_args(argv)
    families, turns, words = (FAMILIES[:3], 4, 100) if args.quick else (FAMILIES, 8, 400)
    print(
        f"Claude Code tool loop, {turns} turns of ~{words} words of thinking + a Bash call + 60 lines of output: "
        "prompt tokens the engine must prefill per turn (after the first)"
    )
    print(f"{'':<18}{'last prompt (tokens)':>24}{'prefilled per tool turn':>26}{'prefilled at the next user turn':>34}")
    print(f"{'template':<18}" + f"{'tokenyard':>12}{'LiteLLM→vLLM':>14}" * 3)
    for family in families:
        try:
            row = measure(family, turns, words)
        except Exception as error:  # a template this conversation does not fit: say so, go on
            print(f"{family:<18}  (not measured: {type(error).__name__}: {error})")
            continue
        print(
            f"{row['family']:<18}{row['prompt_tokens']:>12,}{row['theirs_prompt_tokens']:>14,}"
            f"{row['ours_new']:>12,.0f}{row['theirs_new']:>14,.0f}"
            f"{row['ours_follow_up']:>12,}{row['theirs_follow_up']:>14,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
