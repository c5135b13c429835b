"""Model profiles: a family record (families/catalog.py) and what the model folder says.

A `ModelProfile` names the family's parsers, the markers it thinks in, the stop
tokens, and how its chat template wants reasoning and thinking controls passed. A
model directory is matched to a family by what is in it (config.json's
architectures and model_type, the chat template's own markers, the names; precedence in
families/detection.py), and every field can be overridden from the command line
(`--reasoning-parser`, `--tool-call-parser`, `--chat-template`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..families.catalog import FAMILIES, Family, TemplateControls
from ..families.detection import (
    BASE_CONFIG_SIGNS,
    CONFIG_SIGNS,
    GENERIC_TEMPLATE_SIGNS,
    NAME_SIGNS,
    REFINEMENTS,
    TEMPLATE_SIGNS,
)


@dataclass(frozen=True)
class ModelProfile(TemplateControls):
    family: str
    reasoning_parser: str | None
    tool_parser: str | None
    # How reasoning is written into content for templates that do not read a
    # reasoning field themselves: (start, end) markers.
    reasoning_markers: tuple[str, str] | None = ("<think>", "</think>")

    def with_overrides(
        self,
        reasoning_parser: str | None = None,
        tool_parser: str | None = None,
        reasoning_markers: tuple[str, str] | None = None,
        recover_fenced_calls: bool | None = None,
    ) -> ModelProfile:
        """This profile with command-line overrides. A reasoning parser given for a
        family that has none brings its markers (for replay into content)."""
        return replace(
            self,
            reasoning_parser=reasoning_parser or self.reasoning_parser,
            tool_parser=tool_parser or self.tool_parser,
            reasoning_markers=self.reasoning_markers or reasoning_markers,
            recover_fenced_calls=self.recover_fenced_calls if recover_fenced_calls is None else recover_fenced_calls,
        )


def _profile(family: Family) -> ModelProfile:
    return ModelProfile(
        family.name,
        family.reasoning,
        family.tool_format,
        reasoning_markers=family.reasoning_markers,
        reasoning_field=family.reasoning_field,
        thinking_kwarg=family.thinking_kwarg,
        thinking_values=family.thinking_values,
        keep_history_kwargs=family.keep_history_kwargs,
        stop=family.stop,
        recover_fenced_calls=family.recover_fenced_calls,
    )


PROFILES: dict[str, ModelProfile] = {family.name: _profile(family) for family in FAMILIES}


def profile_by_name(family: str) -> ModelProfile:
    key = family.strip().lower()
    if key not in PROFILES:
        raise ValueError(f"unknown model family {family!r}; known: {', '.join(sorted(PROFILES))}")
    return PROFILES[key]


def _present(sign: str | tuple[str, ...], template: str) -> bool:
    return all(needle in template for needle in ((sign,) if isinstance(sign, str) else sign))


def _refined(family: str, template: str) -> ModelProfile:
    for needle, choice in REFINEMENTS.get(family, ()):
        if needle in template:
            return PROFILES[choice]
    return PROFILES[family]


def detect_profile(
    model_dir: str | Path | None = None, chat_template: str | None = None, name: str | None = None
) -> ModelProfile:
    """The profile of a model, in the precedence of families/detection.py: its chat
    template's own markers, its names, its config.json's architecture, syntax its
    template shares with other families, its base architecture. Falls back to
    ChatML with no parsers."""
    names = [name or ""]
    config: list[str] = []  # architectures, then model_type
    if model_dir is not None:
        folder = Path(model_dir)
        names.append(folder.name)
        data = _config(folder)
        names.append(str(data.get("_name_or_path", "")))
        architectures = data.get("architectures")
        config += [str(a) for a in architectures] if isinstance(architectures, list) else []
        config.append(str(data.get("model_type", "")))
    template = chat_template or ""
    for sign, family in TEMPLATE_SIGNS:
        if template and sign in template:
            return _refined(family, template)
    joined = " ".join(names).lower()
    for pattern, family in NAME_SIGNS:
        if re.search(pattern, joined):
            return PROFILES[family]
    for value in config:
        if value in CONFIG_SIGNS:
            # A group is split by its template's text; with none, the record named.
            return _refined(CONFIG_SIGNS[value], template) if template else PROFILES[CONFIG_SIGNS[value]]
    for generic, family in GENERIC_TEMPLATE_SIGNS:
        if template and _present(generic, template):
            return _refined(family, template)
    for value in config:
        if value in BASE_CONFIG_SIGNS:
            return PROFILES[BASE_CONFIG_SIGNS[value]]
    return ModelProfile("generic", None, None, reasoning_markers=None)


def _config(folder: Path) -> dict[str, object]:
    """The folder's config.json; empty when absent or not a JSON object."""
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
