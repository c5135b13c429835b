"""A forced call the model reasons before (`ReasonFirst`), on any engine that
continues a raw prompt (embedded, vLLM, SGLang, llama.cpp, simulated, scripted).

Two requests. The first generates the reasoning block, unguided, within the budget
(its `max_tokens`); it is closed (aborted in the engine) where the model writes the
block's end marker. The second's prompt is the prompt, that output, and what the
pipeline injects: the end marker (unless the model wrote it), the template's
separator and the call opener; it is generated under the call guide, or as the
continuation of the opener (`Constraints.prefill`), as any forced call. The stream
is the first request's output, the injected tokens (as if sampled: the parsers see
the whole turn), then the second's output. Engine prefix caches make the second
prompt's prefill cost only the injected tokens.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import replace

from .base import Engine, EngineChunk, EngineRequest, EngineTokenizer


async def reason_then_call(
    engine: Engine, request: EngineRequest, tokenizer: EngineTokenizer
) -> AsyncGenerator[EngineChunk, None]:
    plan = request.constraints.reason_first
    assert plan is not None, "reason_then_call needs Constraints.reason_first"
    end_ids = tokenizer.encode(plan.end)
    limit = request.max_tokens if plan.budget is None else min(request.max_tokens, max(0, plan.budget))
    ids: list[int] = []
    text: str | None = None  # a text-only engine's output
    closed = False  # the model wrote the end marker
    finish = None
    if limit > 0:
        reasoning = replace(
            request,
            max_tokens=limit,
            # Nothing to continue: the prompt ends inside the block (at most its start
            # marker), no call opener.
            constraints=replace(
                request.constraints, reason_first=None, guide=None, reasoning_budget=None, output=None, prefill=""
            ),
        )
        stream = engine.generate(reasoning)
        try:
            async for chunk in stream:
                if chunk.text is not None:
                    # Only the new text, and the tail a marker may straddle, is searched.
                    seen = len(text or "")
                    text = (text or "") + chunk.text
                    at = text.find(plan.end, max(0, seen - len(plan.end) + 1))
                    if at >= 0:
                        closed, cut = True, at + len(plan.end)
                        chunk.text = chunk.text[: len(chunk.text) - (len(text) - cut)]
                        text = text[:cut]
                else:
                    for n, token in enumerate(chunk.token_ids):
                        ids.append(token)
                        closed = bool(end_ids) and ids[-len(end_ids) :] == end_ids
                        if closed or len(ids) >= limit:
                            # What a server sent past the marker or the limit is dropped.
                            chunk.token_ids = chunk.token_ids[: n + 1]
                            break
                finish, chunk.finish_reason = chunk.finish_reason, None
                if not closed and len(ids) >= limit:
                    finish = "length"
                yield chunk
                if closed or finish is not None:
                    break
        finally:
            await stream.aclose()
    produced = len(ids) if text is None else len(tokenizer.encode(text))
    if finish == "length" and produced >= request.max_tokens:
        yield EngineChunk(finish_reason="length")  # the output limit, not the budget
        return
    injected = ("" if closed else plan.end) + plan.separator + plan.opener
    injected_ids = tokenizer.encode(injected)
    yield EngineChunk(token_ids=injected_ids) if text is None else EngineChunk(text=injected)
    remaining = request.max_tokens - produced - len(injected_ids)
    if remaining <= 0:
        yield EngineChunk(finish_reason="length")
        return
    output = tokenizer.decode(ids) if text is None else text
    call = replace(
        request,
        prompt_token_ids=[*request.prompt_token_ids, *(ids if text is None else tokenizer.encode(text)), *injected_ids],
        prompt_text=request.prompt_text + output + injected,
        max_tokens=remaining,
        constraints=replace(request.constraints, reason_first=None, reasoning_budget=None, prefill=plan.opener),
    )
    stream = engine.generate(call)
    try:
        async for chunk in stream:
            # The cache hit that counts is the prompt's, reported by the first request.
            chunk.cached_tokens = chunk.cache_written_tokens = None
            yield chunk
    finally:
        await stream.aclose()
