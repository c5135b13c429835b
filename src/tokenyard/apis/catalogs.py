"""The Codex model catalog (sans-IO).

Codex decides a model's whole tool surface and base instructions from its catalog
entry (`ModelInfo`): an id it has no entry for gets fallback metadata (no
`apply_patch`, no `tool_search`, other instructions, a 272,000-token window). A
provider may hand Codex its own catalog (`model_catalog_url`, fetched as
`<url>?client_version=…`, or a `model_catalog_json` file); that catalog *replaces*
the bundled one, so it lists every id served here.

Each entry is a copy of the catalog entry the operator names as the profile to
inherit (`--codex-profile gpt-5.5`: its base instructions, shell and apply_patch
types, truncation policy…) with what is true of this server put over it: the id,
the real context window, tool-search and parallel-call support, reasoning levels
only where the chat template reads effort (the same fact the Anthropic model
object states: `apis/models.effort_levels`), no upgrade prompt, no service tiers, and
Responses over WebSocket preferred (server/websocket.py serves it).

Codex 0.169.0 refuses an entry that lacks any of `REQUIRED_FIELDS`, or that has
neither `base_instructions` nor `model_messages.instructions_template`, and then
falls back to its bundled catalog for everything.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from .models import ModelCard, effort_levels

# Fields without a default in Codex 0.169.0's ModelInfo: an entry missing one fails to decode.
REQUIRED_FIELDS = (
    "slug",
    "display_name",
    "supported_reasoning_levels",
    "shell_type",
    "visibility",
    "supported_in_api",
    "priority",
    "support_verbosity",
    "truncation_policy",
    "experimental_supported_tools",
)


class CatalogError(ValueError):
    """The catalog the profile was to come from has no usable entry."""


def find_profile(catalog: Mapping[str, Any], slug: str) -> dict[str, Any]:
    """The entry for `slug` in a Codex catalog (`{"models": [...]}`, e.g. the output
    of `codex debug models --bundled`)."""
    models = catalog.get("models")
    if not isinstance(models, list):
        raise CatalogError("not a Codex model catalog: no `models` list")
    for entry in models:
        if isinstance(entry, dict) and entry.get("slug") == slug:
            if not _has_instructions(entry):
                raise CatalogError(f"catalog entry {slug!r} has no base instructions")
            return entry
    known = ", ".join(str(e.get("slug")) for e in models if isinstance(e, dict))
    raise CatalogError(f"no model {slug!r} in the Codex catalog; it has: {known}")


def codex_model_entry(card: ModelCard, profile: Mapping[str, Any], *, priority: int = 0) -> dict[str, Any]:
    """`profile`'s entry, served as `card.id` with this server's facts."""
    entry = copy.deepcopy(dict(profile))
    entry.update(
        slug=card.id,
        display_name=card.id,
        description="Served by tokenyard.",  # Codex shows it as "`<id>`: <description> Reasoning efforts: …"
        context_window=card.max_input_tokens,
        max_context_window=card.max_input_tokens,
        auto_compact_token_limit=None,
        supports_parallel_tool_calls=True,
        supports_search_tool=True,
        apply_patch_tool_type=profile.get("apply_patch_tool_type") or "freeform",
        visibility="list",
        supported_in_api=True,
        priority=priority,
        upgrade=None,
        availability_nux=None,
        prefer_websockets=True,
        default_service_tier=None,
        service_tiers=[],
        additional_speed_tiers=[],
    )
    # Codex offers (and sends) only the levels listed; a template that ignores effort gets none.
    levels = effort_levels(card)
    offered = [lv for lv in entry.get("supported_reasoning_levels") or [] if lv.get("effort") in levels]
    default = entry.get("default_reasoning_level")
    if default not in {lv["effort"] for lv in offered}:
        default = offered[0]["effort"] if offered else None
    entry.update(supported_reasoning_levels=offered, default_reasoning_level=default)
    for field in REQUIRED_FIELDS:
        if field not in entry:
            raise CatalogError(f"the profile entry lacks `{field}`, which Codex requires")
    return entry


def codex_catalog(cards: Iterable[ModelCard], profile: Mapping[str, Any]) -> dict[str, Any]:
    """`{"models": [...]}` with an entry for every served id (what `model_catalog_json` reads)."""
    return {"models": [codex_model_entry(card, profile, priority=n) for n, card in enumerate(cards)]}


def with_codex_catalog(model_list: Mapping[str, Any], catalog: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI model list with the Codex catalog's `models` beside `data`: one body
    both OpenAI clients and Codex (`model_catalog_url`) decode."""
    return {**model_list, "models": catalog["models"]}


def catalog_etag(body: Mapping[str, Any]) -> str:
    """A strong ETag for a catalog body: the same catalog, the same tag."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return '"' + hashlib.sha256(canonical.encode()).hexdigest()[:32] + '"'


def _has_instructions(entry: Mapping[str, Any]) -> bool:
    messages = entry.get("model_messages")
    template = messages.get("instructions_template") if isinstance(messages, dict) else None
    return bool(entry.get("base_instructions") or template)
