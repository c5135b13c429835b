"""OpenAI Responses request → `Conversation` (sans-IO).

Input items are read in order. The items of one assistant turn (reasoning,
assistant messages, function and custom tool calls) become ONE assistant message
with its parts in their original order, so the turn re-enters the prompt the way
the model wrote it; tool outputs become tool results in a user message. Our own
reasoning comes back from `encrypted_content` byte for byte; anybody else's
reasoning item contributes the text it shows, or nothing.

The server is stateless: what would need stored responses (`previous_response_id`,
`background`, `conversation`, stored prompts, `item_reference`) is refused with a
clear error instead of being half-done.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

from ...conversation import (
    Conversation,
    Image,
    Message,
    Reasoning,
    SamplingParams,
    Text,
    ThinkingControl,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
)
from ..errors import invalid_request, validation_message
from ..replay_state import ReplayState
from ..tool_schemas import check_tool_schema
from .schema import (
    ITEM_TYPES,
    PART_TYPES,
    TOOL_TYPES,
    CustomTool,
    CustomToolCallItem,
    FunctionCallItem,
    FunctionTool,
    ImagePart,
    ItemReference,
    MessageItem,
    ReasoningItem,
    RefusalPart,
    ResponsesRequest,
    TextPart,
    ToolOutputItem,
)

REASONING_SEAL_CONTEXT = "openai-reasoning"
# The one string parameter a custom (freeform) tool has when offered to an open model.
CUSTOM_INPUT = "input"
ENCRYPTED_REASONING = "reasoning.encrypted_content"

_STATELESS = "this server is stateless and keeps no responses; send the whole conversation in `input`"


def refuse_stateful(request: ResponsesRequest) -> None:
    if request.previous_response_id is not None:
        raise invalid_request(f"previous_response_id is not supported: {_STATELESS}", "previous_response_id")
    if request.background:
        raise invalid_request(f"background responses are not supported: {_STATELESS}", "background")
    if request.conversation is not None:
        raise invalid_request(f"conversation is not supported: {_STATELESS}", "conversation")
    if request.prompt is not None:
        raise invalid_request("stored prompts are not supported: send the instructions and input themselves", "prompt")


def offered_tools(request: ResponsesRequest) -> list[dict[str, Any]]:
    """The request's function and custom tools, as sent. Hosted tools (web_search,
    file_search, code_interpreter, mcp…) have nothing to run them here and are left
    out of the prompt, without failing the request."""
    return [
        t
        for t in request.tools or []
        if isinstance(t, dict) and isinstance(t.get("type"), str) and t["type"] in TOOL_TYPES
    ]


def custom_tool_names(request: ResponsesRequest) -> frozenset[str]:
    return frozenset(
        t["name"] for t in offered_tools(request) if t.get("type") == "custom" and isinstance(t.get("name"), str)
    )


def to_conversation(
    request: ResponsesRequest,
    *,
    replay: ReplayState | None = None,
    session_key: str | None = None,
    agent: str | None = None,
) -> Conversation:
    refuse_stateful(request)
    items = (
        [{"type": "message", "role": "user", "content": request.input}]
        if isinstance(request.input, str)
        else request.input
    )
    messages: list[Message] = []
    call_names: dict[str, str] = {}
    for n, raw in enumerate(items):
        where = f"input.{n}"
        item = _item(raw, where)
        if isinstance(item, MessageItem):
            parts = _content(item.content, where)
            if item.role == "assistant":
                _assistant_turn(messages).parts.extend(parts)
            else:
                messages.append(Message(role=item.role, parts=parts))
        elif isinstance(item, FunctionCallItem):
            call_names[item.call_id] = item.name
            _assistant_turn(messages).parts.append(
                ToolCall(id=item.call_id, name=item.name, arguments=_function_arguments(item, replay))
            )
        elif isinstance(item, CustomToolCallItem):
            call_names[item.call_id] = item.name
            _assistant_turn(messages).parts.append(
                ToolCall(id=item.call_id, name=item.name, arguments=_custom_arguments(item, replay), kind="custom")
            )
        elif isinstance(item, ReasoningItem):
            part = _reasoning(item, replay)
            if part is not None:
                _assistant_turn(messages).parts.append(part)
        elif isinstance(item, ToolOutputItem):
            result = ToolResult(
                tool_call_id=item.call_id, content=_output(item.output, where), name=call_names.get(item.call_id)
            )
            _tool_results(messages).parts.append(result)
        elif isinstance(item, ItemReference):
            raise invalid_request(f"{where}: item_reference is not supported: {_STATELESS}", where)
    reasoning = request.reasoning
    return Conversation(
        model=request.model,
        system=[Text(text=request.instructions)] if request.instructions else [],
        messages=messages,
        tools=_tools(request),
        tool_choice=_tool_choice(request),
        parallel_tool_calls=request.parallel_tool_calls is not False,
        sampling=SamplingParams(
            max_tokens=request.max_output_tokens, temperature=request.temperature, top_p=request.top_p
        ),
        thinking=ThinkingControl(effort=reasoning.effort if reasoning else None),
        session_key=request.prompt_cache_key or session_key,
        agent=agent,
    )


def summary_mode(request: ResponsesRequest) -> str | None:
    reasoning = request.reasoning
    return (reasoning.summary or reasoning.generate_summary) if reasoning else None


def response_echo(request: ResponsesRequest) -> dict[str, Any]:
    """The request fields a response object repeats. `store` is what the client
    asked for; nothing is stored either way, and no retrieval endpoint exists."""
    reasoning = request.reasoning
    return {
        "model": request.model,
        "instructions": request.instructions,
        "tools": offered_tools(request),
        "tool_choice": request.tool_choice if request.tool_choice is not None else "auto",
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "reasoning": {"effort": reasoning.effort, "summary": summary_mode(request)} if reasoning else None,
        "text": request.text if request.text is not None else {"format": {"type": "text"}},
        "truncation": request.truncation or "disabled",
        "store": bool(request.store),
        "include": request.include or [],
        "max_output_tokens": request.max_output_tokens,
        "prompt_cache_key": request.prompt_cache_key,
        "metadata": request.metadata or {},
        "temperature": request.temperature,
        "top_p": request.top_p,
        "user": request.user,
        "safety_identifier": request.safety_identifier,
    }


# ---- items --------------------------------------------------------------------------


def _item(raw: Any, where: str) -> BaseModel | None:
    if not isinstance(raw, dict):
        raise invalid_request(f"{where}: an input item must be an object", where)
    # Easy input messages may leave out their type.
    kind = raw.get("type") or ("message" if "role" in raw else None)
    if kind is not None and not isinstance(kind, str):
        raise invalid_request(f"{where}.type: must be a string", f"{where}.type")
    model = ITEM_TYPES.get(kind) if kind is not None else None
    if model is None:
        return None  # hosted tools' calls and outputs: nothing an open model can replay
    try:
        return model.model_validate({**raw, "type": kind})
    except ValidationError as error:
        raise invalid_request(f"{where}: {validation_message(error)}", where) from error


def _assistant_turn(messages: list[Message]) -> Message:
    if not messages or messages[-1].role != "assistant":
        messages.append(Message(role="assistant"))
    return messages[-1]


def _tool_results(messages: list[Message]) -> Message:
    last = messages[-1] if messages else None
    if last is None or last.role != "user" or not all(isinstance(p, ToolResult) for p in last.parts):
        messages.append(Message(role="user"))
    return messages[-1]


def _content(content: str | list[dict[str, Any]], where: str) -> list[Text | Image]:
    if isinstance(content, str):
        return [Text(text=content)]
    out: list[Text | Image] = []
    for i, raw in enumerate(content):
        kind = raw.get("type") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and not isinstance(kind, str):
            raise invalid_request(f"{where}.content.{i}.type: must be a string", f"{where}.content.{i}.type")
        model = PART_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None:
            continue  # files and audio: nothing an open text model can read
        try:
            part = model.model_validate(raw)
        except ValidationError as error:
            raise invalid_request(
                f"{where}.content.{i}: {validation_message(error)}", f"{where}.content.{i}"
            ) from error
        if isinstance(part, TextPart):
            out.append(Text(text=part.text))
        elif isinstance(part, RefusalPart):
            out.append(Text(text=part.refusal))
        elif isinstance(part, ImagePart) and part.image_url:
            out.append(_image(part.image_url))
    return out


def _image(url: str) -> Image:
    if url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return Image(media_type=head or None, data=data)
    return Image(url=url)


def _output(output: str | list[dict[str, Any]], where: str) -> list[Text | Image]:
    return [Text(text=output)] if isinstance(output, str) else _content(output, f"{where}.output")


def _reasoning(item: ReasoningItem, replay: ReplayState | None) -> Reasoning | None:
    own = replay.open_reasoning(item.encrypted_content, REASONING_SEAL_CONTEXT) if replay else None
    if own is not None:
        return Reasoning(text=own, signature=item.encrypted_content)
    # Not ours (or none): the raw reasoning it shows, else its summary.
    shown = "".join(p.text for p in item.content or []) or "\n\n".join(p.text for p in item.summary if p.text)
    if shown:
        return Reasoning(text=shown, signature=item.encrypted_content)
    if item.encrypted_content:
        return Reasoning(opaque=item.encrypted_content)  # kept, never rendered
    return None


def _function_arguments(item: FunctionCallItem, replay: ReplayState | None) -> str:
    """The arguments as the model wrote them: clients may send them back re-serialised
    (OpenClaw compacts the JSON), which would change the replayed prompt."""
    if replay is None:
        return item.arguments
    try:
        echoed = json.loads(item.arguments) if item.arguments.strip() else {}
    except ValueError:
        return item.arguments
    return replay.restore_call(item.call_id, echoed, item.arguments)


def _custom_arguments(item: CustomToolCallItem, replay: ReplayState | None) -> str:
    """The arguments as the model wrote them when the input is unchanged; else the
    canonical `{"input": …}`."""
    echoed = {CUSTOM_INPUT: item.input}
    canonical = json.dumps(echoed, ensure_ascii=False)
    return replay.restore_call(item.call_id, echoed, canonical) if replay else canonical


# ---- tools --------------------------------------------------------------------------


def _tools(request: ResponsesRequest) -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    for n, raw in enumerate(request.tools or []):
        kind = raw.get("type") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and not isinstance(kind, str):
            raise invalid_request(f"tools.{n}.type: must be a string", f"tools.{n}.type")
        model = TOOL_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None:
            continue  # a hosted tool (see offered_tools)
        try:
            tool = model.model_validate(raw)
        except ValidationError as error:
            raise invalid_request(f"tools.{n}: {validation_message(error)}", f"tools.{n}") from error
        if isinstance(tool, CustomTool):
            specs.append(
                ToolSpec(
                    name=tool.name,
                    description=tool.description or "",
                    parameters=_custom_parameters(tool),
                    kind="custom",
                )
            )
        elif isinstance(tool, FunctionTool):
            if tool.parameters is not None:
                check_tool_schema(tool.parameters, f"tools.{n}.parameters")
            parameters = tool.parameters or {"type": "object", "properties": {}}
            specs.append(ToolSpec(name=tool.name, description=tool.description or "", parameters=parameters))
    return specs


def _custom_parameters(tool: CustomTool) -> dict[str, Any]:
    form = tool.format
    if form is not None and form.type == "grammar" and form.definition:
        described = f"The tool's input: text in this {form.syntax or ''} grammar:\n{form.definition}"
    else:
        described = "The tool's input: free-form text, passed to the tool as it is."
    return {
        "type": "object",
        "properties": {CUSTOM_INPUT: {"type": "string", "description": described}},
        "required": [CUSTOM_INPUT],
    }


def _tool_choice(request: ResponsesRequest) -> ToolChoice:
    choice = request.tool_choice
    if choice is None or choice == "auto":
        return ToolChoice()
    if choice in ("none", "required"):
        return ToolChoice(mode=choice)  # type: ignore[arg-type]
    if not isinstance(choice, dict):
        raise invalid_request("tool_choice: expected 'auto', 'none', 'required' or an object", "tool_choice")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        name = choice.get("name")
        if not isinstance(name, str) or name not in {t.get("name") for t in offered_tools(request)}:
            raise invalid_request(f"tool_choice.name: no {kind} tool named {name!r} in tools", "tool_choice")
        return ToolChoice(mode="named", name=name)
    if kind == "allowed_tools":
        # The tool list stays as sent (a stable prompt); only the mode is taken.
        return ToolChoice(mode="required" if choice.get("mode") == "required" else "auto")
    return ToolChoice()  # a hosted tool: it was left out, the model chooses freely
