"""Anthropic Messages request → `Conversation` (sans-IO)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pydantic import BaseModel, ValidationError

from ... import wire_json
from ...conversation import (
    ContextEdits,
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
    ToolUseClearing,
)
from ...safeguards import REQUEST_KIND as SAFEGUARD_KIND
from ...safeguards import is_classifier_query
from ...structured_output import output_format
from ..errors import invalid_request, validation_message
from ..replay_state import ReplayState
from ..tool_schemas import check_tool_schema
from .schema import (
    BLOCK_TYPES,
    CountTokensRequest,
    DocumentBlock,
    ImageBlock,
    MessagesRequest,
    RedactedThinkingBlock,
    SearchResultBlock,
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


class _Sources:
    """Documents and search results are numbered in the order they appear in the
    request, from 0: the `document_index` and `search_result_index` by which
    Anthropic's citations name them. The model sees each as text with its number,
    title and source, in the tags of Anthropic's long-context prompting guide."""

    def __init__(self) -> None:
        self.documents = 0
        self.search_results = 0

    def text(self, block: DocumentBlock | SearchResultBlock, where: str) -> Text:
        if isinstance(block, SearchResultBlock):
            number, self.search_results = self.search_results, self.search_results + 1
            lines = [f'<search_result index="{number}">', f"<source>{block.source}</source>"]
            if block.title:
                lines.append(f"<title>{block.title}</title>")
            lines += ["<content>", _texts(block.content, f"{where}.content"), "</content>", "</search_result>"]
            return Text(text="\n".join(lines))
        number, self.documents = self.documents, self.documents + 1
        lines = [f'<document index="{number}">']
        if block.title:
            lines.append(f"<source>{block.title}</source>")
        if block.context:
            lines.append(f"<context>{block.context}</context>")
        body = _document_body(block, where)
        if body is None:  # a PDF, or a file only Anthropic can fetch: said, not dropped
            kind = block.source.media_type or block.source.type
            lines.append(f"[{kind} document: not readable by this model]")
        else:
            lines += ["<document_content>", body, "</document_content>"]
        lines.append("</document>")
        return Text(text="\n".join(lines))


def _document_body(block: DocumentBlock, where: str) -> str | None:
    """A document's text, or None where it has none a text model can read."""
    source = block.source
    if source.type == "text":
        return source.data or ""
    if source.type == "content":
        content = source.content or ""
        return content if isinstance(content, str) else _texts(content, f"{where}.source.content")
    if source.type == "base64" and (source.media_type or "").startswith("text/"):
        try:
            return base64.b64decode(source.data or "", validate=True).decode("utf-8", "replace")
        except binascii.Error:
            raise invalid_request(f"{where}.source.data: not valid base64", f"{where}.source.data") from None
    return None


def _texts(content: list[dict[str, Any]], where: str) -> str:
    return "\n".join(b.text for b in _blocks(content, where) if isinstance(b, TextBlock))


def _tool_result(block: ToolResultBlock, where: str, sources: _Sources) -> ToolResult:
    content: list[Text | Image | ToolReference] = []
    if isinstance(block.content, str):
        content.append(Text(text=block.content))
    elif block.content:
        for inner in _blocks(block.content, where):
            if isinstance(inner, TextBlock):
                content.append(Text(text=inner.text))
            elif isinstance(inner, (DocumentBlock, SearchResultBlock)):
                content.append(sources.text(inner, f"{where}.content"))
            elif isinstance(inner, ImageBlock):
                content.append(_image(inner))
            elif isinstance(inner, ToolReferenceBlock):
                content.append(ToolReference(tool_name=inner.tool_name))
    return ToolResult(tool_call_id=block.tool_use_id, content=content, is_error=block.is_error)


def _system(system: str | list[dict[str, Any]] | None) -> list[Text]:
    if system is None:
        return []
    if isinstance(system, str):  # what `_blocks` would make of it, without its block model
        return [Text(text=system)]
    return [Text(text=b.text) for b in _blocks(system, "system") if isinstance(b, TextBlock)]


def to_conversation(
    request: MessagesRequest | CountTokensRequest,
    *,
    replay: ReplayState | None = None,
    session_key: str | None = None,
    agent_id: str | None = None,
    parent_agent_id: str | None = None,
) -> Conversation:
    messages: list[Message] = []
    sources = _Sources()
    for n, param in enumerate(request.messages):
        where = f"messages.{n}"
        role = "system" if param.role == "system" else param.role
        if isinstance(param.content, str):  # one text block, whatever the role: made without its block model
            messages.append(Message(role=role, parts=[Text(text=param.content)]))
            continue
        parts: list[Any] = []
        for block in _blocks(param.content, where):
            if isinstance(block, TextBlock):
                parts.append(Text(text=block.text))
            elif isinstance(block, ImageBlock):
                parts.append(_image(block))
            elif isinstance(block, ToolResultBlock):
                parts.append(_tool_result(block, where, sources))
            elif isinstance(block, (DocumentBlock, SearchResultBlock)):
                parts.append(sources.text(block, f"{where}.content"))
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
        messages.append(Message(role=role, parts=parts))
    for n, t in enumerate(request.tools or []):
        if t.input_schema is not None:
            check_tool_schema(t.input_schema, f"tools.{n}.input_schema")
    tools = [_tool_spec(t) for t in request.tools or [] if t.input_schema is not None or t.type in (None, "custom")]
    # Each model made once (a default built and replaced costs as much as the other).
    if request.tool_choice is None:
        choice = ToolChoice()
    else:
        mode = {"auto": "auto", "any": "required", "tool": "named", "none": "none"}[request.tool_choice.type]
        if mode == "named" and not request.tool_choice.name:
            raise invalid_request("tool_choice.name: required when type is 'tool'", "tool_choice")
        choice = ToolChoice(mode=mode, name=request.tool_choice.name)
    if request.thinking is None:
        thinking = ThinkingControl()
    else:
        thinking = ThinkingControl(mode=request.thinking.type, budget_tokens=request.thinking.budget_tokens)
    sampling = None
    form = None
    user = None
    edits = _context_edits(request.context_management)  # counted as they will be rendered
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
        if request.metadata and request.metadata.user_id:
            # Claude Code's user_id holds its session; any other names the end user.
            from_user_id = _session_from_user_id(request.metadata.user_id)
            session_key = session_key or from_user_id
            if from_user_id is None:
                user = request.metadata.user_id
    system = _system(request.system)
    if sampling is None:  # count_tokens: nothing to sample
        sampling = SamplingParams()
    return Conversation(
        model=request.model,
        system=system,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=not (request.tool_choice and request.tool_choice.disable_parallel_tool_use),
        sampling=sampling,
        thinking=thinking,
        output_format=form,
        context_edits=edits,
        session_key=session_key,
        agent_id=agent_id,
        parent_agent_id=parent_agent_id,
        user=user,
        request_kind=SAFEGUARD_KIND if is_classifier_query(system, sampling.stop) else None,
    )


def marks_cache_breakpoint(request: MessagesRequest) -> bool:
    """Whether the request asks for prompt caching: `cache_control` on a tool, a
    system or message block, or at the top level (automatic caching). Only then does
    Anthropic report cache creation (see MessageStream._set_prompt_usage)."""
    if request.cache_control is not None or any(t.cache_control is not None for t in request.tools or []):
        return True
    lists = [request.system] + [m.content for m in request.messages]
    return any(isinstance(blocks, list) and any(b.get("cache_control") is not None for b in blocks) for blocks in lists)


def _amount(value: Any, kind: str, default: int) -> int:
    """`{"type": kind, "value": N}` (Anthropic's thresholds), else the default."""
    amount = value.get("value") if isinstance(value, dict) and value.get("type") == kind else None
    return max(0, amount) if isinstance(amount, int) else default


def _context_edits(management: dict[str, Any] | None) -> ContextEdits:
    """`context_management.edits` (beta context-management-2025-06-27), with the API's
    defaults: `clear_thinking_*` keeps the last assistant turn's thinking unless `keep`
    says otherwise ("all": everything); `clear_tool_uses_*` triggers at 100,000 input
    tokens and keeps the last 3 tool uses. Other edit types change nothing here."""
    edits = ContextEdits()
    for n, edit in enumerate((management or {}).get("edits") or []):
        kind = edit.get("type", "") if isinstance(edit, dict) else ""
        if kind.startswith("clear_thinking_"):
            keep = edit.get("keep")
            turns = None if keep == "all" else _amount(keep, "thinking_turns", 1)
            edits = edits.model_copy(update={"keep_thinking_turns": turns})
        elif kind.startswith("clear_tool_uses_"):
            inputs = edit.get("clear_tool_inputs", False)
            if not isinstance(inputs, bool) and not (
                isinstance(inputs, list) and all(isinstance(i, str) for i in inputs)
            ):
                raise invalid_request(
                    f"context_management.edits.{n}.clear_tool_inputs: a boolean or a list of tool names",
                    f"context_management.edits.{n}.clear_tool_inputs",
                )
            excluded = edit.get("exclude_tools") or []
            clearing = ToolUseClearing(
                trigger_tokens=_amount(edit.get("trigger"), "input_tokens", 100_000),
                keep_tool_uses=_amount(edit.get("keep"), "tool_uses", 3),
                clear_at_least_tokens=_amount(edit.get("clear_at_least"), "input_tokens", 0),
                exclude_tools=[t for t in excluded if isinstance(t, str)] if isinstance(excluded, list) else [],
                clear_inputs=inputs,
            )
            edits = edits.model_copy(update={"clear_tool_uses": clearing})
    return edits


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
        data = wire_json.loads(user_id, where="metadata.user_id")
    except ValueError:
        data = None
    session = data.get("session_id") if isinstance(data, dict) else None
    if isinstance(session, str):
        return session
    marker = "_session_"
    if marker in user_id:
        return user_id.rsplit(marker, 1)[1] or None
    return None
