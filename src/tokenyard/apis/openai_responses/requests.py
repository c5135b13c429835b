"""OpenAI Responses request → `Conversation` (sans-IO).

Input items are read in order. The items of one assistant turn (reasoning,
assistant messages, function and custom tool calls) become ONE assistant message
with its parts in their original order, so the turn re-enters the prompt the way
the model wrote it; tool outputs become tool results in a user message. Our own
reasoning comes back from `encrypted_content` byte for byte; anybody else's
reasoning item contributes the text it shows, or nothing.

Codex's control plane is understood too: namespace tools (each inner tool reaches
the model as `<namespace>__<name>`), a client-run `tool_search` (offered as a
function; its `tool_search_call` replays as the model's own call, and the tools its
`tool_search_output` loaded are listed in that result and declared from there on),
tools declared by `additional_tools` input items, and `agent_message` items.

The server is stateless: what would need stored responses (`previous_response_id`,
`background`, `conversation`, stored prompts, `item_reference`) is refused with a
clear error instead of being half-done.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ... import wire_json
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
    ToolChoice,
    ToolResult,
    ToolSpec,
    model_facing_name,
)
from ...structured_output import output_format
from ..errors import invalid_request, validation_message
from ..replay_state import ReplayState
from ..tool_schemas import check_tool_schema
from .schema import (
    ITEM_TYPES,
    PART_TYPES,
    TOOL_TYPES,
    AdditionalToolsItem,
    AgentMessageItem,
    CustomTool,
    CustomToolCallItem,
    FunctionCallItem,
    FunctionTool,
    ImagePart,
    ItemReference,
    MessageItem,
    NamespaceTool,
    ReasoningItem,
    RefusalPart,
    ResponsesRequest,
    TextPart,
    ToolOutputItem,
    ToolSearchCallItem,
    ToolSearchOutputItem,
    ToolSearchTool,
)

REASONING_SEAL_CONTEXT = "openai-reasoning"
# The one string parameter a custom (freeform) tool has when offered to an open model.
CUSTOM_INPUT = "input"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# The name a client-run `tool_search` tool (which has no name of its own) has for the model.
TOOL_SEARCH = "tool_search"
# The first words of Codex's context-compaction prompt (core/src/compact.rs).
CODEX_COMPACTION_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"

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


def to_conversation(
    request: ResponsesRequest,
    *,
    replay: ReplayState | None = None,
    session_key: str | None = None,
    thread_key: str | None = None,
    request_kind: str | None = None,
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
        elif isinstance(item, (FunctionCallItem, CustomToolCallItem)):
            call_names[item.call_id] = model_facing_name(item.name, item.namespace)
            custom = isinstance(item, CustomToolCallItem)
            _assistant_turn(messages).parts.append(
                ToolCall(
                    id=item.call_id,
                    name=item.name,
                    namespace=item.namespace,
                    arguments=(
                        _custom_arguments(item, replay)
                        if isinstance(item, CustomToolCallItem)
                        else _function_arguments(item, replay)
                    ),
                    kind="custom" if custom else "function",
                )
            )
        elif isinstance(item, ToolSearchCallItem):
            call_id = item.call_id or ""
            call_names[call_id] = TOOL_SEARCH
            _assistant_turn(messages).parts.append(
                ToolCall(id=call_id, name=TOOL_SEARCH, arguments=_search_arguments(item, replay))
            )
        elif isinstance(item, ToolSearchOutputItem):
            loaded = tool_specs(item.tools, f"{where}.tools")
            result = ToolResult(tool_call_id=item.call_id or "", name=TOOL_SEARCH, loaded_tools=loaded)
            _tool_results(messages).parts.append(result)
        elif isinstance(item, AgentMessageItem):
            messages.append(Message(role="user", parts=_agent_message(item, where)))
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
    tools = _tools(request, items)
    request_kind = request_kind or codex_request_kind(request)
    session = thread_key or request.prompt_cache_key or session_key
    if session and request_kind:
        # A side request (Codex's compaction drops the tools and asks for a summary):
        # watched apart, so the thread's own prefix is compared with its own turns.
        session = f"{session}#{request_kind}"
    return Conversation(
        model=request.model,
        system=[Text(text=request.instructions)] if request.instructions else [],
        messages=messages,
        tools=tools,
        tool_choice=_tool_choice(request, tools),
        parallel_tool_calls=request.parallel_tool_calls is not False,
        sampling=SamplingParams(
            max_tokens=request.max_output_tokens, temperature=request.temperature, top_p=request.top_p
        ),
        thinking=ThinkingControl(effort=reasoning.effort if reasoning else None),
        output_format=_output_format(request.text),
        session_key=session,
        user=request.user,
        request_kind=request_kind,
    )


def _output_format(text: dict[str, Any] | None) -> OutputFormat | None:
    """`text.format`: `{"type": "text" | "json_object"}` or `{"type": "json_schema",
    "name", "schema", "strict"}` (the schema inline, unlike Chat Completions)."""
    form = (text or {}).get("format")
    if form is None:
        return None
    if not isinstance(form, dict) or not isinstance(form.get("type"), str):
        raise invalid_request("text.format: must be an object with a type", "text.format")
    name = form.get("name")
    return output_format(
        form["type"],
        form.get("schema"),
        name=name if isinstance(name, str) else None,
        where="text.format",
        schema_param="text.format.schema",
    )


def codex_thread_key(headers: Mapping[str, str]) -> str | None:
    """The prefix-watch key of a Codex request: its thread (`thread-id`), under its
    parent thread when it is a sub-agent's (`x-codex-parent-thread-id`), so each
    agent's prompt is compared with that agent's previous prompt only."""
    thread = headers.get("thread-id")
    if not thread:
        return None
    parent = headers.get("x-codex-parent-thread-id")
    return f"{parent}/{thread}" if parent and parent != thread else thread


def codex_request_kind(request: ResponsesRequest) -> str | None:
    """ "compaction" for Codex's context-compaction request: its turn metadata
    (`client_metadata["x-codex-turn-metadata"]`, a JSON string) says
    `"request_kind": "compaction"`, or the last user message is Codex's compaction
    prompt. None for an ordinary turn."""
    metadata = request.client_metadata or {}
    turn = metadata.get("x-codex-turn-metadata")
    try:
        turn = wire_json.loads(turn, where="client_metadata") if isinstance(turn, str) else turn
    except ValueError:
        turn = None
    kinds = (metadata.get("request_kind"), turn.get("request_kind") if isinstance(turn, dict) else None)
    if "compaction" in kinds:
        return "compaction"
    if isinstance(request.input, list):
        for raw in reversed(request.input):
            if isinstance(raw, dict) and raw.get("role") == "user":
                return "compaction" if _message_text(raw).lstrip().startswith(CODEX_COMPACTION_PROMPT) else None
    return None


def _message_text(raw: dict[str, Any]) -> str:
    content = raw.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def summary_mode(request: ResponsesRequest) -> str | None:
    reasoning = request.reasoning
    return (reasoning.summary or reasoning.generate_summary) if reasoning else None


def response_echo(request: ResponsesRequest) -> dict[str, Any]:
    """The request fields a response object repeats, every one the OpenAI spec always
    sends (defaults filled in: sampling as numbers, tools with `description` and
    `strict`). `store` is what the client asked for; nothing is stored either way,
    and no retrieval endpoint exists."""
    reasoning = request.reasoning
    return {
        "model": request.model,
        "instructions": request.instructions,
        "tools": [_echoed_tool(t) for t in offered_tools(request)],
        "tool_choice": request.tool_choice if request.tool_choice is not None else "auto",
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "reasoning": {"effort": reasoning.effort, "summary": summary_mode(request)} if reasoning else None,
        "text": request.text if request.text is not None else {"format": {"type": "text"}},
        "truncation": request.truncation or "disabled",
        "store": bool(request.store),
        "include": request.include or [],
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": None,
        "prompt_cache_key": request.prompt_cache_key,
        "metadata": request.metadata or {},
        "temperature": request.temperature if request.temperature is not None else 1.0,
        "top_p": request.top_p if request.top_p is not None else 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "service_tier": "default",
        "user": request.user,
        "safety_identifier": request.safety_identifier,
    }


def _echoed_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the response repeats it: function tools (inside namespaces too) with
    `description` and `strict` always present, as OpenAI echoes them."""
    kind = tool.get("type")
    if kind == "function":
        return {**tool, "description": tool.get("description"), "strict": tool.get("strict", True)}
    if kind == "namespace" and isinstance(tool.get("tools"), list):
        inner = [_echoed_tool(t) if isinstance(t, dict) else t for t in tool["tools"]]
        return {**tool, "description": tool.get("description") or "", "tools": inner}
    if kind == "custom":
        return {**tool, "description": tool.get("description")}
    return tool


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
            out.append(Image.from_url(part.image_url))
    return out


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
        echoed = wire_json.loads(item.arguments, where="arguments") if item.arguments.strip() else {}
    except ValueError:
        return item.arguments
    return replay.restore_call(item.call_id, echoed, item.arguments)


def _search_arguments(item: ToolSearchCallItem, replay: ReplayState | None) -> str:
    """A tool_search call as the model wrote it; its arguments come back as an object."""
    echoed = item.arguments if item.arguments is not None else {}
    canonical = json.dumps(echoed, ensure_ascii=False)
    return replay.restore_call(item.call_id, echoed, canonical) if replay and item.call_id else canonical


def _agent_message(item: AgentMessageItem, where: str) -> list[Text | Image]:
    """Another agent's message, under a line naming its author (when known)."""
    parts = _content(item.content, where)
    return [Text(text=f"Message from agent {item.author}:"), *parts] if item.author else parts


def _custom_arguments(item: CustomToolCallItem, replay: ReplayState | None) -> str:
    """The arguments as the model wrote them when the input is unchanged; else the
    canonical `{"input": …}`."""
    echoed = {CUSTOM_INPUT: item.input}
    canonical = json.dumps(echoed, ensure_ascii=False)
    return replay.restore_call(item.call_id, echoed, canonical) if replay else canonical


# ---- tools --------------------------------------------------------------------------


@dataclass(frozen=True)
class CallRoute:
    """How a call to one model-facing tool name goes back to the client."""

    item_type: Literal["function_call", "custom_tool_call", "tool_search_call"]
    name: str
    namespace: str | None = None


def call_routes(request: ResponsesRequest, conversation: Conversation) -> dict[str, CallRoute]:
    """Every tool the model may call, by the name it sees, with the item type, bare
    name and namespace its calls stream as: the offered tools, those declared by
    `additional_tools` items and those loaded by `tool_search_output` items."""
    search = {TOOL_SEARCH} if any(_is_tool_search(t) for t in _raw_tools(request)) else set()
    routes: dict[str, CallRoute] = {}
    loaded = (t for m in conversation.messages for p in m.parts if isinstance(p, ToolResult) for t in p.loaded_tools)
    for spec in (*conversation.tools, *loaded):
        if spec.model_name in search and spec.namespace is None:
            route = CallRoute("tool_search_call", spec.name)
        else:
            kind: Literal["function_call", "custom_tool_call"] = (
                "custom_tool_call" if spec.kind == "custom" else "function_call"
            )
            route = CallRoute(kind, spec.name, spec.namespace)
        routes.setdefault(spec.model_name, route)
    return routes


def tool_specs(raw_tools: list[Any], where: str) -> list[ToolSpec]:
    """Function, custom, namespace and tool_search tools as the model sees them;
    hosted tools (web_search, file_search, mcp…) have nothing to run them here and
    are left out, without failing the request."""
    specs: list[ToolSpec] = []
    for n, raw in enumerate(raw_tools):
        tool = _tool_model(raw, f"{where}.{n}")
        if isinstance(tool, NamespaceTool):
            for i, inner in enumerate(tool.tools):
                member = _tool_model(inner, f"{where}.{n}.tools.{i}")
                if isinstance(member, (FunctionTool, CustomTool)):
                    spec = _spec(member)
                    spec.namespace = tool.name
                    spec.description = _namespaced_description(spec.description, tool)
                    specs.append(spec)
                elif member is not None:
                    raise invalid_request(
                        f"{where}.{n}.tools.{i}: a namespace holds function and custom tools only",
                        f"{where}.{n}.tools.{i}",
                    )
        elif isinstance(tool, ToolSearchTool):
            parameters = tool.parameters or {"type": "object", "properties": {}}
            specs.append(ToolSpec(name=TOOL_SEARCH, description=tool.description or "", parameters=parameters))
        elif isinstance(tool, (FunctionTool, CustomTool)):
            specs.append(_spec(tool))
    return specs


def _namespaced_description(description: str, namespace: NamespaceTool) -> str:
    """An inner tool's description with its namespace's attached (when it has one)."""
    if not namespace.description:
        return description
    head = f"{namespace.name}: {namespace.description}"
    return f"{head}\n\n{description}" if description else head


def _raw_tools(request: ResponsesRequest) -> list[Any]:
    return list(request.tools or [])


def _is_tool_search(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("type") == "tool_search"


def offered_tools(request: ResponsesRequest) -> list[dict[str, Any]]:
    """The request's function, custom, namespace and tool_search tools, as sent."""
    return [
        t
        for t in _raw_tools(request)
        if isinstance(t, dict) and isinstance(t.get("type"), str) and t["type"] in TOOL_TYPES
    ]


def _tool_model(raw: Any, where: str) -> BaseModel | None:
    kind = raw.get("type") if isinstance(raw, dict) else None
    if isinstance(raw, dict) and not isinstance(kind, str):
        raise invalid_request(f"{where}.type: must be a string", f"{where}.type")
    model = TOOL_TYPES.get(kind) if isinstance(kind, str) else None
    if model is None:
        return None
    try:
        tool = model.model_validate(raw)
    except ValidationError as error:
        raise invalid_request(f"{where}: {validation_message(error)}", where) from error
    if isinstance(tool, (FunctionTool, ToolSearchTool)) and tool.parameters is not None:
        check_tool_schema(tool.parameters, f"{where}.parameters")
    return tool


def _tools(request: ResponsesRequest, items: list[Any]) -> list[ToolSpec]:
    """The request's tools, then those of `additional_tools` input items (Codex sends
    them at the head of the input, so they join the system tool list)."""
    specs = tool_specs(_raw_tools(request), "tools")
    for n, raw in enumerate(items):
        if isinstance(raw, dict) and raw.get("type") == "additional_tools":
            item = AdditionalToolsItem.model_validate(raw)
            specs += tool_specs(item.tools, f"input.{n}.tools")
    return specs


def _spec(tool: FunctionTool | CustomTool) -> ToolSpec:
    if isinstance(tool, CustomTool):
        return ToolSpec(
            name=tool.name, description=tool.description or "", parameters=_custom_parameters(tool), kind="custom"
        )
    parameters = tool.parameters or {"type": "object", "properties": {}}
    return ToolSpec(name=tool.name, description=tool.description or "", parameters=parameters)


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


def _tool_choice(request: ResponsesRequest, specs: list[ToolSpec]) -> ToolChoice:
    choice = request.tool_choice
    if choice is None or choice == "auto":
        return ToolChoice()
    if choice in ("none", "required"):
        return ToolChoice(mode=choice)
    if not isinstance(choice, dict):
        raise invalid_request("tool_choice: expected 'auto', 'none', 'required' or an object", "tool_choice")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        name, namespace = choice.get("name"), choice.get("namespace")
        wanted = (
            model_facing_name(name, namespace if isinstance(namespace, str) else None)
            if isinstance(name, str)
            else None
        )
        if wanted is None or wanted not in {t.model_name for t in specs}:
            raise invalid_request(f"tool_choice.name: no {kind} tool named {name!r} in tools", "tool_choice")
        return ToolChoice(mode="named", name=wanted)
    if kind == "allowed_tools":
        # The tool list stays as sent (a stable prompt); only the mode is taken.
        return ToolChoice(mode="required" if choice.get("mode") == "required" else "auto")
    return ToolChoice()  # a hosted tool: it was left out, the model chooses freely
