"""Anthropic's `safeguards` request field and `safeguard_results` answer (sans-IO).

Claude Code 2.1.330 in auto mode sends, on every `/v1/messages` (beta
`dangerous-tool-use-2026-09-03`):

    "safeguards": [{"type": "dangerous_tool_use", "classifier_context": {…}}]

and reads back, in the streamed `message_delta.delta` (or at the top level of a
whole message):

    "safeguard_results": [{"type": "dangerous_tool_use", "status": {
        "type": "available",
        "tool_uses": {"toolu_…": {"type": "evaluated", "outcome": "flagged" | "not_flagged",
                                  "explanation": "…"}
                                 | {"type": "unavailable", "reason": "timeout" | "error" | …}}}}]

A call it finds no verdict for is not run (tests/e2e/CLAUDE_CODE_NOTES.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...events import CallVerdict

DANGEROUS_TOOL_USE = "dangerous_tool_use"


def requested_context(safeguards: list[dict[str, Any]] | None) -> Mapping[str, Any] | None:
    """The `classifier_context` of the request's dangerous_tool_use safeguard
    (empty when it sent none); None when it asked for no such check."""
    for entry in safeguards or []:
        if isinstance(entry, dict) and entry.get("type") == DANGEROUS_TOOL_USE:
            context = entry.get("classifier_context")
            return context if isinstance(context, dict) else {}
    return None


def safeguard_results(verdicts: Mapping[str, CallVerdict]) -> list[dict[str, Any]]:
    """The verdicts, keyed by tool_use id, as the `safeguard_results` value."""
    return [
        {
            "type": DANGEROUS_TOOL_USE,
            "status": {"type": "available", "tool_uses": {call: _status(v) for call, v in verdicts.items()}},
        }
    ]


def _status(verdict: CallVerdict) -> dict[str, Any]:
    if verdict.flagged is None:
        return {"type": "unavailable", "reason": verdict.unavailable or "error"}
    status: dict[str, Any] = {"type": "evaluated", "outcome": "flagged" if verdict.flagged else "not_flagged"}
    if verdict.flagged and verdict.explanation:
        status["explanation"] = verdict.explanation
    return status
