"""The embedded engine: a transformers causal LM on this machine's CPU, with prefix KV reuse.

`EmbeddedEngine` serves a HF model directory (`tokenyard.models` resolves what the
user named — a directory, a `.gguf` file, the built-in `smollm2` — into one):
requests scheduled step by step on a worker thread (the user's turns ahead of
background requests), tokens streamed to the event loop as they come, and the KV
cache of recent sequences kept so that a request sharing a prefix with an earlier
one (every turn of an agent conversation) prefills only what is new. The converted
built-in model's window is extended with YaRN (models/conversion.py says why).
A JSON answer (`Constraints.output`) is held to its schema by llguidance, which
masks the tokens the grammar does not allow before each one is sampled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..faults import EngineError, PromptTooLong
from .base import EngineChunk, EngineFinish, EngineInfo, EngineRequest, OutputGuide, ReasoningBudgetTracker

if TYPE_CHECKING:
    import torch
    from llguidance import LLTokenizer
    from transformers import DynamicCache

log = logging.getLogger("tokenyard.engines.embedded")

# ------------------------------------------------------------------ prefix KV store


@dataclass
class _CachedSequence:
    token_ids: list[int]  # exactly the tokens whose keys/values `cache` holds
    cache: DynamicCache


class PrefixStore:
    """KV caches of recent sequences, bounded by their total tokens, least recently
    used evicted first. Touched only by the engine's worker thread."""

    def __init__(self, max_tokens: int):
        self.max_tokens = max_tokens
        self._entries: OrderedDict[int, _CachedSequence] = OrderedDict()
        self._next_key = 0

    @property
    def total_tokens(self) -> int:
        return sum(len(e.token_ids) for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def take_prefix(self, prompt: list[int]) -> tuple[DynamicCache | None, int]:
        """A cache holding the longest stored prefix of `prompt` (at most all but its
        last token, which must be prefilled for logits), and that prefix's length.

        An entry that is itself a prefix of `prompt` is removed and handed over: the
        sequence stored after this request contains it. Any other match is copied,
        cropped, so the stored entry is never modified."""
        best_key, best_length = None, 0
        for key, entry in self._entries.items():
            length = _common_prefix_length(entry.token_ids, prompt, len(prompt) - 1)
            if length > best_length:
                best_key, best_length = key, length
        if best_key is None:
            return None, 0
        entry = self._entries[best_key]
        if entry.token_ids == prompt[: len(entry.token_ids)]:
            del self._entries[best_key]
            if surplus := len(entry.token_ids) - best_length:
                entry.cache.crop(-surplus)  # transformers' crop takes the count to remove, negated
            return entry.cache, best_length
        self._entries.move_to_end(best_key)
        return _cropped_copy(entry.cache, best_length), best_length

    def put(self, token_ids: list[int], cache: DynamicCache) -> None:
        if not token_ids or len(token_ids) > self.max_tokens:
            return
        # A stored sequence that is a prefix of this one is redundant.
        for key in [k for k, e in self._entries.items() if e.token_ids == token_ids[: len(e.token_ids)]]:
            del self._entries[key]
        self._entries[self._next_key] = _CachedSequence(token_ids, cache)
        self._next_key += 1
        total = self.total_tokens
        while total > self.max_tokens:
            _, evicted = self._entries.popitem(last=False)
            total -= len(evicted.token_ids)


def _common_prefix_length(a: list[int], b: list[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    if a[:n] == b[:n]:  # the usual case, at C speed
        return n
    low, high = 0, n  # a[:low] == b[:low] holds, a[:high] == b[:high] does not
    while high - low > 1:
        mid = (low + high) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid
    return low


def _cropped_copy(cache: DynamicCache, length: int) -> DynamicCache:
    from transformers import DynamicCache

    copy = DynamicCache()
    for index, layer in enumerate(cache.layers):
        # update() concatenates onto an empty layer: new tensors, the source untouched.
        keys, values = layer.keys, layer.values  # type: ignore[union-attr]  # attention layers: SmolLM2 has no others
        assert keys is not None and values is not None
        copy.update(keys[..., :length, :], values[..., :length, :], index)
    return copy


# ------------------------------------------------------------------ the engine

# Prefill in slices this long: the scheduler can switch requests (and honour an
# abort) between slices, and peak activation memory stays flat however long the prompt.
PREFILL_CHUNK = 1024
# Background requests (a session's titles and summaries) write short answers; a
# model that loops must not hold the engine for 32,000 tokens.
BACKGROUND_MAX_TOKENS = 256
# While the worker computes and has nothing to send, an empty chunk this often, so
# the pipeline does not take a long prefill on a CPU for a stalled engine.
HEARTBEAT_SECONDS = 5.0
_DONE = object()


@dataclass
class _Job:
    """One request on the scheduler: `steps` runs one forward pass per next()."""

    background: bool
    abort: threading.Event
    emit: Callable[[object], None]
    steps: Iterator[None]


class EmbeddedEngine:
    """A transformers causal LM served from this process.

    Every forward pass runs on one worker thread, which schedules step by step: each
    request advances one prefill slice or one decode token at a time, requests of
    the user's own turns (foreground) take turns with each other, and background
    requests run only when no foreground one is waiting. So a title request never
    holds the engine while the user's turn waits, two turns progress together, and
    an abort is honoured within one step.

    `threads`: torch intra-op threads; default all cores but one, which is left to the
    event loop (HTTP, parsing, detokenizing) — OpenMP workers spin and stall badly when
    a core they count on is busy. `max_cache_tokens` bounds the prefix KV store (for
    SmolLM2-135M in bf16 a token's KV is ~23 KB, so the default 65,536 is ~1.5 GB).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        max_cache_tokens: int = 65536,
        dtype: str = "bfloat16",
        threads: int | None = None,
    ):
        self.model_dir = Path(model_dir)
        config = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))
        self._info = EngineInfo(
            name=f"embedded:{self.model_dir.name}", max_model_len=int(config["max_position_embeddings"])
        )
        self.dtype = dtype
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self.threads = threads or max(1, cores - 1)
        self.prefix_store = PrefixStore(max_cache_tokens)
        self._model: Any = None  # a transformers causal LM once started
        self._executor: ThreadPoolExecutor | None = None
        self._jobs: deque[_Job] = deque()
        self._wake = threading.Condition()
        self._closing = False
        # llguidance's view of the vocabulary, per set of stop tokens (built once: ~1 s).
        self._grammar_tokenizers: dict[tuple[int, ...], LLTokenizer] = {}

    def info(self) -> EngineInfo:
        return self._info

    async def start(self) -> None:
        if self._model is not None:
            return
        if self._executor is None:
            # One worker thread runs every forward pass: on a few cores, two threads at
            # once would each run at half speed; the scheduler interleaves instead.
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="tokenyard-embedded", initializer=self._init_worker
            )
        await asyncio.get_running_loop().run_in_executor(self._executor, self._load)
        self._closing = False
        self._executor.submit(self._schedule)  # runs until close(), whichever event loop is current

    def _init_worker(self) -> None:
        import torch

        torch.set_num_threads(self.threads)

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=getattr(torch, self.dtype))
        model.eval()  # type: ignore[no-untyped-call]  # torch's Module.eval is untyped
        self._model = model

    async def close(self) -> None:
        with self._wake:
            self._closing = True
            for job in self._jobs:
                job.abort.set()
            self._wake.notify()
        if self._executor is not None:
            await asyncio.to_thread(self._executor.shutdown, wait=True)
            self._executor = None
        self._model = None
        self.prefix_store = PrefixStore(self.prefix_store.max_tokens)

    async def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        prompt_length = len(request.prompt_token_ids)
        if prompt_length > self._info.max_model_len:
            raise PromptTooLong(prompt_length, self._info.max_model_len)
        if prompt_length == 0:
            raise EngineError("empty prompt")
        if self._executor is None or self._model is None or self._closing:
            raise EngineError("the embedded engine is not started")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        abort = threading.Event()

        def emit(item: object) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is gone: nobody is listening any more
                abort.set()

        job = _Job(request.background, abort, emit, self._steps(request, emit, abort))
        with self._wake:
            self._jobs.append(job)
            self._wake.notify()
        try:
            while True:
                try:
                    async with asyncio.timeout(HEARTBEAT_SECONDS):
                        item = await queue.get()
                except TimeoutError:
                    yield EngineChunk()  # still at work: a heartbeat
                    continue
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise EngineError(f"embedded generation failed: {item}") from item
                assert isinstance(item, EngineChunk)
                yield item
        finally:
            # The consumer finished, went away or was cancelled: the job ends at its next step.
            abort.set()

    # ------------------------------------------------------------ worker thread

    def _schedule(self) -> None:
        """Run jobs one step at a time until close(): the first foreground job in
        line, else the first background one; a job that stepped goes to the back of
        the line, so jobs of one priority take turns."""
        import torch

        while True:
            with self._wake:
                while not self._jobs and not self._closing:
                    self._wake.wait()
                if self._closing and not self._jobs:
                    return
                job = next((j for j in self._jobs if not j.background), self._jobs[0])
                self._jobs.remove(job)
            finished = True
            try:
                if not job.abort.is_set():
                    with torch.inference_mode():
                        next(job.steps)
                    finished = False
            except StopIteration:
                pass
            except Exception as error:  # noqa: BLE001 -- handed to the consumer, raised there as an EngineError
                job.emit(error)
            if finished:
                job.emit(_DONE)
            else:
                with self._wake:
                    self._jobs.append(job)

    def _steps(self, request: EngineRequest, emit: Callable[[object], None], abort: threading.Event) -> Iterator[None]:
        """The request as a sequence of forward passes (one per next()); the KV cache
        goes back to the prefix store when it finishes cleanly."""
        from transformers import DynamicCache

        prompt = list(request.prompt_token_ids)
        cache, cached_tokens = self.prefix_store.take_prefix(prompt)
        cache = cache if cache is not None else DynamicCache()
        fed: list[int] = prompt[:cached_tokens]  # the tokens whose KV `cache` holds
        stop_ids = set(request.stop_token_ids)
        budget = min(request.max_tokens, self._info.max_model_len - len(prompt))
        if request.background:
            budget = min(budget, BACKGROUND_MAX_TOKENS)
        sampler = _Sampler(request)
        if request.constraints.output is not None:
            sampler.guide = self._answer_guide(request.constraints.output, request.stop_token_ids)
        reasoning = request.constraints.reasoning_budget
        tracker = ReasoningBudgetTracker(reasoning) if reasoning is not None else None
        first = True
        # The prompt's KV goes into the prefix store after this request (put, below).
        written = len(prompt) - cached_tokens if len(prompt) <= self.prefix_store.max_tokens else 0

        def send(token_ids: list[int], finish: EngineFinish | None = None) -> None:
            nonlocal first
            emit(
                EngineChunk(
                    token_ids=token_ids,
                    finish_reason=finish,
                    cached_tokens=cached_tokens if first else None,
                    cache_written_tokens=written if first else None,
                )
            )
            first = False

        yield from self._prefill_and_decode(prompt, cache, fed, budget, stop_ids, sampler, send, abort, tracker)
        # Not reached when a forward pass raised: it may have updated some layers and not others.
        self.prefix_store.put(fed, cache)

    def _prefill_and_decode(
        self,
        prompt: list[int],
        cache: DynamicCache,
        fed: list[int],
        budget: int,
        stop_ids: set[int],
        sampler: _Sampler,
        send: Callable[..., None],
        abort: threading.Event,
        tracker: ReasoningBudgetTracker | None = None,
    ) -> Iterator[None]:
        """Run the request on `cache`, keeping `fed` equal to the tokens it holds,
        yielding after every forward pass; returns when finished or, within one
        token or prefill slice, once `abort` is set. With a reasoning budget, once it
        is spent inside a reasoning block the block's end marker is fed instead of
        sampled."""
        logits = None
        for start in range(len(fed), len(prompt), PREFILL_CHUNK):
            if abort.is_set():
                return
            logits = self._forward(prompt[start : start + PREFILL_CHUNK], cache)
            fed.extend(prompt[start : start + PREFILL_CHUNK])
            yield
        produced = 0
        forced: list[int] = []
        while produced < budget:
            if not forced and tracker is not None and tracker.exhausted:
                forced = list(tracker.budget.end_token_ids)
                tracker.forced_end()
            if forced:
                token = forced.pop(0)
            else:
                assert logits is not None  # the prompt is never empty: prefill computed some
                token = sampler.pick(logits)
            if token in stop_ids:
                send([], "stop")
                return
            if sampler.guide is not None:
                sampler.guide.push(token)
            send([token])
            produced += 1
            if tracker is not None:
                tracker.push(token)
            if abort.is_set():
                return
            if produced < budget:
                logits = self._forward([token], cache)
                fed.append(token)
                yield
        send([], "length")

    def _answer_guide(self, guide: OutputGuide, stop_token_ids: list[int]) -> _AnswerGuide | None:
        """The guide's grammar over this model's vocabulary; None (the answer is then
        only validated, by the pipeline) when llguidance can not compile it."""
        key = tuple(sorted(stop_token_ids))
        vocabulary = self._grammar_tokenizers.get(key)
        if vocabulary is None:
            from llguidance import LLTokenizer

            tokenizer_json = (self.model_dir / "tokenizer.json").read_text(encoding="utf-8")
            size = int(self._model.config.vocab_size)
            vocabulary = LLTokenizer(tokenizer_json, n_vocab=size, eos_token=list(key) or None)
            self._grammar_tokenizers[key] = vocabulary
        try:
            return _AnswerGuide(guide, vocabulary)
        except ValueError as error:
            log.warning("the requested output format can not be guided: %s", error)
            return None

    def _forward(self, token_ids: list[int], cache: DynamicCache) -> torch.Tensor:
        import torch

        # `cache=`: transformers 5.24 renamed `past_key_values`, which 5.40 removes.
        output = self._model(input_ids=torch.tensor([token_ids]), cache=cache, use_cache=True, logits_to_keep=1)
        logits: torch.Tensor = output.logits[0, -1].float()
        return logits


class _AnswerGuide:
    """An `OutputGuide` as token masks. Inside a reasoning block sampling is free. At
    the answer's start (before anything but newlines) the model may also open a
    reasoning block (the start marker's first token, when it has not reasoned yet)
    or begin a call (the call opener's first token, when it may call), after which
    nothing is guided; otherwise only tokens the grammar (up to two newlines, the
    JSON, then a stop token) allows are sampled."""

    def __init__(self, guide: OutputGuide, vocabulary: LLTokenizer):
        from llguidance import LLMatcher

        schema: dict[str, Any] = dict(guide.schema) if guide.schema is not None else {"type": "object"}
        # Compact JSON (a small model left free to add whitespace may add it forever);
        # keywords llguidance does not implement are ignored, the pipeline checks them.
        schema["x-guidance"] = {"whitespace_flexible": False, "lenient": True}
        lark = f"%llguidance {{}}\nstart: SEPARATOR answer\nSEPARATOR: /\\n{{0,2}}/\nanswer: %json {json.dumps(schema)}"
        self._matcher = LLMatcher(vocabulary, LLMatcher.grammar_from_lark(lark), log_level=0)
        if self._matcher.is_error():
            raise ValueError(self._matcher.get_error())
        self._vocabulary = vocabulary
        self._free = guide.inside
        self._off = False  # a call began: the rest of the turn is the model's own
        self._at_start = True
        self._opener = guide.reasoning_start_ids[0] if guide.reasoning_start_ids and not guide.inside else None
        self._call = guide.call_trigger_ids[0] if guide.call_trigger_ids else None
        self._end = list(guide.reasoning_end_ids)
        self._recent: list[int] = []

    def mask(self, logits: torch.Tensor) -> torch.Tensor:
        if self._free or self._off or self._matcher.is_error():
            return logits  # reasoning, a call; or a token the grammar refused was forced in
        import numpy as np
        import torch

        bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
        allowed = torch.from_numpy(np.unpackbits(bits, bitorder="little")[: logits.numel()].astype(bool))
        if self._at_start:
            for token in (self._opener, self._call):
                if token is not None and token < allowed.numel():
                    allowed[token] = True
        return logits.masked_fill(~allowed, float("-inf"))

    def push(self, token: int) -> None:
        if self._off:
            return
        if self._free:
            self._recent = [*self._recent, token][-len(self._end) :] if self._end else []
            if self._end and self._recent == self._end:
                self._free, self._at_start = False, True
            return
        if self._at_start and token == self._opener:
            self._free, self._opener = True, None
        elif self._at_start and token == self._call:
            self._off = True
        else:
            self._matcher.consume_token(token)
            self._at_start = self._at_start and not self._vocabulary.decode_bytes([token]).strip()


class _Sampler:
    """Greedy when temperature is 0 or unset (deterministic, what tests and agents
    replaying a turn want); otherwise temperature, then top-k, then top-p, from a
    generator seeded by the request's seed when it gives one. A frequency penalty
    comes first, counting the tokens this sampler picked (the answer, not the prompt)."""

    def __init__(self, request: EngineRequest):
        import torch

        self.temperature = request.temperature or 0.0
        self.top_k = request.top_k if request.top_k and request.top_k > 0 else None
        self.top_p = request.top_p if request.top_p is not None and 0 < request.top_p < 1 else None
        self.guide: _AnswerGuide | None = None
        self.frequency_penalty = request.frequency_penalty or 0.0
        self.presence_penalty = request.presence_penalty or 0.0
        self.counts: dict[int, int] = {}
        self.generator = torch.Generator()
        if request.seed is not None:
            self.generator.manual_seed(request.seed)
        else:
            self.generator.seed()

    def pick(self, logits: torch.Tensor) -> int:
        import torch

        if (self.frequency_penalty or self.presence_penalty) and self.counts:
            # OpenAI's definition: minus the frequency penalty per occurrence in the
            # answer so far, and the presence penalty once.
            ids = torch.tensor(list(self.counts))
            seen = torch.tensor(list(self.counts.values()), dtype=logits.dtype)
            logits = logits.clone()
            logits[ids] -= self.frequency_penalty * seen + self.presence_penalty
        if self.guide is not None:
            logits = self.guide.mask(logits)
        token = self._choose(logits)
        self.counts[token] = self.counts.get(token, 0) + 1
        return token

    def _choose(self, logits: torch.Tensor) -> int:
        import torch

        if self.temperature <= 0:
            return int(logits.argmax())
        logits = logits / self.temperature
        if self.top_k is not None and self.top_k < logits.numel():
            threshold = torch.topk(logits, self.top_k).values[-1]
            logits = logits.masked_fill(logits < threshold, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        if self.top_p is not None:
            sorted_probs, order = torch.sort(probs, descending=True)
            # Keep the smallest set whose mass reaches top_p (the first token always).
            outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= self.top_p
            probs = probs.clone()
            probs[order[outside]] = 0.0
        return int(torch.multinomial(probs, 1, generator=self.generator))
