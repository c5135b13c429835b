"""`/v1/models` in both shapes: Anthropic's when the client sends
`anthropic-version`, OpenAI's otherwise. Ids may contain `/` (`Qwen/Qwen3-8B`).

Anthropic model objects carry what a client steers a session by: the real context
window (`max_input_tokens`), the output cap (`max_tokens`) and `capabilities`
(thinking as the model's profile has it, effort levels only where the chat template
reads them), plus the fields the current `anthropic` SDK requires (`lifecycle`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Anthropic's effort levels; a template with `reasoning_effort` knows low/medium/high.
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
TEMPLATE_EFFORT_LEVELS = frozenset({"low", "medium", "high"})


@dataclass(frozen=True)
class ModelCard:
    """What the server knows about one served id."""

    id: str
    created: int
    max_input_tokens: int
    max_tokens: int
    thinking: bool  # the model has a reasoning parser: it thinks
    thinking_switch: bool  # thinking can be turned off (a template variable)
    effort: bool  # the template reads reasoning_effort
    display_name: str | None = None


def effort_levels(card: ModelCard) -> frozenset[str]:
    """The effort levels that change what the model does: those its chat template
    distinguishes, none when it ignores effort. Both the Anthropic model object and
    the Codex catalog offer exactly these."""
    return TEMPLATE_EFFORT_LEVELS if card.effort else frozenset()


def _iso(created: int) -> str:
    return datetime.fromtimestamp(created, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _support(supported: bool) -> dict[str, bool]:
    return {"supported": supported}


def anthropic_capabilities(card: ModelCard) -> dict[str, Any]:
    """Every capability key, as the API always lists them all."""
    no = _support(False)
    levels = effort_levels(card)
    return {
        "batch": no,
        "citations": no,
        "code_execution": no,
        "context_management": no,
        "effort": {
            "supported": bool(levels),
            **{level: _support(level in levels) for level in EFFORT_LEVELS},
        },
        "image_input": no,
        "pdf_input": no,
        "server_tools": {"supported": False, "code_execution": no, "web_search": no},
        "structured_outputs": _support(True),  # validated on every engine, guided where it can
        "thinking": {
            "supported": card.thinking,
            "types": {
                "enabled": _support(card.thinking),
                "adaptive": _support(card.thinking),
                "between_tools": _support(card.thinking),
                "disabled": _support(not card.thinking or card.thinking_switch),
            },
        },
    }


def anthropic_model(card: ModelCard) -> dict[str, Any]:
    return {
        "type": "model",
        "id": card.id,
        "display_name": card.display_name or card.id,
        "created_at": _iso(card.created),
        "lifecycle": "active",
        "deprecated_at": None,
        "retires_at": None,
        "line": None,
        "max_input_tokens": card.max_input_tokens,
        "max_tokens": card.max_tokens,
        "capabilities": anthropic_capabilities(card),
    }


def openai_model(card: ModelCard, owned_by: str = "tokenyard") -> dict[str, Any]:
    return {
        "id": card.id,
        "object": "model",
        "created": card.created,
        "owned_by": owned_by,
        # vLLM's field name for the window, read by OpenAI-shaped clients that know it.
        "max_model_len": card.max_input_tokens,
    }


def model_list(cards: Iterable[ModelCard], anthropic: bool) -> dict[str, Any]:
    items = list(cards)
    if anthropic:
        data = [anthropic_model(c) for c in items]
        return {
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
    return {"object": "list", "data": [openai_model(c) for c in items]}
