"""Reasoning parsers: split raw output into reasoning and the rest."""

from .parser import REASONING_FORMATS, ReasoningFormat, ReasoningParser, reasoning_format

__all__ = ["REASONING_FORMATS", "ReasoningFormat", "ReasoningParser", "reasoning_format"]
