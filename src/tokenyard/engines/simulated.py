"""The simulated engine: a GPU inference server's bookkeeping and timing, without the GPU.

It keeps what vLLM keeps — a fixed pool of KV blocks, a prefix cache keyed by
chained block hashes (kv_blocks.py), reference counts, LRU eviction — and
runs one continuous-batching scheduler loop whose steps take as long as a cost
model says. Output text comes from the scripted responder (engines/scripted.py),
so everything above the engine (pipeline, parsers, APIs, harnesses) sees a real
conversation while benchmarks and tests see realistic prefix-cache behaviour and
latency on a machine without an accelerator.

Bookkeeping (as vLLM V1):
- A sequence's tokens are the prompt then what it has sampled. Each step computes
  the KV of some of its not-yet-computed tokens; when none are left, the step
  samples the next token. Prefill and decode are the same thing at different sizes.
- Blocks are allocated step by step as tokens are computed. A block whose tokens
  are all computed enters the prefix cache under its chained hash; generated
  tokens' blocks too, so the next turn of a conversation reuses the answer's KV.
- At admission a request takes the longest cached prefix of its full blocks, at most
  all but the last token (whose logits must be computed). Hit blocks gain a
  reference; blocks with no reference stay cached in an LRU of free blocks until a
  fresh allocation evicts the least recently used. A finished request frees its
  blocks tail first, so its tail is evicted before the head other requests share.
- Allocation failures: the pool must hold one sequence of `max_model_len` tokens
  (checked at construction, as vLLM checks at startup), so every request the window
  admits can run, alone if need be, and none is rejected for memory. A waiting
  request waits (first come, first served) until enough blocks are free; a running
  request that needs a block when none is free preempts the most recently admitted
  running request, which frees its blocks and re-queues at the front to be recomputed
  (largely from the prefix cache). A sequence reaching `max_model_len` tokens ends
  with "length".

Scheduling, each step: every running request gets its next chunk (one token when
decoding), then waiting requests are admitted in order while the step's token budget
(`max_batched_tokens`, chunked prefill) and `max_running` allow. A request reaches
the scheduler `frontend_ms` after it arrives (tokenization, block hashing, routing,
which run beside the GPU, not in its steps). Time is virtual: the clock advances by
each step's modelled cost, and the loop sleeps that long times `time_scale` (1 plays
in real time; 0.01 runs a hundred times faster; 0 only yields). A request arriving
mid-step is stamped with that step's start, so its wait includes the step in flight.
Timings (`RequestTiming`, simulated milliseconds) are kept in `timings` by request id
and passed to `on_finish`.

Cost model (simulated ms), `CostModel`:

    request:  frontend_ms = f · prompt_tokens                  (cached or not)
    step:     step_ms = s + Σ_chunks prefill + Σ_decoding decode
    prefill of tokens at positions p = c .. c+u-1:  Σ_p (a + b · p / 1000)
    decode of one token with context L:             d + k · L / 1000

`a` is the per-token cost of the dense layers, `b` attention's cost per token per
thousand earlier positions, `s` a forward pass's fixed cost (weight reads, launches),
`d` and `k` a decoding sequence's cost and its KV reads. Only uncached tokens are
prefilled; every term grows with tokens, context and batch size.

Derivation of the defaults from the seed's Dynamo-on-B200 figures (REFERENCE §5), a
52K-token prompt with `max_batched_tokens` 8192 (vLLM's default on large GPUs):
- "cached" (168 ms; header stripped 169 ms, next turn unchanged 167 ms) reuses all
  but the new turn, taken as 300 tokens: 51,696 tokens hit (block-aligned), 304
  prefilled in one step at positions ~51.7K. Cold (912 ms, a varying billing header
  at the very start misses every block): 52,000 tokens in 7 chunked steps.
- s = 7 ms (a decode step's floor) and b = 0.07·a per 1K positions (attention per
  context position over dense FLOPs for Qwen3-235B-A22B / DeepSeek-V3-class models,
  ~3-5 MFLOP vs ~44-74 GFLOP per token) are fixed from the hardware; the two
  figures then give a = 4.83 µs/token and b = 0.338 µs/token/Kctx (cold − cached =
  6·s + a·145,231), and f = 2.97 µs/token: a fully cached 52K prompt still costs
  ~154 ms of per-prompt-token work (tokenizing, hashing, routing 52K tokens).
- "Mutated prior thinking" (322 ms vs 167 ms): no model whose per-token prefill cost
  grows at most linearly with position can make ~500 recomputed tokens cost 155 ms
  when all 52K cost ~710 ms of prefill: a token at the end of the context costs at
  most twice the cold average (~14 µs), so 500 more tokens add at most ~14 ms (with
  these constants 500 + 300 recomputed tokens give 179 ms). The seed's 322 ms means the mutation forced ~7.6K tokens to be recomputed:
  the first mutated thinking block and everything after it (later turns, tool
  results). These defaults give 322 ms for a 7.6K-token recomputed tail.
- Decode: d = 0.05 ms per sequence, k = 0.012 ms per 1K context tokens (~96 KB of
  FP8 KV per token read at ~8 TB/s); they do not enter the TTFT figures.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import math
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from ..faults import EngineError, PromptTooLong
from ..kv_blocks import BlockHash, KvEventSink, extend_block_hashes
from .base import EngineChunk, EngineFinish, EngineInfo, EngineRequest, EngineTokenizer

if TYPE_CHECKING:
    from .scripted import ScriptedEngine

# How many requests' timings `SimulatedEngine.timings` keeps (the oldest go first).
TIMING_HISTORY = 10_000


@dataclass(frozen=True)
class CostModel:
    """What a step costs, in simulated milliseconds; the defaults reproduce the seed's
    B200 figures (see the module docstring for the derivation)."""

    frontend_ms_per_prompt_token: float = 0.00297
    step_ms: float = 7.0
    prefill_ms_per_token: float = 0.00483
    prefill_ms_per_token_per_kctx: float = 0.000338
    decode_ms_per_sequence: float = 0.05
    decode_ms_per_kctx: float = 0.012

    def frontend_ms(self, prompt_tokens: int) -> float:
        return self.frontend_ms_per_prompt_token * prompt_tokens

    def prefill_ms(self, start: int, count: int) -> float:
        """Computing the KV of `count` tokens at positions start .. start+count-1."""
        positions = count * start + count * (count - 1) / 2
        return count * self.prefill_ms_per_token + positions / 1000 * self.prefill_ms_per_token_per_kctx

    def decode_ms(self, context_lengths: Sequence[int]) -> float:
        """One token for each decoding sequence, each attending to its whole context."""
        return (
            len(context_lengths) * self.decode_ms_per_sequence + sum(context_lengths) / 1000 * self.decode_ms_per_kctx
        )

    def step_cost_ms(self, prefill_chunks: Sequence[tuple[int, int]], decode_contexts: Sequence[int]) -> float:
        """A forward pass over prefill chunks (start, count) and decoding sequences."""
        return (
            self.step_ms
            + sum(self.prefill_ms(start, count) for start, count in prefill_chunks)
            + (self.decode_ms(decode_contexts) if decode_contexts else 0.0)
        )


@dataclass(eq=False, slots=True)
class Block:
    block_id: int
    ref_count: int = 0
    # Set while the block is in the prefix cache.
    block_hash: BlockHash | None = None


class BlockPool:
    """A fixed pool of KV blocks: reference counts, the prefix cache by chained block
    hash, and an LRU of free blocks (cached ones stay reusable until evicted)."""

    def __init__(
        self,
        num_blocks: int,
        *,
        on_store: Callable[[BlockHash, BlockHash | None, Sequence[int]], None] | None = None,
        on_evict: Callable[[BlockHash], None] | None = None,
    ):
        if num_blocks < 1:
            raise ValueError("a block pool needs at least one block")
        self.blocks = [Block(i) for i in range(num_blocks)]
        # Free blocks, least recently used first.
        self._free: OrderedDict[int, Block] = OrderedDict((b.block_id, b) for b in self.blocks)
        self._cached: dict[BlockHash, Block] = {}
        self._on_store = on_store
        self._on_evict = on_evict

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_free(self) -> int:
        return len(self._free)

    def is_cached(self, block_hash: BlockHash) -> bool:
        return block_hash in self._cached

    def cached_prefix(self, hashes: Sequence[BlockHash]) -> list[Block]:
        """The cached blocks of the longest cached prefix of `hashes`."""
        hits = []
        for block_hash in hashes:
            block = self._cached.get(block_hash)
            if block is None:
                break
            hits.append(block)
        return hits

    def can_take(self, hits: Sequence[Block], fresh: int) -> bool:
        # A hit block that is free leaves the free list when taken.
        idle_hits = sum(1 for b in hits if b.ref_count == 0)
        return fresh <= len(self._free) - idle_hits

    def take(self, hits: Sequence[Block], fresh: int) -> list[Block]:
        """Reference the `hits` and allocate `fresh` blocks (check `can_take` first);
        returns them in that order."""
        for block in hits:
            if block.ref_count == 0:
                del self._free[block.block_id]
            block.ref_count += 1
        return [*hits, *(self._allocate() for _ in range(fresh))]

    def register(
        self, block: Block, block_hash: BlockHash, parent: BlockHash | None = None, tokens: Sequence[int] = ()
    ) -> None:
        """Enter a block whose tokens are all computed into the prefix cache (`parent`:
        the previous block's hash, `tokens` its own; for KV events)."""
        if block_hash in self._cached:
            return  # another sequence computed the same prefix first; this copy stays private
        block.block_hash = block_hash
        self._cached[block_hash] = block
        if self._on_store:
            self._on_store(block_hash, parent, tokens)

    def release(self, blocks: Sequence[Block]) -> None:
        """Drop one reference to each of a sequence's blocks, tail first: the tail goes
        into the LRU first and so is evicted before the prefix others share."""
        for block in reversed(blocks):
            block.ref_count -= 1
            if block.ref_count == 0:
                self._free[block.block_id] = block
                if block.block_hash is None:
                    # Holds nothing reusable: hand it out before any cached block.
                    self._free.move_to_end(block.block_id, last=False)

    def _allocate(self) -> Block:
        _, block = self._free.popitem(last=False)
        if block.block_hash is not None:
            del self._cached[block.block_hash]
            if self._on_evict:
                self._on_evict(block.block_hash)
            block.block_hash = None
        block.ref_count = 1
        return block


@dataclass
class CacheStats:
    # Full prompt blocks looked up at admission (at most all but the last token's).
    queried_blocks: int = 0
    hit_blocks: int = 0
    evicted_blocks: int = 0
    preemptions: int = 0

    @property
    def missed_blocks(self) -> int:
        return self.queried_blocks - self.hit_blocks


@dataclass
class RequestTiming:
    """One request's life on the simulated clock (milliseconds)."""

    request_id: str
    prompt_tokens: int
    arrival_ms: float
    # Prompt tokens found in the prefix cache at first admission (what the client is told).
    cached_tokens: int | None = None
    first_token_ms: float | None = None
    finish_ms: float | None = None
    output_tokens: int = 0
    finish_reason: EngineFinish | None = None
    preemptions: int = 0

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_token_ms is None else self.first_token_ms - self.arrival_ms

    @property
    def total_ms(self) -> float | None:
        return None if self.finish_ms is None else self.finish_ms - self.arrival_ms


class _State(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(eq=False)
class _Sequence:
    request: EngineRequest
    # What it will sample: the scripted answer, then a stop token when there is one.
    planned: list[int]
    timing: RequestTiming
    ready_ms: float
    tokens: list[int]
    hashes: list[BlockHash]
    outbox: asyncio.Queue[EngineChunk | EngineError] = field(default_factory=asyncio.Queue)
    state: _State = _State.WAITING
    blocks: list[Block] = field(default_factory=list)
    computed: int = 0
    # Leading blocks already offered to the prefix cache.
    registered: int = 0

    @property
    def prompt_len(self) -> int:
        return len(self.request.prompt_token_ids)

    @property
    def sampled(self) -> int:
        return len(self.tokens) - self.prompt_len


class SimulatedEngine:
    def __init__(
        self,
        tokenizer: EngineTokenizer,
        responder: ScriptedEngine,
        *,
        block_size: int = 16,
        num_blocks: int = 65_536,
        max_batched_tokens: int = 8192,
        max_running: int = 256,
        max_model_len: int = 262_144,
        cost: CostModel = CostModel(),
        time_scale: float = 1.0,
        on_finish: Callable[[RequestTiming], None] | None = None,
        kv_events: KvEventSink | None = None,
        name: str = "simulated",
    ):
        if block_size < 1 or max_batched_tokens < 1 or max_running < 1 or time_scale < 0:
            raise ValueError("block_size, max_batched_tokens and max_running must be positive, time_scale not negative")
        if num_blocks * block_size < max_model_len:
            raise ValueError(
                f"{num_blocks} KV blocks of {block_size} tokens can not hold one {max_model_len}-token sequence; "
                "add blocks or lower max_model_len"
            )
        self._tokenizer = tokenizer
        self._responder = responder
        self.block_size = block_size
        self.cost = cost
        self.time_scale = time_scale
        self.stats = CacheStats()
        self.pool = BlockPool(num_blocks, on_store=self._stored, on_evict=self._evicted)
        self.timings: OrderedDict[str, RequestTiming] = OrderedDict()
        self._max_batched_tokens = max_batched_tokens
        self._max_running = max_running
        self._max_model_len = max_model_len
        self._on_finish = on_finish
        self._kv_events = kv_events
        self._name = name
        self._clock_ms = 0.0
        # Waiting requests in the order they reach the scheduler; preempted ones in front.
        self._waiting: list[_Sequence] = []
        # Running requests in admission order (the last is preempted first).
        self._running: list[_Sequence] = []
        self._scheduler: asyncio.Task[None] | None = None

    def info(self) -> EngineInfo:
        return EngineInfo(self._name, self._max_model_len)

    @property
    def clock_ms(self) -> float:
        """The simulated time, in milliseconds since the engine was made."""
        return self._clock_ms

    async def start(self) -> None:
        return None  # the scheduler runs while there is work

    async def close(self) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduler
            self._scheduler = None  # a task cancelled before it ran never reached its finally
        for seq in [*self._running, *self._waiting]:
            self._fail(seq, EngineError("the simulated engine was closed"))

    async def generate(self, request: EngineRequest) -> AsyncGenerator[EngineChunk, None]:
        prompt_len = len(request.prompt_token_ids)
        if prompt_len >= self._max_model_len:
            raise PromptTooLong(prompt_len, self._max_model_len)
        seq = self._submit(request)
        try:
            while True:
                chunk = await seq.outbox.get()
                if isinstance(chunk, EngineError):
                    raise chunk
                yield chunk
                if chunk.finish_reason is not None:
                    return
        finally:
            # The consumer closed the stream early (abort), or it ended: either way
            # the request's blocks go back to the pool now.
            if seq.state is not _State.FINISHED:
                self._finish(seq, "abort")

    # ---- requests in and out ---------------------------------------------------------------

    def _submit(self, request: EngineRequest) -> _Sequence:
        answer = self._tokenizer.encode(self._responder.answer_text(request))
        tokens = list(request.prompt_token_ids)
        timing = RequestTiming(request.request_id, len(tokens), self._clock_ms)
        seq = _Sequence(
            request,
            planned=answer + request.stop_token_ids[:1],
            timing=timing,
            ready_ms=self._clock_ms + self.cost.frontend_ms(len(tokens)),
            tokens=tokens,
            hashes=extend_block_hashes([], tokens, self.block_size),
        )
        self.timings[request.request_id] = timing
        self.timings.move_to_end(request.request_id)
        while len(self.timings) > TIMING_HISTORY:
            self.timings.popitem(last=False)
        # The queue is in order of readiness but for preempted requests in front, all
        # ready already, as early as this one can be: bisection still finds its place.
        bisect.insort(self._waiting, seq, key=lambda s: s.ready_ms)
        if self._scheduler is None:
            self._scheduler = asyncio.get_running_loop().create_task(self._run())
        return seq

    def _finish(self, seq: _Sequence, reason: EngineFinish) -> None:
        if seq.state is _State.RUNNING:
            self._running.remove(seq)
        elif seq.state is _State.WAITING:
            self._waiting.remove(seq)
        self.pool.release(seq.blocks)
        seq.blocks = []
        seq.state = _State.FINISHED
        seq.timing.finish_ms = self._clock_ms
        seq.timing.finish_reason = reason
        if self._on_finish:
            self._on_finish(seq.timing)

    def _fail(self, seq: _Sequence, error: EngineError) -> None:
        seq.outbox.put_nowait(error)
        self._finish(seq, "abort")

    # ---- the scheduler loop ----------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while self._waiting or self._running:
                batch = self._schedule()
                if not batch:
                    # Only requests still in the frontend: wait for the first to arrive.
                    await self._advance(self._waiting[0].ready_ms - self._clock_ms)
                    continue
                await self._advance(self._step_cost(batch))
                self._complete(batch)
        except Exception as error:
            for seq in [*self._running, *self._waiting]:
                self._fail(seq, EngineError(f"the simulated engine failed: {error!r}"))
            raise
        finally:
            self._scheduler = None

    async def _advance(self, ms: float) -> None:
        await asyncio.sleep(ms * self.time_scale / 1000)
        self._clock_ms += ms

    def _schedule(self) -> list[tuple[_Sequence, int]]:
        """This step's work: (sequence, tokens to compute) for running then newly admitted requests."""
        budget = self._max_batched_tokens
        batch: list[tuple[_Sequence, int]] = []
        preemptions = self.stats.preemptions
        for seq in list(self._running):
            if seq.state is not _State.RUNNING:
                continue  # preempted to make room for an earlier one
            count = min(len(seq.tokens) - seq.computed, budget)
            if count == 0 or not self._make_room(seq, seq.computed + count):
                continue
            batch.append((seq, count))
            budget -= count
        # As vLLM: a step that had to preempt admits nobody new.
        preempted = self.stats.preemptions > preemptions
        while not preempted and self._waiting and budget > 0 and len(self._running) < self._max_running:
            seq = self._waiting[0]
            if seq.ready_ms > self._clock_ms:
                break
            lookup = (len(seq.tokens) - 1) // self.block_size
            hits = self.pool.cached_prefix(seq.hashes[:lookup])
            computed = len(hits) * self.block_size
            count = min(len(seq.tokens) - computed, budget)
            fresh = self._blocks_for(computed + count) - len(hits)
            if not self.pool.can_take(hits, fresh):
                break  # first come, first served: it waits for blocks to free up
            self._waiting.pop(0)
            seq.blocks = self.pool.take(hits, fresh)
            seq.computed = computed
            seq.registered = len(hits)
            seq.state = _State.RUNNING
            self.stats.queried_blocks += lookup
            self.stats.hit_blocks += len(hits)
            if seq.timing.cached_tokens is None:
                seq.timing.cached_tokens = computed
            self._running.append(seq)
            batch.append((seq, count))
            budget -= count
        return batch

    def _make_room(self, seq: _Sequence, tokens: int) -> bool:
        """Blocks for `seq`'s first `tokens` tokens, preempting the latest admitted
        requests while none are free; False when that was `seq` itself. A lone
        sequence always fits: the pool holds `max_model_len` tokens."""
        fresh = self._blocks_for(tokens) - len(seq.blocks)
        while not self.pool.can_take((), fresh):
            victim = self._running.pop()
            self._preempt(victim)
            if victim is seq:
                return False
        seq.blocks += self.pool.take((), fresh)
        return True

    def _preempt(self, seq: _Sequence) -> None:
        self.pool.release(seq.blocks)
        seq.blocks = []
        seq.computed = seq.registered = 0
        seq.state = _State.WAITING
        self._waiting.insert(0, seq)
        seq.timing.preemptions += 1
        self.stats.preemptions += 1

    def _step_cost(self, batch: list[tuple[_Sequence, int]]) -> float:
        prefills: list[tuple[int, int]] = []
        decodes: list[int] = []
        for seq, count in batch:
            if count == 1 and seq.computed >= seq.prompt_len:
                decodes.append(seq.computed + 1)
            else:
                prefills.append((seq.computed, count))
        return self.cost.step_cost_ms(prefills, decodes)

    def _complete(self, batch: list[tuple[_Sequence, int]]) -> None:
        for seq, count in batch:
            if seq.state is not _State.RUNNING:
                continue  # aborted while the step ran
            seq.computed += count
            full = seq.computed // self.block_size
            for index in range(seq.registered, full):
                parent = seq.hashes[index - 1] if index else None
                tokens = seq.tokens[index * self.block_size : (index + 1) * self.block_size]
                self.pool.register(seq.blocks[index], seq.hashes[index], parent, tokens)
            seq.registered = full
            if seq.computed == len(seq.tokens):
                self._sample(seq)

    def _sample(self, seq: _Sequence) -> None:
        first = seq.timing.first_token_ms is None
        if first:
            seq.timing.first_token_ms = self._clock_ms
        chunk = EngineChunk(cached_tokens=seq.timing.cached_tokens if first else None)
        if first:  # the prompt's full blocks are registered by now; the hits were already cached
            chunk.cache_written_tokens = max(0, seq.registered * self.block_size - (seq.timing.cached_tokens or 0))
        if seq.sampled < len(seq.planned):
            token = seq.planned[seq.sampled]
            seq.tokens.append(token)
            extend_block_hashes(seq.hashes, seq.tokens, self.block_size)
            if token in seq.request.stop_token_ids:
                chunk.finish_reason = "stop"
            else:
                chunk.token_ids = [token]
                seq.timing.output_tokens += 1
                if seq.sampled == len(seq.planned):
                    chunk.finish_reason = "stop"
                elif seq.sampled >= seq.request.max_tokens or len(seq.tokens) >= self._max_model_len:
                    chunk.finish_reason = "length"
        else:
            chunk.finish_reason = "stop"  # an empty answer and no stop token
        seq.outbox.put_nowait(chunk)
        if chunk.finish_reason is not None:
            self._finish(seq, chunk.finish_reason)

    # ---- helpers -----------------------------------------------------------------------------

    def _blocks_for(self, tokens: int) -> int:
        return math.ceil(tokens / self.block_size)

    def _stored(self, block_hash: BlockHash, parent: BlockHash | None, tokens: Sequence[int]) -> None:
        if self._kv_events is not None:
            self._kv_events.stored((block_hash,), parent=parent, token_ids=tokens)

    def _evicted(self, block_hash: BlockHash) -> None:
        self.stats.evicted_blocks += 1
        if self._kv_events is not None:
            self._kv_events.removed((block_hash,))
