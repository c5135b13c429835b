"""Parser lookup by the field's own names (vLLM/SGLang/Dynamo flags carry over)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import lru_cache

from .tools.base import ToolParser


class UnknownParserError(ValueError):
    pass


def unknown_name(kind: str, name: str, known: list[str]) -> UnknownParserError:
    return UnknownParserError(f"unknown {kind} {name!r}; known: {', '.join(known)}")


@lru_cache(maxsize=1)
def _tool_parsers() -> dict[str, type[ToolParser]]:
    # Every module in parsing/tools/ that defines a named ToolParser (an engine's own
    # format, a variant with code of its own) registers it; so does every row of
    # tools/formats.py (an engine with a config).
    from . import tools as package
    from .tools.formats import PARSERS

    classes: list[type[ToolParser]] = [*PARSERS]
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        classes.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, ToolParser)
            and value.name
            and value.__module__ == module.__name__
        )
    found: dict[str, type[ToolParser]] = {}
    for cls in classes:
        for key in (cls.name, *cls.aliases):
            key = key.lower()
            if key in found and found[key] is not cls:
                raise RuntimeError(f"tool parser name {key!r} registered twice")
            found[key] = cls
    return found


# gpt-oss harmony output interleaves channels of reasoning, text and calls; the
# splitter hands it whole to parsing/harmony.py rather than to a ToolParser.
HARMONY_TOOL_NAMES = ("harmony", "openai")

# Formats registered at start-up from `--tool-parser-plugin module:Class`.
_PLUGIN_TOOLS: dict[str, type[ToolParser]] = {}


def _squash(name: str) -> str:
    """`deepseek-v3.1`, `deepseek_v31` and `DeepSeekV31` all squash to `deepseekv31`."""
    return "".join(c for c in name.lower() if c.isalnum())


def resolve_name(kind: str, name: str, ours: Iterable[str], peers: dict[str, str | None], plugin_flag: str) -> str:
    """Our canonical name for `name`: one of ours (also in kebab or squashed
    spelling), or a peer's name for a format we parse. A peer's name for a format we
    do not parse, or an unknown name, raises `UnknownParserError`."""
    key = name.strip().lower()
    known = set(ours)
    for candidate in (key, key.replace("-", "_")):
        if candidate in known:
            return candidate
    if key in peers:
        target = peers[key]
        if target is not None and target in known:
            return target
        raise UnknownParserError(
            f"{kind} parser {name!r} (a vLLM/SGLang/Dynamo name) is a format tokenyard does not parse yet; "
            f"supply one with {plugin_flag} module:Class"
        )
    squashed = _squash(key)
    by_squash: dict[str, str] = {}
    for our in sorted(known):
        by_squash.setdefault(_squash(our), our)
    if squashed in by_squash:
        return by_squash[squashed]
    raise unknown_name(f"{kind} parser", name, sorted(known))


def _all_tool_parsers() -> dict[str, type[ToolParser]]:
    return {**_tool_parsers(), **_PLUGIN_TOOLS}


def tool_parser_class(name: str) -> type[ToolParser]:
    key = check_tool_parser_name(name)
    if key in HARMONY_TOOL_NAMES:
        raise ValueError("harmony is parsed by parsing.harmony.HarmonyParser together with its reasoning")
    return _all_tool_parsers()[key]


def tool_parser_names() -> list[str]:
    """tokenyard's own tool-call parser names (and plugins'); peers' spellings of
    them resolve too (see `check_tool_parser_name`)."""
    return sorted([*_all_tool_parsers(), *HARMONY_TOOL_NAMES])


def check_tool_parser_name(name: str) -> str:
    """The canonical lowercase name, or `UnknownParserError` listing the known ones."""
    parsers = _all_tool_parsers()
    if name in parsers and name not in HARMONY_TOOL_NAMES:
        return parsers[name].name.lower()  # already ours (every turn's parsers ask)
    from ..families.peer_names import PEER_TOOL_MAPPING

    key = resolve_name("tool-call", name, tool_parser_names(), PEER_TOOL_MAPPING, "--tool-parser-plugin")
    if key in HARMONY_TOOL_NAMES:
        return "harmony"
    return _all_tool_parsers()[key].name.lower()  # an alias becomes its format's own name


def register_tool_parser(cls: type[ToolParser]) -> str:
    """Add a format from outside the tree (a plugin) under its `name` and aliases."""
    if not (isinstance(cls, type) and issubclass(cls, ToolParser) and cls.name):
        raise TypeError(f"{cls!r} is not a ToolParser subclass with a name")
    for key in (cls.name, *cls.aliases):
        _PLUGIN_TOOLS[key.lower()] = cls
    return cls.name.lower()


def load_plugin(spec: str) -> object:
    """The object named by `module:attribute` (the module is imported)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"plugin {spec!r}: expected module:Class")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"plugin {spec!r}: cannot import {module_name!r}: {error}") from error
    value = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ValueError(f"plugin {spec!r}: {module_name!r} has no {attribute!r}")
        value = getattr(value, part)
    return value


def load_tool_parser_plugin(spec: str) -> str:
    """Load and register a `--tool-parser-plugin module:Class`; returns its name."""
    cls = load_plugin(spec)
    if not (isinstance(cls, type) and issubclass(cls, ToolParser)):
        raise ValueError(f"plugin {spec!r} is not a tokenyard.parsing.tools.base.ToolParser subclass")
    return register_tool_parser(cls)
