"""Parser lookup by the field's own names (vLLM/SGLang/Dynamo flags carry over)."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .tools.base import ToolParser


class UnknownParserError(ValueError):
    pass


def unknown_name(kind: str, name: str, known: list[str]) -> UnknownParserError:
    return UnknownParserError(f"unknown {kind} {name!r}; known: {', '.join(known)}")


@lru_cache(maxsize=1)
def _tool_parsers() -> dict[str, type[ToolParser]]:
    # Every module in parsing/tools/ that defines a named ToolParser registers it.
    from . import tools as package

    found: dict[str, type[ToolParser]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, ToolParser)
                and value.name
                and value.__module__ == module.__name__
            ):
                for key in (value.name, *value.aliases):
                    key = key.lower()
                    if key in found and found[key] is not value:
                        raise RuntimeError(f"tool parser name {key!r} registered twice")
                    found[key] = value
    return found


# gpt-oss harmony output interleaves channels of reasoning, text and calls; the
# splitter hands it whole to parsing/harmony.py rather than to a ToolParser.
HARMONY_TOOL_NAMES = ("harmony", "openai")


def tool_parser_class(name: str) -> type[ToolParser]:
    if name.strip().lower() in HARMONY_TOOL_NAMES:
        raise ValueError("harmony is parsed by parsing.harmony.HarmonyParser together with its reasoning")
    cls = _tool_parsers().get(name.strip().lower())
    if cls is None:
        raise unknown_name("tool-call parser", name, tool_parser_names())
    return cls


def tool_parser_names() -> list[str]:
    return sorted([*_tool_parsers(), *HARMONY_TOOL_NAMES])


def check_tool_parser_name(name: str) -> str:
    """The canonical lowercase name, or `UnknownParserError` listing the known ones."""
    key = name.strip().lower()
    if key not in HARMONY_TOOL_NAMES and key not in _tool_parsers():
        raise unknown_name("tool-call parser", name, tool_parser_names())
    return key
