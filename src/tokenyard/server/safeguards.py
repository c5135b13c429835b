"""Runs the safety classifier on a turn's tool calls (the I/O shell of safeguards.py).

Each call is judged as soon as it is complete (`call_ready`, from the pipeline's
`ToolCallReady`), in a task, while the turn goes on; the turn's `Finish` waits for
the verdicts. The calls of one turn are judged one after another: each prompt
extends the previous one, so the engine's prefix cache (vLLM's, the embedded
engine's) holds all but the new call by then, where six prompts prefilled side by
side would each pay in full (benchmarks/safeguards_classifier.py). Every
classification has a deadline from its start; once one misses it the turn's later
calls are not sent (the engine is not keeping up), so the wait is bounded. Whatever
goes wrong (deadline, engine error, a prompt too long for the classifier, an answer
without a clear verdict) is no verdict, and Claude Code does not run a call without one.

Classifications do not take a generation slot: the turn they belong to holds one,
and waiting for another (with a single slot, forever) would only turn every verdict
into a timeout. The engine batches them with the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from ..conversation import Conversation, ToolCall
from ..events import CallVerdict, Finish, StreamError, TextDelta, ToolCallReady
from ..faults import EngineError, PromptTooLong, TemplateError
from ..safeguards import classifier_conversation, no_verdict, read_verdict
from ..settings import DEFAULT_SAFEGUARDS_TIMEOUT
from . import metrics
from .pipeline import Pipeline

log = logging.getLogger("tokenyard.safeguards")


class CallReviewer:
    """The `CallReview` of one turn (server/pipeline.py)."""

    def __init__(
        self,
        classifier: Pipeline,
        conversation: Conversation,
        context: Mapping[str, Any],
        *,
        timeout: float = DEFAULT_SAFEGUARDS_TIMEOUT,
    ) -> None:
        self._classifier = classifier
        self._conversation = conversation
        self._context = context
        self._timeout = timeout
        self._calls: list[ToolCall] = []
        self._tasks: dict[str, asyncio.Task[CallVerdict]] = {}
        self._last: asyncio.Task[CallVerdict] | None = None

    def call_ready(self, call: ToolCallReady) -> None:
        self._calls.append(ToolCall(id=call.id, name=call.name, arguments=call.arguments))
        request = classifier_conversation(
            self._conversation, self._calls, self._context, model=self._classifier.model.name
        )
        task = asyncio.get_running_loop().create_task(self._judge(request, self._last))
        self._tasks[call.id] = self._last = task

    async def verdicts(self) -> dict[str, CallVerdict]:
        # Each task ends by its own deadline, so this wait is bounded too.
        return {call: await task for call, task in self._tasks.items()}

    def cancel(self) -> None:
        for task in self._tasks.values():
            task.cancel()

    async def _judge(self, request: Conversation, after: asyncio.Task[CallVerdict] | None) -> CallVerdict:
        if after is not None and (await after).unavailable == "timeout":
            verdict = no_verdict("timeout")
            metrics.observe_verdict(self._classifier.model.name, "timeout", 0.0)
            return verdict
        started = time.perf_counter()
        verdict = await self._verdict(request)
        outcome = verdict.unavailable or ("flagged" if verdict.flagged else "not_flagged")
        metrics.observe_verdict(self._classifier.model.name, outcome, time.perf_counter() - started)
        return verdict

    async def _verdict(self, request: Conversation) -> CallVerdict:
        try:
            async with asyncio.timeout(self._timeout):
                return await self._classify(request)
        except TimeoutError:
            log.warning("safety classifier gave no verdict within %g s", self._timeout)
            return no_verdict("timeout")
        except PromptTooLong as error:
            log.warning("safety classifier prompt too long: %s", error)
            return no_verdict("input_too_long")
        except (EngineError, TemplateError) as error:
            log.warning("safety classifier failed: %s", error)
            return no_verdict("error")
        except Exception:  # a bug must not let a call through, nor fail the turn
            log.exception("safety classifier failed")
            return no_verdict("error")

    async def _classify(self, request: Conversation) -> CallVerdict:
        generation = await self._classifier.prepare(request)
        text: list[str] = []
        async with contextlib.aclosing(generation.events()) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, StreamError):
                    log.warning("safety classifier failed: %s", event.message)
                    return no_verdict("error")
                elif isinstance(event, Finish):
                    verdict = read_verdict(
                        "".join(text),
                        stopped_at_verdict=event.reason == "stop_sequence",
                        cut_short=event.reason == "length",
                    )
                    if verdict.flagged is None:
                        log.warning("safety classifier answered without a clear verdict")
                    return verdict
        return no_verdict("error")
