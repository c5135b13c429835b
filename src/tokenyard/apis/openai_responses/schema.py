"""OpenAI Responses wire models (requests). Unknown fields are ignored, as the API's
clients expect. Input items and tools are parsed by type (requests.py) so that
types with no meaning for an open model (hosted tools, their call items) are set
aside instead of failing the request."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ---- content parts ----------------------------------------------------------------


class TextPart(_Wire):
    """input_text (user/system/developer) and output_text (assistant)."""

    type: Literal["input_text", "output_text", "text", "summary_text", "reasoning_text"]
    text: str


class RefusalPart(_Wire):
    type: Literal["refusal"]
    refusal: str


class ImagePart(_Wire):
    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None
    detail: str | None = None


PART_TYPES: dict[str, type[_Wire]] = {
    "input_text": TextPart,
    "output_text": TextPart,
    "text": TextPart,
    "refusal": RefusalPart,
    "input_image": ImagePart,
}


# ---- input items --------------------------------------------------------------------


class MessageItem(_Wire):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]
    id: str | None = None


class _CallItem(_Wire):
    """A call the model made, replayed: a function's or a custom tool's."""

    call_id: str
    name: str
    id: str | None = None
    namespace: str | None = None


class FunctionCallItem(_CallItem):
    type: Literal["function_call"]
    arguments: str = ""


class CustomToolCallItem(_CallItem):
    type: Literal["custom_tool_call"]
    input: str = ""


class ToolSearchCallItem(_Wire):
    """The model's call to a `tool_search` tool; `execution: "client"` means the
    client (Codex) runs the search. `arguments` is a JSON object, not a string."""

    type: Literal["tool_search_call"]
    call_id: str | None = None
    arguments: Any = None
    execution: str | None = None
    status: str | None = None
    id: str | None = None


class ToolSearchOutputItem(_Wire):
    """What a client-run tool search loaded: tools (namespaces of functions,
    usually) that are never repeated in `tools`."""

    type: Literal["tool_search_output"]
    call_id: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    execution: str | None = None
    status: str | None = None
    id: str | None = None


class AdditionalToolsItem(_Wire):
    """Tools declared in the input instead of `tools` (Codex's code-mode profiles)."""

    type: Literal["additional_tools"]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    role: str | None = None
    id: str | None = None


class AgentMessageItem(_Wire):
    """A message between agents of one Codex session (multi-agent)."""

    type: Literal["agent_message"]
    content: str | list[dict[str, Any]] = Field(default_factory=list)
    author: str | None = None
    recipient: str | None = None
    id: str | None = None


class ToolOutputItem(_Wire):
    """function_call_output and custom_tool_call_output."""

    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: str
    output: str | list[dict[str, Any]] = ""
    id: str | None = None


class SummaryPart(_Wire):
    type: str = "summary_text"
    text: str = ""


class ReasoningItem(_Wire):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[SummaryPart] = Field(default_factory=list)
    content: list[SummaryPart] | None = None
    encrypted_content: str | None = None


class ItemReference(_Wire):
    type: Literal["item_reference"]
    id: str


ITEM_TYPES: dict[str, type[_Wire]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "custom_tool_call": CustomToolCallItem,
    "function_call_output": ToolOutputItem,
    "custom_tool_call_output": ToolOutputItem,
    "reasoning": ReasoningItem,
    "item_reference": ItemReference,
    "tool_search_call": ToolSearchCallItem,
    "tool_search_output": ToolSearchOutputItem,
    "additional_tools": AdditionalToolsItem,
    "agent_message": AgentMessageItem,
}


# ---- tools ----------------------------------------------------------------------------


class FunctionTool(_Wire):
    type: Literal["function"]
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class CustomToolFormat(_Wire):
    type: str = "text"
    syntax: str | None = None
    definition: str | None = None


class CustomTool(_Wire):
    type: Literal["custom"]
    name: str
    description: str | None = None
    format: CustomToolFormat | None = None


class NamespaceTool(_Wire):
    """A group of tools under one name; the model calls `<name>__<tool>`."""

    type: Literal["namespace"]
    name: str
    description: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)


class ToolSearchTool(_Wire):
    """A tool search the client runs itself (`execution: "client"`): offered to the
    model as a function with this description and parameters."""

    type: Literal["tool_search"]
    execution: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None


TOOL_TYPES: dict[str, type[_Wire]] = {
    "function": FunctionTool,
    "custom": CustomTool,
    "namespace": NamespaceTool,
    "tool_search": ToolSearchTool,
}


class ReasoningParam(_Wire):
    effort: str | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    # The deprecated spelling of `summary`.
    generate_summary: Literal["auto", "concise", "detailed"] | None = None


class ResponsesRequest(_Wire):
    model: str
    input: str | list[Any] = Field(default_factory=list)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    # "auto" | "none" | "required" | {"type": "function"|"custom", "name"} | {"type": "allowed_tools", ...}
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning: ReasoningParam | None = None
    text: dict[str, Any] | None = None
    include: list[str] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stream: bool = False
    store: bool | None = None
    truncation: Literal["auto", "disabled"] | None = None
    prompt_cache_key: str | None = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    safety_identifier: str | None = None
    # Stateful features this server does not offer; requests.py refuses them clearly.
    previous_response_id: str | None = None
    background: bool | None = None
    conversation: str | dict[str, Any] | None = None
    prompt: dict[str, Any] | None = None
    # Codex: turn metadata (ids, request kind); never model input.
    client_metadata: dict[str, Any] | None = None
