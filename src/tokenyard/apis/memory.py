"""What the model wrote for each tool call, remembered for its replay.

Clients send a call back as an object (Anthropic `tool_use.input`), not as the JSON
text the model generated. Re-serialising it would change spacing and key order,
and the next prompt would stop being a prefix-extension of the last. The exact
text is kept here, bounded, and used when the echoed input still equals it.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any


class ToolCallMemory:
    def __init__(self, max_calls: int = 20_000):
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

    def recall(self, call_id: str, echoed: Any) -> str | None:
        with self._lock:
            text = self._calls.get(_key(call_id))
        if text is None:
            return None
        try:
            return text if json.loads(text) == echoed else None
        except ValueError:
            return None


def _key(call_id: str) -> str:
    # OpenClaw strips every character outside [A-Za-z0-9] from the ids it echoes
    # (`toolu_ab12` comes back as `tooluab12`); both spellings find the call.
    return "".join(c for c in call_id if c.isalnum())
