"""Exact replay: what the model wrote comes back into the next prompt byte for byte.

Clients echo our output back on the next turn, but not always as we sent it:
reasoning may come back without its text (Claude Code's `display: "omitted"`, Codex's
`encrypted_content`), and tool calls come back as objects (Anthropic `tool_use.input`)
or re-serialised JSON (OpenClaw), which would change spacing and key order. Either
change would make the next prompt stop being a prefix-extension of the last, and the
engine's KV cache would be lost.

`ReplayState` is the one place the API spokes ask: encoders seal reasoning and
remember each call's exact text; request parsers open sealed reasoning and restore a
call's text when the echoed value still equals it.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from ..sealing import ReasoningSeal


class ReplayState:
    def __init__(self, seal: ReasoningSeal, *, max_calls: int = 20_000) -> None:
        self._seal = seal
        self._calls = _CallMemory(max_calls)

    # ---- reasoning --------------------------------------------------------------------

    def seal_reasoning(self, reasoning: str, context: str) -> str:
        """An opaque field (Anthropic `signature`, Responses `encrypted_content`) that
        restores `reasoning` exactly; `context` binds it to where it was issued."""
        return self._seal.seal(reasoning, context)

    def open_reasoning(self, token: str | None, context: str) -> str | None:
        """The reasoning sealed in `token`, or None if it is not ours or was altered."""
        return self._seal.open(token, context)

    # ---- tool calls -------------------------------------------------------------------

    def remember_call(self, call_id: str, arguments: str) -> None:
        self._calls.remember(call_id, arguments)

    def restore_call(self, call_id: str, echoed: Any, fallback: str) -> str:
        """The arguments the model wrote for `call_id` when the client echoed the same
        value (`echoed`, decoded), else `fallback` (what the client sent, serialised)."""
        text = self._calls.recall(call_id)
        if text is None:
            return fallback
        try:
            return text if json.loads(text) == echoed else fallback
        except ValueError:
            return fallback


class _CallMemory:
    """The exact arguments of recent calls, bounded, by id."""

    def __init__(self, max_calls: int) -> None:
        self._max = max_calls
        self._calls: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, call_id: str, arguments: str) -> None:
        key = _key(call_id)
        with self._lock:
            self._calls[key] = arguments
            self._calls.move_to_end(key)
            while len(self._calls) > self._max:
                self._calls.popitem(last=False)

    def recall(self, call_id: str) -> str | None:
        with self._lock:
            return self._calls.get(_key(call_id))


def _key(call_id: str) -> str:
    # OpenClaw strips every character outside [A-Za-z0-9] from the ids it echoes
    # (`toolu_ab12` comes back as `tooluab12`); both spellings find the call.
    return "".join(c for c in call_id if c.isalnum())
