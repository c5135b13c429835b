"""Several models in one frontend: what each served model is, from a models file
(`--models-config`, TOML or JSON) or a repeatable `--serve-model NAME=MODEL[,KEY=VALUE…]`.

Each entry names one model: where it comes from (`model`), the id clients use
(`name`) and its `aliases`, its parsers, chat template and its own engine or pool of
engines (`engine_url`, repeatable, with `kv_events`). Engine-wide settings given on
the command line (`--engine`, timing and routing flags, the engine API key) are
every entry's defaults; an entry may override them.

    [[models]]
    name = "coder"
    model = "/models/Qwen3-Coder-30B-A3B-Instruct"
    aliases = ["claude-sonnet-4-6"]
    engine_url = ["http://gpu1:8001", "http://gpu2:8001"]

    [[models]]
    name = "fast"
    model = "/models/Qwen3-0.6B"
    aliases = ["claude-haiku-4-5"]
    engine_url = "http://gpu3:8002"
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..settings import ModelSettings, Setting, SettingError, declared

# A models-file key is a ModelSettings setting's key; `name` and `aliases` stand for
# its served model names.
SETTINGS = {item.key: item for item in declared(ModelSettings) if item.name != "served_model_names"}
# What names one model, and so is never inherited from the command line's --model.
PER_MODEL = frozenset({"engine_url", *(item.name for item in declared(ModelSettings) if item.spec.per_model)})
LIST_KEYS = frozenset({"aliases", *(key for key, item in SETTINGS.items() if item.many)})
KNOWN_KEYS = frozenset({"name", "aliases", *SETTINGS})


class ModelsConfigError(ValueError):
    """A models file or --serve-model value that cannot be served; says where and why."""


def inherited(base: ModelSettings) -> ModelSettings:
    """`base` without what names its model: the defaults of another served model."""
    defaults = ModelSettings()
    return dataclasses.replace(base, **{name: getattr(defaults, name) for name in PER_MODEL})


def entry_settings(entry: Mapping[str, Any], base: ModelSettings, where: str) -> ModelSettings:
    """One entry (keys as in a models file) on top of the inherited engine-wide flags."""
    unknown = sorted(set(entry) - KNOWN_KEYS)
    if unknown:
        raise ModelsConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}")
    if not isinstance(entry.get("model"), str) or not entry["model"]:
        raise ModelsConfigError(f"{where}: `model` (a model directory, .gguf file or built-in model) is required")
    values: dict[str, Any] = {}
    for key, value in entry.items():
        if key in LIST_KEYS:
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ModelsConfigError(f"{where}: `{key}` must be a string or a list of strings")
        if key == "name":
            if not isinstance(value, str) or not value:
                raise ModelsConfigError(f"{where}: `name` must be a non-empty string")
        elif key == "aliases":
            pass
        else:
            item = SETTINGS[key]
            read = [_typed(item, v, where) for v in value] if item.many else _typed(item, value, where)
            values[item.name] = tuple(read) if item.many else read
    names = ([entry["name"]] if "name" in entry else []) + list(entry.get("aliases") or [])
    if names and "name" not in entry:
        raise ModelsConfigError(f"{where}: `aliases` needs a `name`")
    values["served_model_names"] = tuple(names)
    return dataclasses.replace(inherited(base), **values)


def _typed(item: Setting, value: Any, where: str) -> Any:
    """`value` (from TOML, JSON or text) as the setting holds it."""
    if isinstance(value, str):
        try:
            return item.read(value, f"{where}: `{item.key}`")
        except SettingError as error:
            raise ModelsConfigError(str(error)) from None
    native = (
        (item.kind is bool and isinstance(value, bool))
        or (item.kind is int and isinstance(value, int) and not isinstance(value, bool))
        or (item.kind is float and isinstance(value, int | float) and not isinstance(value, bool))
    )
    if not native or not item.within(value):
        raise ModelsConfigError(f"{where}: `{item.key}` = {value!r} is not {item.accepts}")
    return float(value) if item.kind is float else value


def load_models_file(path: Path, base: ModelSettings) -> list[ModelSettings]:
    """The models a TOML (`[[models]]` tables) or JSON (`{"models": [...]}`) file lists."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise ModelsConfigError(f"{path}: {error}") from None
    entries = data.get("models") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ModelsConfigError(f"{path}: expected a non-empty `models` list of tables ([[models]] in TOML)")
    return [entry_settings(e, base, f"{path}: models[{n}]") for n, e in enumerate(entries)]


def parse_serve_model(spec: str) -> dict[str, Any]:
    """`NAME=MODEL[,KEY=VALUE…]` as a models-file entry; keys as in the file (`-` or
    `_`), list keys (`alias`/`aliases`, `engine-url`, `kv-events`) repeated."""
    name, eq, rest = spec.partition("=")
    if not eq or not name or not rest:
        raise ModelsConfigError(f"--serve-model {spec!r}: expected NAME=MODEL[,KEY=VALUE…]")
    model, *pairs = rest.split(",")
    entry: dict[str, Any] = {"name": name, "model": model}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        key = "aliases" if key == "alias" else key
        if not eq:
            raise ModelsConfigError(f"--serve-model {spec!r}: {pair!r} is not KEY=VALUE")
        if key in LIST_KEYS:
            entry.setdefault(key, []).append(value)
        elif key in entry:
            raise ModelsConfigError(f"--serve-model {spec!r}: {key} given twice")
        else:
            entry[key] = value
    return entry


def served_models(
    primary: ModelSettings | None, serve_models: Sequence[str], models_file: Path | None, base: ModelSettings
) -> list[ModelSettings]:
    """Every model to serve, in order: the `--model` one (when given), each
    `--serve-model`, then the models file's. The first is the default model."""
    models = [primary] if primary is not None else []
    models += [entry_settings(parse_serve_model(s), base, f"--serve-model {s!r}") for s in serve_models]
    if models_file is not None:
        models += load_models_file(models_file, base)
    if not models:
        raise ModelsConfigError("no model to serve")
    return models
