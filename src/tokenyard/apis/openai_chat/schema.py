"""OpenAI Chat Completions wire models (requests). Unknown fields are ignored, as
the API's clients expect (vLLM/SGLang extensions, `store`, `service_tier`…);
message content parts are validated by type in requests.py so an error names the
exact part."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextPart(_Wire):
    type: Literal["text"]
    text: str


class RefusalPart(_Wire):
    type: Literal["refusal"]
    refusal: str


class ImageUrl(_Wire):
    url: str
    detail: str | None = None


class ImagePart(_Wire):
    type: Literal["image_url"]
    image_url: ImageUrl


Content = str | list[dict[str, Any]] | None


class FunctionCall(_Wire):
    name: str
    arguments: str = ""


class ToolCallParam(_Wire):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class MessageParam(_Wire):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Content = None
    # assistant turns: reasoning as vLLM/DeepSeek (`reasoning_content`) or
    # OpenRouter/newer vLLM (`reasoning`) clients echo it
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallParam] | None = None
    # tool results
    tool_call_id: str | None = None
    name: str | None = None
    # system messages: tools declared from here on (Kimi K3's templates read them)
    tools: list[ToolParam] | None = None


class FunctionSpec(_Wire):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolParam(_Wire):
    type: Literal["function"]
    function: FunctionSpec


class NamedFunction(_Wire):
    name: str


class NamedToolChoice(_Wire):
    type: Literal["function"]
    function: NamedFunction


class JsonSchemaFormat(_Wire):
    name: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Wire):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_Wire):
    include_usage: bool = False


class ChatCompletionRequest(_Wire):
    model: str
    messages: list[MessageParam] = Field(min_length=1)
    tools: list[ToolParam] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_completion_tokens: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    n: int | None = None
    seed: int | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = None  # vLLM extension; -1 or 0 means off
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    logprobs: bool | None = None
    reasoning_effort: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    metadata: dict[str, Any] | None = None
    user: str | None = None
