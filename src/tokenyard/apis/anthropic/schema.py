"""Anthropic Messages wire models (requests). Unknown fields are ignored, as the
API's clients expect; content blocks are parsed by type so that block types we do
not model (server tools…) are kept out of the way rather than failing."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextBlock(_Wire):
    type: Literal["text"]
    text: str


class ImageSource(_Wire):
    type: Literal["base64", "url"]
    media_type: str | None = None
    data: str | None = None
    url: str | None = None


class ImageBlock(_Wire):
    type: Literal["image"]
    source: ImageSource


class ToolUseBlock(_Wire):
    type: Literal["tool_use"]
    id: str
    name: str
    input: Any = Field(default_factory=dict)


class ToolResultBlock(_Wire):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool = False


class ToolReferenceBlock(_Wire):
    """Inside a tool_result: a tool search found this deferred tool."""

    type: Literal["tool_reference"]
    tool_name: str


class ThinkingBlock(_Wire):
    type: Literal["thinking"]
    thinking: str = ""
    signature: str | None = None


class RedactedThinkingBlock(_Wire):
    type: Literal["redacted_thinking"]
    data: str


class ToolNameRef(_Wire):
    type: Literal["tool_reference"]
    name: str


class ToolDefinition(_Wire):
    type: Literal["tool_definition"]
    definition: ToolParam


class ToolAdditionBlock(_Wire):
    """Beta `mid-conversation-tool-changes-2026-07-01` (a tool of `tools`, named) and
    `inline-tools-2026-09-15` (the tool's definition), in a system message."""

    type: Literal["tool_addition"]
    tool: ToolNameRef | ToolDefinition = Field(discriminator="type")


class ToolRemovalBlock(_Wire):
    type: Literal["tool_removal"]
    tool: ToolNameRef


class DocumentSource(_Wire):
    """`text` (plain text in `data`), `base64` (`data` encoded, of `media_type`),
    `content` (text blocks in `content`), `url` or `file` (fetched by Anthropic)."""

    type: str
    media_type: str | None = None
    data: str | None = None
    content: str | list[dict[str, Any]] | None = None
    url: str | None = None
    file_id: str | None = None


class DocumentBlock(_Wire):
    type: Literal["document"]
    source: DocumentSource
    title: str | None = None
    context: str | None = None


class SearchResultBlock(_Wire):
    type: Literal["search_result"]
    source: str
    title: str = ""
    content: list[dict[str, Any]] = Field(default_factory=list)


BLOCK_TYPES: dict[str, type[_Wire]] = {
    "text": TextBlock,
    "image": ImageBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
    "thinking": ThinkingBlock,
    "redacted_thinking": RedactedThinkingBlock,
    "tool_reference": ToolReferenceBlock,
    "tool_addition": ToolAdditionBlock,
    "tool_removal": ToolRemovalBlock,
    "document": DocumentBlock,
    "search_result": SearchResultBlock,
}


class MessageParam(_Wire):
    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class ToolParam(_Wire):
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    # Server tools (web_search_20250305…) carry a type and no input_schema.
    type: str | None = None
    # Tool search: the definition is loaded only when a search references it.
    defer_loading: bool = False
    cache_control: dict[str, Any] | None = None


class ThinkingParam(_Wire):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None
    display: str | None = None


class ToolChoiceParam(_Wire):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool = False


class OutputConfig(_Wire):
    effort: str | None = None
    # Structured outputs: {"type": "json_schema", "schema": {...}}.
    format: dict[str, Any] | None = None


class Metadata(_Wire):
    user_id: str | None = None


class MessagesRequest(_Wire):
    model: str
    messages: list[MessageParam]
    max_tokens: int = Field(ge=1)
    system: str | list[dict[str, Any]] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: ToolChoiceParam | None = None
    thinking: ThinkingParam | None = None
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    metadata: Metadata | None = None
    output_config: OutputConfig | None = None
    # The deprecated spelling of output_config.format (beta structured-outputs-2025-11-13).
    output_format: dict[str, Any] | None = None
    context_management: dict[str, Any] | None = None
    # Automatic prompt caching: a breakpoint on the last cacheable block.
    cache_control: dict[str, Any] | None = None
    # Server-side checks asked of the response (Claude Code's auto mode asks for
    # `dangerous_tool_use`); kept as sent, read by apis/anthropic/safeguards.py.
    safeguards: list[dict[str, Any]] | None = None


class CountTokensRequest(_Wire):
    model: str
    messages: list[MessageParam]
    system: str | list[dict[str, Any]] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: ToolChoiceParam | None = None
    thinking: ThinkingParam | None = None
    context_management: dict[str, Any] | None = None
