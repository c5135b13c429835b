"""Google FunctionGemma: Gemma 4's call syntax (gemma4.py) under its own tokens,
`<escape>` delimiting strings:

    <start_function_call>call:get_weather{city:<escape>Tokyo<escape>,days:3}<end_function_call>
"""

from __future__ import annotations

from .gemma4 import Gemma4ToolParser


class FunctionGemmaToolParser(Gemma4ToolParser):
    name = "functiongemma"
    stray_markers = ()  # Gemma 4's tool-response token is not FunctionGemma's
    aliases = ()
    call_open = "<start_function_call>"
    call_close = "<end_function_call>"
    quote = "<escape>"
    # The recovery of a call without its token answers Gemma 4 outputs (vLLM's
    # tests); FunctionGemma's calls are read at their token only.
    bare_call_at_opening = False
