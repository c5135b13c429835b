"""`/v1/models` in both shapes: Anthropic's when the client sends
`anthropic-version`, OpenAI's otherwise. Ids may contain `/` (`Qwen/Qwen3-8B`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any


def _iso(created: int) -> str:
    return datetime.fromtimestamp(created, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def anthropic_model(model_id: str, created: int, display_name: str | None = None) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": display_name or model_id, "created_at": _iso(created)}


def openai_model(model_id: str, created: int, owned_by: str = "tokenyard") -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": owned_by}


def model_list(ids: Iterable[tuple[str, int]], anthropic: bool) -> dict[str, Any]:
    items = list(ids)
    if anthropic:
        data = [anthropic_model(i, c) for i, c in items]
        return {
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
    return {"object": "list", "data": [openai_model(i, c) for i, c in items]}
