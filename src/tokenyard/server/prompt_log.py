"""The prompt log (`--prompt-log`): one JSON line per generation, for debugging
what the model was shown. Off unless asked for: it holds prompt text."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from .pipeline import Generation
from .state import ServerState


def log_prompt(state: ServerState, body: Any, generation: Generation) -> None:
    path = state.config.prompt_log
    if path is None:
        return
    record = {
        "time": time.time(),
        "process": os.getpid(),  # which process served it (`--processes N`)
        "request": body,
        "prompt_text": generation.prompt.text,
        "prompt_tokens": len(generation.prompt.token_ids),
        "preamble_stripped": generation.prompt.preamble_stripped,
        "session": generation.conversation.session_key,
        "agent_id": generation.conversation.agent_id,
        "parent_agent_id": generation.conversation.parent_agent_id,
        "stream": generation.prefix.session if generation.prefix else None,
        "stream_kind": generation.prefix.kind if generation.prefix else None,
        "request_kind": generation.conversation.request_kind,
        "prefix_matched_tokens": generation.prefix.matched_tokens if generation.prefix else None,
        "prefix_stable": generation.prefix.stable if generation.prefix else None,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
