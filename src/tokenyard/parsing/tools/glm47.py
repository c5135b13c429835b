"""GLM-4.7 tool calls: the glm45 shape without newlines between the tags:

<tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>
"""

from __future__ import annotations

from .glm45 import Glm45ToolParser


class Glm47ToolParser(Glm45ToolParser):
    name = "glm47"
