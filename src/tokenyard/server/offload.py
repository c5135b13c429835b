"""CPU work off the event loop (DESIGN rule 9).

Chat-template rendering, tokenization, count_tokens and the parsing and validation
of large request bodies take milliseconds to seconds of CPU; on the event loop they
would stall every other request, `/health` included. `Offload` runs them on a
worker thread (one unless `--offload-workers` says more: `DEFAULT_WORKERS` says
why). Threads, not processes: the tokenizer's segment cache (and every other cache) stays one shared object, and HF `tokenizers` releases
the GIL while it encodes (`encode_batch`). Pure-Python work (jinja rendering) still
holds the GIL, but the interpreter switches threads every few milliseconds, so the
loop keeps answering. A C call holds it throughout, so O(n) C work on large inputs
is done a slice at a time: a large body is decoded a piece at a time (wire_json.py),
a long answer encoded so (`json_in_pieces`), a long list freed so (`free_in_pieces`).
The workers run at the loop's own priority: niced, a worker that held the GIL waited
longer for a core, and the loop with it (benchmarks/README.md, loop_latency.py).

`Offload(enabled=False)` runs the work inline, on the loop: what
`benchmarks/loop_latency.py` compares against.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# Bodies below this many bytes are parsed on the loop: a thread hand-off costs more.
SMALL_BODY_BYTES = 64 * 1024
# Bodies below this many bytes have their prompt rendered on the loop: the hand-off to a
# thread and back adds ~0.3 ms to the time to first token, about what rendering such a
# body costs (4 KB of new text: ~1 ms; cached segments: ~0.1 ms; the worst, 100 tiny
# turns through Qwen3's template: ~2.6 ms, far under loop_latency.py's stall bound).
SMALL_RENDER_BYTES = 4 * 1024


# One worker by default. Rendering, validation and JSON decoding hold the GIL, so more
# threads give them no parallelism; they only add GIL contenders, and in CPython the
# loop then loses the GIL to a worker again and again (a convoy). Measured with
# `loop_latency.py --hostile` on 2 cores: worst /health stall 102-108 ms and p99 18-19 ms
# with one worker, 218-423 ms and 35-56 ms with two. Tokenizing many long prompts at
# once is what more workers buy (`--offload-workers N`).
DEFAULT_WORKERS = 1


# How long a thread may hold the GIL once another asks for it. A worker rendering or
# validating a large body holds it in pure Python, and at CPython's 5 ms the loop
# waited that long at each wake-up behind it (loop_latency.py --hostile, one worker,
# side by side: p99 28 -> 12.5 ms, worst stall 117 -> 102 ms at 1 ms).
GIL_SWITCH_INTERVAL_S = 0.001


def hand_the_gil_back_sooner() -> None:
    """Process-wide: call once when serving starts."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


def freeze_start_up_objects() -> None:
    """Process-wide: call once the models are loaded. A full (generation 2) garbage
    collection walks every container the process holds and holds the GIL throughout,
    so whichever thread's allocation sets it off (a worker decoding a large body, as
    often as not) blocks the loop for all of it: 48 ms of CPU for a served Qwen3 (its
    tokenizer, template and imports, ~77K containers; 200-490 ms wall seen under
    load, loop_latency.py's gc timing). What start-up built lives as long as the process,
    so it is moved out of the collector's sight (`gc.freeze`) and a full collection
    walks only what requests made since."""
    gc.freeze()


class Offload:
    def __init__(self, workers: int | None = None, *, enabled: bool = True):
        self.enabled = enabled
        self.workers = workers or DEFAULT_WORKERS
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)` on a worker thread (inline when disabled); its
        exception is raised here."""
        if not self.enabled:
            return fn(*args, **kwargs)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tokenyard-offload")
        call = functools.partial(fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def run_if_large(self, size: int, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """As `run` for inputs of `size` bytes at least `SMALL_BODY_BYTES`; smaller
        ones inline (request bodies: most are small)."""
        if size < SMALL_BODY_BYTES:
            return fn(*args, **kwargs)
        return await self.run(fn, *args, **kwargs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


# Freeing a list of millions of ints is one GIL-held C call (~0.1 s for 4M); emptied
# this many at a time, another thread (the event loop) gets the GIL in between.
FREE_SLICE = 64 * 1024


def free_in_pieces(values: list[Any], at_a_time: int = FREE_SLICE) -> None:
    """Empty `values` (which nothing else may still use) `at_a_time` items at a time."""
    while values:
        del values[-at_a_time:]


# A long list or string in an answer is encoded this many items (characters) at a
# time: `json.dumps` of a tokenize answer's 1.2M ids held the GIL for 0.15 s.
JSON_SLICE = 16 * 1024
JSON_SLICE_CHARS = 256 * 1024
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def json_in_pieces(value: Any) -> bytes:
    """`value` as the UTF-8 JSON Starlette's `JSONResponse` sends, encoded a slice at
    a time (its dicts' keys are strings)."""
    out: list[str] = []
    _encode_into(value, out)
    return "".join(out).encode()


def _encode_into(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(f"{',' if i else ''}{_ENCODE(key)}:")
            _encode_into(item, out)
        out.append("}")
    elif isinstance(value, list) and len(value) > JSON_SLICE:
        out.append("[")
        for at in range(0, len(value), JSON_SLICE):
            out.append(("," if at else "") + _ENCODE(value[at : at + JSON_SLICE])[1:-1])
        out.append("]")
    elif isinstance(value, str) and len(value) > JSON_SLICE_CHARS:
        # A `str` holds a surrogate pair as one code point: a slice never splits one.
        out.append('"')
        out.extend(_ENCODE(value[at : at + JSON_SLICE_CHARS])[1:-1] for at in range(0, len(value), JSON_SLICE_CHARS))
        out.append('"')
    else:
        out.append(_ENCODE(value))
