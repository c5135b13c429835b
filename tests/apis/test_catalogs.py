"""The Codex model catalog body (apis/catalogs.py) and its route."""

from __future__ import annotations

import httpx
import pytest

from tokenyard.apis.catalogs import (
    REQUIRED_FIELDS,
    CatalogError,
    catalog_etag,
    codex_catalog,
    find_profile,
    with_codex_catalog,
)
from tokenyard.apis.models import ModelCard, anthropic_model, model_list
from tokenyard.server.state import ServerConfig

from ..server.serving import running_server

CARD = ModelCard("m", 0, max_input_tokens=1000, max_tokens=1000, thinking=True, thinking_switch=True, effort=False)


def card(model_id: str = "m", window: int = 1000, *, thinking: bool = True, effort: bool = True) -> ModelCard:
    return ModelCard(model_id, 0, window, window, thinking=thinking, thinking_switch=True, effort=effort)


# The shape of a Codex 0.169.0 catalog entry (the fields it requires, plus a few it reads).
PROFILE = {
    "slug": "gpt-5.5",
    "display_name": "GPT-5.5",
    "supported_reasoning_levels": [
        {"effort": "low", "description": "Fast"},
        {"effort": "high", "description": "Deep"},
        {"effort": "xhigh", "description": "Deeper"},
    ],
    "default_reasoning_level": "medium",
    "shell_type": "shell_command",
    "visibility": "list",
    "supported_in_api": True,
    "priority": 13,
    "support_verbosity": True,
    "truncation_policy": {"mode": "tokens", "limit": 10000},
    "experimental_supported_tools": [],
    "apply_patch_tool_type": "freeform",
    "supports_search_tool": True,
    "prefer_websockets": True,
    "upgrade": {"model": "gpt-6-sol"},
    "model_messages": {"instructions_template": "You are Codex."},
}


def test_every_id_gets_the_profile_with_this_server_s_facts():
    catalog = codex_catalog([card("own/model", 131072), card("alias", 131072)], PROFILE)
    assert [m["slug"] for m in catalog["models"]] == ["own/model", "alias"]
    for entry in catalog["models"]:
        assert all(field in entry for field in REQUIRED_FIELDS)
        assert entry["context_window"] == entry["max_context_window"] == 131072
        assert entry["model_messages"] == PROFILE["model_messages"], "base instructions are inherited"
        assert entry["supports_parallel_tool_calls"] and entry["supports_search_tool"]
        assert (
            entry["apply_patch_tool_type"] == "freeform" and entry["truncation_policy"] == PROFILE["truncation_policy"]
        )
        assert entry["supported_reasoning_levels"] == PROFILE["supported_reasoning_levels"][:2], "the template's"
        assert entry["default_reasoning_level"] == "low", "medium is not offered by the profile"
        assert entry["upgrade"] is None and entry["prefer_websockets"] is True and entry["service_tiers"] == []
    assert PROFILE["slug"] == "gpt-5.5" and PROFILE["upgrade"], "the profile itself is not changed"
    plain = codex_catalog([card(thinking=False, effort=False)], PROFILE)["models"][0]
    assert plain["supported_reasoning_levels"] == [] and plain["default_reasoning_level"] is None


def test_effort_levels_are_offered_where_the_anthropic_model_object_says_they_work():
    """One fact: a model that reasons but whose template ignores effort offers Codex
    no effort levels, exactly as its Anthropic model object says effort is unsupported."""
    for each in (card(effort=True), card(effort=False), card(thinking=False, effort=False)):
        entry = codex_catalog([each], PROFILE)["models"][0]
        effort = anthropic_model(each)["capabilities"]["effort"]
        offered = {level["effort"] for level in entry["supported_reasoning_levels"]}
        assert offered == {lv["effort"] for lv in PROFILE["supported_reasoning_levels"]} & {
            level for level, v in effort.items() if isinstance(v, dict) and v["supported"]
        }
        assert bool(offered) == effort["supported"] == each.effort


def test_a_profile_without_what_codex_requires_is_refused():
    with pytest.raises(CatalogError, match="no model 'gpt-9'"):
        find_profile({"models": [PROFILE]}, "gpt-9")
    with pytest.raises(CatalogError, match="base instructions"):
        find_profile({"models": [{**PROFILE, "model_messages": None}]}, "gpt-5.5")
    lacking = {k: v for k, v in PROFILE.items() if k != "shell_type"}
    with pytest.raises(CatalogError, match="shell_type"):
        codex_catalog([card()], lacking)
    assert find_profile({"models": [PROFILE]}, "gpt-5.5") is not None


def test_one_body_for_openai_clients_and_codex_with_a_stable_etag():
    catalog = codex_catalog([card()], PROFILE)
    body = with_codex_catalog(model_list([CARD], anthropic=False), catalog)
    assert body["object"] == "list" and [d["id"] for d in body["data"]] == ["m"] and body["models"] == catalog["models"]
    assert catalog_etag(body) == catalog_etag(dict(reversed(body.items())))
    assert catalog_etag(body) != catalog_etag({**body, "models": []})


def test_models_route_serves_the_catalog_to_codex_only(tmp_path):
    config = ServerConfig(codex_catalog=PROFILE)
    with running_server(
        "qwen3", names=("own/model", "alias"), max_model_len=32768, config=config, tmp_path=tmp_path
    ) as (url, _):
        plain = httpx.get(f"{url}/v1/models").json()
        assert "models" not in plain and [d["id"] for d in plain["data"]] == ["own/model", "alias"]
        answer = httpx.get(f"{url}/v1/models", params={"client_version": "0.169.0"})
        body = answer.json()
        assert [m["slug"] for m in body["models"]] == ["own/model", "alias"]
        assert {m["context_window"] for m in body["models"]} == {32768}
        anthropic = httpx.get(f"{url}/v1/models/own/model", headers={"anthropic-version": "2023-06-01"}).json()
        assert anthropic["capabilities"]["thinking"]["supported"], "Qwen3 reasons"
        assert not anthropic["capabilities"]["effort"]["supported"], "its template ignores effort"
        assert [m["supported_reasoning_levels"] for m in body["models"]] == [[], []], "so Codex offers no levels"
        etag = answer.headers["etag"]
        again = httpx.get(f"{url}/v1/models", params={"client_version": "0.169.0"}, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.headers["etag"] == etag
