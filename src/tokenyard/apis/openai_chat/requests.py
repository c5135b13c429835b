"""OpenAI Chat Completions request → `Conversation` (sans-IO).

Mapping decisions where the API leaves room:
- system/developer messages stay messages; the renderer folds leading ones into
  the system prompt (Codex-style developer instructions work the same way);
- an assistant turn becomes reasoning (`reasoning_content`, else `reasoning`), then
  text, then its tool calls, whose `arguments` strings are kept byte for byte;
- consecutive `tool` messages become one user-role message of `ToolResult` parts
  (the canonical shape, see prompting/replay.py), each named after the call it
  answers so templates that print the tool's name (gpt-oss) can;
- the session key is the `x-session-id` header, else `prompt_cache_key` (OpenAI's
  own "these requests share a prefix" key), else `metadata.session_id`; `user`
  names a person, not a conversation: it is no session key (the prefix watch would
  compare unrelated conversations), only what engine routers keep together when
  there is no session;
- a system message's `tools` (as Kimi K3's template takes them) are added to the
  conversation there (`ToolChange`), never to the system tool list;
- `chat_template_kwargs` go to the template as given; `enable_thinking: false`
  (or DeepSeek's `thinking: false`) also marks thinking disabled;
- `response_format` (`json_object`, `json_schema`) becomes the output format:
  guided on engines that can, validated on all (structured_output.py); nothing is
  written into the prompt, which stays what the client sent (and what /v1/tokenize
  counts).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from ...conversation import (
    Conversation,
    Image,
    Message,
    OutputFormat,
    Reasoning,
    SamplingParams,
    Text,
    ThinkingControl,
    ToolCall,
    ToolChange,
    ToolChoice,
    ToolResult,
    ToolSpec,
)
from ...structured_output import output_format
from ..errors import invalid_request, validate, validation_message
from ..tool_schemas import check_tool_schema
from .schema import (
    ChatCompletionRequest,
    ImagePart,
    MessageParam,
    NamedToolChoice,
    RefusalPart,
    TextPart,
    ToolParam,
)

_PART_TYPES: dict[str, type[BaseModel]] = {"text": TextPart, "image_url": ImagePart, "refusal": RefusalPart}


def parse_request(body: Any) -> ChatCompletionRequest:
    """The validated request; a validation error names the offending field in
    `param`, as OpenAI's errors do."""
    return supported(validate(ChatCompletionRequest, body))


Request = TypeVar("Request", bound=ChatCompletionRequest)


def supported(request: Request) -> Request:
    """`request`, refused where it asks for what this server does not do."""
    if request.n is not None and request.n != 1:
        raise invalid_request("n: only n=1 is supported; send one request per completion", "n")
    if request.logprobs:
        raise invalid_request("logprobs: log probabilities are not available from this server", "logprobs")
    return request


def to_conversation(request: ChatCompletionRequest, *, session_key: str | None = None) -> Conversation:
    messages = _messages(request.messages)
    names = {t.function.name for t in request.tools or []}
    names |= {t.function.name for m in request.messages for t in m.tools or [] if m.role in ("system", "developer")}
    choice = _tool_choice(request, names)
    max_tokens = request.max_completion_tokens or request.max_tokens
    stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
    thinking = ThinkingControl(mode=_thinking_mode(request.chat_template_kwargs), effort=request.reasoning_effort)
    if session_key is None:
        session_key = request.prompt_cache_key or _metadata_session(request.metadata)
    for n, t in enumerate(request.tools or []):
        if t.function.parameters is not None:
            check_tool_schema(t.function.parameters, f"tools.{n}.function.parameters")
    return Conversation(
        model=request.model,
        messages=messages,
        tools=[
            ToolSpec(
                name=t.function.name,
                description=t.function.description or "",
                parameters=t.function.parameters or {"type": "object", "properties": {}},
            )
            for t in request.tools or []
        ],
        tool_choice=choice,
        parallel_tool_calls=request.parallel_tool_calls is not False,
        sampling=SamplingParams(
            max_tokens=max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=request.top_k if request.top_k and request.top_k > 0 else None,
            stop=stop,
            seed=request.seed,
            frequency_penalty=request.frequency_penalty,
            presence_penalty=request.presence_penalty,
        ),
        thinking=thinking,
        output_format=_output_format(request),
        template_kwargs=dict(request.chat_template_kwargs or {}),
        session_key=session_key,
        user=request.user,
    )


def _output_format(request: ChatCompletionRequest) -> OutputFormat | None:
    form = request.response_format
    if form is None:
        return None
    spec = form.json_schema
    if form.type == "json_schema" and spec is None:
        raise invalid_request("response_format.json_schema: required for type 'json_schema'", "response_format")
    return output_format(
        form.type,
        spec.schema_ if spec else None,
        name=spec.name if spec else None,
        where="response_format",
        schema_param="response_format.json_schema.schema",
    )


def _tool_choice(request: ChatCompletionRequest, names: set[str]) -> ToolChoice:
    choice = request.tool_choice
    if choice is None:
        return ToolChoice()
    if isinstance(choice, NamedToolChoice):
        if choice.function.name not in names:
            raise invalid_request(
                f"tool_choice: function {choice.function.name!r} is not among the request's tools", "tool_choice"
            )
        return ToolChoice(mode="named", name=choice.function.name)
    if choice == "required" and not names:
        raise invalid_request("tool_choice: 'required' needs at least one tool", "tool_choice")
    return ToolChoice(mode=choice)


def _thinking_mode(kwargs: dict[str, Any] | None) -> Literal["default", "disabled"]:
    """Chat clients switch thinking off through the template's own variable
    (Qwen/GLM `enable_thinking`, DeepSeek `thinking`); the conversation records it
    so everything downstream, not only the template, knows."""
    switches = [v for k, v in (kwargs or {}).items() if k in ("enable_thinking", "thinking") and isinstance(v, bool)]
    return "disabled" if switches and not any(switches) else "default"


def _metadata_session(metadata: dict[str, Any] | None) -> str | None:
    value = (metadata or {}).get("session_id")
    return value if isinstance(value, str) and value else None


def _messages(params: list[MessageParam]) -> list[Message]:
    out: list[Message] = []
    call_names: dict[str, str] = {}
    for n, param in enumerate(params):
        where = f"messages.{n}"
        if param.role == "tool":
            if not param.tool_call_id:
                raise invalid_request(f"{where}.tool_call_id: required for tool messages", f"{where}.tool_call_id")
            result = ToolResult(
                tool_call_id=param.tool_call_id,
                content=_parts(param.content, where, allow_images=True),
                name=call_names.get(param.tool_call_id) or param.name,
            )
            if out and out[-1].role == "user" and all(isinstance(p, ToolResult) for p in out[-1].parts):
                out[-1].parts.append(result)
            else:
                out.append(Message(role="user", parts=[result]))
        elif param.role == "assistant":
            parts: list[Any] = []
            reasoning = param.reasoning_content if param.reasoning_content is not None else param.reasoning
            if reasoning:
                parts.append(Reasoning(text=reasoning))
            parts.extend(_parts(param.content, where, allow_images=False))
            for call in param.tool_calls or []:
                call_names[call.id] = call.function.name
                parts.append(ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments))
            out.append(Message(role="assistant", parts=parts))
        else:
            parts = _parts(param.content, where, allow_images=param.role == "user")
            if param.tools and param.role in ("system", "developer"):
                parts.extend(_added_tools(param.tools, f"{where}.tools"))
            out.append(Message(role=param.role, parts=parts))
    return out


def _added_tools(tools: list[ToolParam], where: str) -> list[ToolChange]:
    changes = []
    for n, tool in enumerate(tools):
        if tool.function.parameters is not None:
            check_tool_schema(tool.function.parameters, f"{where}.{n}.function.parameters")
        spec = ToolSpec(
            name=tool.function.name,
            description=tool.function.description or "",
            parameters=tool.function.parameters or {"type": "object", "properties": {}},
        )
        changes.append(ToolChange(action="add", tool_name=spec.name, tool=spec))
    return changes


def _parts(content: str | list[dict[str, Any]] | None, where: str, *, allow_images: bool) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(text=content)]
    out: list[Any] = []
    for i, raw in enumerate(content):
        at = f"{where}.content.{i}"
        kind = raw.get("type") if isinstance(raw, dict) else None
        model = _PART_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None or (model is ImagePart and not allow_images):
            raise invalid_request(f"{at}: content part type {kind!r} is not supported here", at)
        try:
            part = model.model_validate(raw)
        except ValidationError as error:
            raise invalid_request(f"{at}: {validation_message(error)}", at) from error
        if isinstance(part, TextPart):
            out.append(Text(text=part.text))
        elif isinstance(part, RefusalPart):
            out.append(Text(text=part.refusal))
        elif isinstance(part, ImagePart):
            out.append(Image.from_url(part.image_url.url))
    return out
