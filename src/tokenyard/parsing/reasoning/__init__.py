from ...families.reasoning import REASONING_FORMATS, ReasoningFormat
from .parser import ReasoningParser, reasoning_format

__all__ = ["REASONING_FORMATS", "ReasoningFormat", "ReasoningParser", "reasoning_format"]
