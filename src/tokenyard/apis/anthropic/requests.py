"""Anthropic Messages request → `Conversation` (sans-IO)."""

from __future__ import annotations

import json
from typing import Any

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
    ToolReference,
    ToolResult,
    ToolSpec,
)
from ...structured_output import output_format
from ..errors import invalid_request, validation_message
from ..replay_state import ReplayState
from ..tool_schemas import check_tool_schema
from .schema import (
    BLOCK_TYPES,
    CountTokensRequest,
    ImageBlock,
    MessagesRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolAdditionBlock,
    ToolDefinition,
    ToolParam,
    ToolReferenceBlock,
    ToolRemovalBlock,
    ToolResultBlock,
    ToolUseBlock,
)

THINKING_SEAL_CONTEXT = "anthropic-thinking"


def _blocks(content: str | list[dict[str, Any]], where: str) -> list[BaseModel]:
    if isinstance(content, str):
        return [TextBlock(type="text", text=content)]
    out: list[BaseModel] = []
    for i, raw in enumerate(content):
        kind = raw.get("type") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and not isinstance(kind, str):
            raise invalid_request(f"{where}.content.{i}.type: a content block needs a string type")
        model = BLOCK_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None:
            continue  # a block type with no meaning for an open model (document, server tool…)
        try:
            out.append(model.model_validate(raw))
        except ValidationError as error:
            raise invalid_request(f"{where}.content.{i}: {validation_message(error)}") from error
    return out


def _image(block: ImageBlock) -> Image:
    source = block.source
    return Image(media_type=source.media_type, data=source.data, url=source.url)


def _tool_result(block: ToolResultBlock, where: str) -> ToolResult:
    content: list[Text | Image | ToolReference] = []
    if isinstance(block.content, str):
        content.append(Text(text=block.content))
    elif block.content:
        for inner in _blocks(block.content, where):
            if isinstance(inner, TextBlock):
                content.append(Text(text=inner.text))
            elif isinstance(inner, ImageBlock):
                content.append(_image(inner))
            elif isinstance(inner, ToolReferenceBlock):
                content.append(ToolReference(tool_name=inner.tool_name))
    return ToolResult(tool_call_id=block.tool_use_id, content=content, is_error=block.is_error)


def _system(system: str | list[dict[str, Any]] | None) -> list[Text]:
    if system is None:
        return []
    return [Text(text=b.text) for b in _blocks(system, "system") if isinstance(b, TextBlock)]


def to_conversation(
    request: MessagesRequest | CountTokensRequest,
    *,
    replay: ReplayState | None = None,
    session_key: str | None = None,
    agent: str | None = None,
    agent_id: str | None = None,
    parent_agent_id: str | None = None,
) -> Conversation:
    messages: list[Message] = []
    for n, param in enumerate(request.messages):
        where = f"messages.{n}"
        parts: list[Any] = []
        for block in _blocks(param.content, where):
            if isinstance(block, TextBlock):
                parts.append(Text(text=block.text))
            elif isinstance(block, ImageBlock):
                parts.append(_image(block))
            elif isinstance(block, ToolResultBlock):
                parts.append(_tool_result(block, where))
            elif isinstance(block, (ToolAdditionBlock, ToolRemovalBlock)):
                if param.role == "system":  # where the betas put them
                    parts.append(_tool_change(block, f"{where}.content"))
            elif param.role != "assistant":
                continue  # thinking/tool_use only mean something in assistant turns
            elif isinstance(block, ThinkingBlock):
                # Our own sealed signature restores the exact reasoning, also when the
                # client was told to omit the text; foreign ones keep what they show.
                own = replay.open_reasoning(block.signature, THINKING_SEAL_CONTEXT) if replay else None
                parts.append(Reasoning(text=own if own is not None else block.thinking, signature=block.signature))
            elif isinstance(block, RedactedThinkingBlock):
                parts.append(Reasoning(opaque=block.data))
            elif isinstance(block, ToolUseBlock):
                parts.append(ToolCall(id=block.id, name=block.name, arguments=_arguments(block, replay)))
        role = "system" if param.role == "system" else param.role
        messages.append(Message(role=role, parts=parts))
    for n, t in enumerate(request.tools or []):
        if t.input_schema is not None:
            check_tool_schema(t.input_schema, f"tools.{n}.input_schema")
    tools = [_tool_spec(t) for t in request.tools or [] if t.input_schema is not None or t.type in (None, "custom")]
    choice = ToolChoice()
    if request.tool_choice is not None:
        mode = {"auto": "auto", "any": "required", "tool": "named", "none": "none"}[request.tool_choice.type]
        if mode == "named" and not request.tool_choice.name:
            raise invalid_request("tool_choice.name: required when type is 'tool'", "tool_choice")
        choice = ToolChoice(mode=mode, name=request.tool_choice.name)
    thinking = ThinkingControl()
    if request.thinking is not None:
        thinking = ThinkingControl(mode=request.thinking.type, budget_tokens=request.thinking.budget_tokens)
    sampling = SamplingParams()
    form = None
    if isinstance(request, MessagesRequest):
        form = _output_format(request)
        if request.output_config and request.output_config.effort:
            thinking = thinking.model_copy(update={"effort": request.output_config.effort})
        sampling = SamplingParams(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=request.top_k,
            stop=list(request.stop_sequences or []),
        )
        if session_key is None and request.metadata and request.metadata.user_id:
            session_key = _session_from_user_id(request.metadata.user_id)
    return Conversation(
        model=request.model,
        system=_system(request.system),
        messages=messages,
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=not (request.tool_choice and request.tool_choice.disable_parallel_tool_use),
        sampling=sampling,
        thinking=thinking,
        output_format=form,
        session_key=session_key,
        agent=agent,
        agent_id=agent_id,
        parent_agent_id=parent_agent_id,
    )


def _output_format(request: MessagesRequest) -> OutputFormat | None:
    """`output_config.format` (or the deprecated top-level `output_format`):
    `{"type": "json_schema", "schema": {...}}`."""
    configured = request.output_config.format if request.output_config else None
    if configured is not None and request.output_format is not None:
        raise invalid_request(
            "output_format: both output_format and output_config.format were given; use output_config.format",
            "output_format",
        )
    form, where = (
        (configured, "output_config.format") if configured is not None else (request.output_format, "output_format")
    )
    if form is None:
        return None
    if not isinstance(form.get("type"), str):
        raise invalid_request(f"{where}.type: required", f"{where}.type")
    return output_format(form["type"], form.get("schema"), name=None, where=where, schema_param=f"{where}.schema")


def _tool_spec(tool: ToolParam) -> ToolSpec:
    return ToolSpec(
        name=tool.name,
        description=tool.description or "",
        parameters=tool.input_schema or {"type": "object", "properties": {}},
        deferred=tool.defer_loading,
    )


def _tool_change(block: ToolAdditionBlock | ToolRemovalBlock, where: str) -> ToolChange:
    """A `tool_addition` (a tool of `tools` by name, or its inline definition) or a
    `tool_removal` (by name)."""
    if isinstance(block, ToolRemovalBlock):
        return ToolChange(action="remove", tool_name=block.tool.name)
    if isinstance(block.tool, ToolDefinition):
        definition = block.tool.definition
        if definition.input_schema is not None:
            check_tool_schema(definition.input_schema, f"{where}.tool.definition.input_schema")
        spec = _tool_spec(definition).model_copy(update={"deferred": False})
        return ToolChange(action="add", tool_name=spec.name, tool=spec)
    return ToolChange(action="add", tool_name=block.tool.name)


def _arguments(block: ToolUseBlock, replay: ReplayState | None) -> str:
    """The call's arguments as the model wrote them, when the client sent back the
    same input; else a canonical serialisation."""
    canonical = json.dumps(block.input, ensure_ascii=False)
    return replay.restore_call(block.id, block.input, canonical) if replay else canonical


def _session_from_user_id(user_id: str) -> str | None:
    """Claude Code's metadata.user_id is a JSON string holding session_id (older
    versions: `user_…_account_…_session_<uuid>`)."""
    try:
        data = json.loads(user_id)
    except ValueError:
        data = None
    session = data.get("session_id") if isinstance(data, dict) else None
    if isinstance(session, str):
        return session
    marker = "_session_"
    if marker in user_id:
        return user_id.rsplit(marker, 1)[1] or None
    return None
