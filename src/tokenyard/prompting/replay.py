"""How a conversation, earlier reasoning included, re-enters the prompt.

Prior assistant turns go back in their original order, as the family's chat
template expects them, so that turn N's prompt plus the model's output is a token
prefix of turn N+1's:

- a template that reads a reasoning field gets it (`reasoning_content`, or gpt-oss's
  `thinking`); a turn that interleaves reasoning and tool calls becomes one
  template message per segment, each with its own reasoning;
- a template that does not gets the family's markers written into content, in
  place (`<think>…</think>` before the text they preceded);
- the family's own drop rules (DeepSeek dropping finished turns' reasoning, Qwen3
  keeping only the current agentic turn's) are left to its template, never
  imposed here;
- tool results become `tool` messages, so templates that look for "the last user
  query" see the agentic turn as one turn;
- tool-call arguments go in as the template reads them: the exact JSON text where
  it accepts a string, a mapping that serialises back to that exact text otherwise;
- a system message later in the conversation (Claude Code's reminders after tool
  results, a trailing system turn) stays a system message where the template's
  start-up probe showed that is safe (`InlineSystem.PRESERVE`); otherwise it is
  folded into the user or tool message before it (after an assistant turn it
  becomes a user message), so the render never fails and never moves earlier text;
- deferred tools (tool search) are listed by name after the system prompt and
  defined inside the tool result that references them (see deferred_tools.py);
- a tool added mid-conversation (`ToolChange`) is defined where it was added, in
  the system message that added it — natively where the template declares tools
  a message carries (Kimi K3), else as text — and a removed one is announced there;
  the system tool list never changes, so the prefix before the change holds;
- context edits the client asked for (Anthropic `context_management`) are applied
  to the history first: reasoning kept only in the last N assistant turns, old tool
  results replaced by a note once the prompt is over the client's trigger.

Thinking controls map to template variables: Anthropic `thinking`
enabled/adaptive/disabled and OpenAI `reasoning.effort`; and when the family has a
reasoning parser and thinking is on, variables that keep history thinking
(`truncate_history_thinking=false`, GLM's `clear_thinking=false`) are set so
tool-calling turns keep their reasoning.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .. import wire_json
from ..conversation import (
    Conversation,
    Image,
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolChange,
    ToolReference,
    ToolResult,
    ToolSpec,
)
from .deferred_tools import declared_tools, deferred_listing, functions_block
from .profiles import ModelProfile
from .template import ExactJson, TemplateTraits

SYSTEM_BLOCK_SEPARATOR = "\n\n"
# What a cleared tool result (and cleared call arguments) leave for the model to see.
CLEARED_TOOL_RESULT = "[tool result cleared to save context]"
CLEARED_TOOL_INPUT = "{}"
IMAGE_PLACEHOLDER = "[image]"
# Between a message's own text and a system message folded into it.
FOLD_SEPARATOR = "\n\n"


class InlineSystem(Enum):
    """How a system message after the first non-system message is rendered."""

    PRESERVE = "preserve"  # as its own system message, in place
    FOLD = "fold"  # into the adjacent turn's text


@dataclass(frozen=True)
class TemplateInput:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    kwargs: dict[str, Any]
    thinking_enabled: bool


def clear_old_thinking(conversation: Conversation) -> Conversation:
    """Reasoning only in the last `keep_thinking_turns` assistant turns."""
    keep = conversation.context_edits.keep_thinking_turns
    if keep is None:
        return conversation
    turns = [n for n, m in enumerate(conversation.messages) if m.role == "assistant"]
    older = set(turns[: max(0, len(turns) - keep)])
    if not any(isinstance(p, Reasoning) for n in older for p in conversation.messages[n].parts):
        return conversation
    messages = [
        m.model_copy(update={"parts": [p for p in m.parts if not isinstance(p, Reasoning)]}) if n in older else m
        for n, m in enumerate(conversation.messages)
    ]
    return conversation.model_copy(update={"messages": messages})


def clear_old_tool_uses(conversation: Conversation) -> Conversation:
    """The results (and, if asked, the arguments) of all but the last `keep_tool_uses`
    tool calls replaced by a note, as `context_management.clear_tool_uses` asks once
    the prompt is over its trigger (the caller measures that)."""
    clearing = conversation.context_edits.clear_tool_uses
    if clearing is None:
        return conversation
    calls = [p for m in conversation.messages for p in m.parts if isinstance(p, ToolCall)]
    older = calls[: max(0, len(calls) - clearing.keep_tool_uses)]
    cleared = {c.id for c in older if c.name not in clearing.exclude_tools}
    inputs = clearing.clear_inputs

    def edit(part: Any) -> Any:
        if isinstance(part, ToolResult) and part.tool_call_id in cleared:
            return part.model_copy(update={"content": [Text(text=CLEARED_TOOL_RESULT)]})
        if isinstance(part, ToolCall) and part.id in cleared and (inputs is True or (inputs and part.name in inputs)):
            return part.model_copy(update={"arguments": CLEARED_TOOL_INPUT})
        return part

    if not cleared:
        return conversation
    messages = [m.model_copy(update={"parts": [edit(p) for p in m.parts]}) for m in conversation.messages]
    return conversation.model_copy(update={"messages": messages})


def thinking_enabled(conversation: Conversation, profile: ModelProfile) -> bool:
    mode = conversation.thinking.mode
    if mode == "disabled":
        return False
    if conversation.thinking.effort in ("none", "minimal") and mode == "default":
        return False
    explicit = conversation.template_kwargs.get(profile.thinking_kwarg or "enable_thinking")
    if isinstance(explicit, bool):
        return explicit
    return profile.reasoning_parser is not None


def template_kwargs(conversation: Conversation, profile: ModelProfile, traits: TemplateTraits) -> dict[str, Any]:
    thinking = thinking_enabled(conversation, profile)
    kwargs: dict[str, Any] = {}
    if profile.thinking_kwarg:
        kwargs[profile.thinking_kwarg] = profile.thinking_values[thinking]
    if "enable_thinking" in traits.reads_kwargs and "enable_thinking" not in kwargs:
        kwargs["enable_thinking"] = thinking
    effort = conversation.thinking.effort
    if effort and "reasoning_effort" in traits.reads_kwargs and "reasoning_effort" not in kwargs:
        kwargs["reasoning_effort"] = {"minimal": "low", "none": "low", "xhigh": "high", "max": "high"}.get(
            effort, effort
        )
    if thinking and profile.reasoning_parser is not None:
        kwargs["truncate_history_thinking"] = False
        kwargs.update(dict(profile.keep_history_kwargs))
    kwargs.update(conversation.template_kwargs)
    return kwargs


def tool_dicts(tools: list[ToolSpec]) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    return [
        {
            "type": "function",
            "function": {"name": t.model_name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _arguments(call: ToolCall, traits: TemplateTraits) -> Any:
    if traits.accepts_string_arguments or traits.arguments_as == "string":
        return call.arguments
    try:
        value = wire_json.loads(call.arguments, where="arguments") if call.arguments.strip() else {}
    except ValueError:
        return call.arguments  # not JSON: the model's text as it was
    if isinstance(value, dict):
        return ExactJson(value, call.arguments)
    return value


def _content_text(parts: Sequence[Text | Image | ToolReference]) -> str:
    return "\n".join(
        p.text if isinstance(p, Text) else IMAGE_PLACEHOLDER for p in parts if not isinstance(p, ToolReference)
    )


def _system_text(conversation: Conversation) -> tuple[str, list[Message]]:
    """The system prompt: system blocks plus leading system/developer messages
    (Codex sends its instructions as developer messages)."""
    blocks = [b.text for b in conversation.system]
    messages = list(conversation.messages)
    while messages and messages[0].role in ("system", "developer"):
        blocks.append(_system_message_text(messages[0], conversation.tools))
        messages.pop(0)
    return SYSTEM_BLOCK_SEPARATOR.join(b for b in blocks if b), messages


def _added_tools(change: ToolChange, tools: list[ToolSpec]) -> ToolSpec:
    """An added tool's definition: its own, or the request's tool it names."""
    if change.tool is not None:
        return change.tool
    return next((t for t in tools if t.model_name == change.tool_name), ToolSpec(name=change.tool_name))


def _system_message_text(message: Message, tools: list[ToolSpec], *, native_additions: bool = False) -> str:
    """A system message's text: its own, and its tool changes in place — the added
    tools' definitions (unless the template declares them natively) and the
    removed tools' names."""
    blocks: list[str] = []
    run: list[ToolChange] = []
    for part in [*message.parts, None]:
        if isinstance(part, ToolChange):
            run.append(part)
            continue
        if run:
            added = [_added_tools(c, tools) for c in run if c.action == "add"]
            removed = [c.tool_name for c in run if c.action == "remove"]
            if added and not native_additions:
                blocks.append(loaded_tools_text(added))
            if removed:
                blocks.append(REMOVED_TOOLS_HEADING + " " + ", ".join(removed))
            run = []
        if isinstance(part, (Text, Image)):
            blocks.append(_content_text([part]))
    return FOLD_SEPARATOR.join(b for b in blocks if b)


def _assistant_segments(message: Message) -> list[tuple[str, list[str], list[ToolCall]]]:
    """Split an assistant turn at each reasoning block that follows text or calls:
    [(reasoning, texts, calls)], in order."""
    segments: list[tuple[str, list[str], list[ToolCall]]] = []
    reasoning = ""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            if not part.text:
                continue  # redacted/opaque reasoning can not be rendered
            if texts or calls:
                segments.append((reasoning, texts, calls))
                reasoning, texts, calls = "", [], []
            reasoning = f"{reasoning}\n\n{part.text}" if reasoning else part.text
        elif isinstance(part, Text):
            texts.append(part.text)
        elif isinstance(part, ToolCall):
            calls.append(part)
    segments.append((reasoning, texts, calls))
    return segments


def _assistant_dicts(message: Message, profile: ModelProfile, traits: TemplateTraits) -> list[dict[str, Any]]:
    reads_field = traits.reads_reasoning_content or profile.reasoning_field != "reasoning_content"
    out = []
    for reasoning, texts, calls in _assistant_segments(message):
        content = "".join(texts)
        entry: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            if reads_field:
                entry[profile.reasoning_field] = reasoning
            elif profile.reasoning_markers is not None:
                start, end = profile.reasoning_markers
                entry["content"] = f"{start}\n{reasoning}\n{end}\n\n{content}"
        if calls:
            entry["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.model_name, "arguments": _arguments(c, traits)}}
                for c in calls
            ]
        out.append(entry)
    return out


def _user_dicts(message: Message, tools: list[ToolSpec]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    texts: list[Text | Image] = []
    for part in message.parts:
        if isinstance(part, ToolResult):
            text = _content_text(part.content)
            if part.loaded_tools:
                text = (text + "\n" if text else "") + loaded_tools_text(part.loaded_tools)
            if part.is_error and not text.startswith("Error"):
                text = f"Error: {text}"
            references = part.references()
            if references:
                block = functions_block(references, tools)
                text = f"{text}\n{block}" if text else block
            entry = {"role": "tool", "tool_call_id": part.tool_call_id, "content": text}
            if part.name:
                entry["name"] = part.name
            out.append(entry)
        elif isinstance(part, (Text, Image)):
            texts.append(part)
    if texts:
        out.append({"role": "user", "content": _content_text(texts)})
    return out


def template_input(
    conversation: Conversation,
    profile: ModelProfile,
    traits: TemplateTraits,
    *,
    template_has_tools: bool = True,
    inline_system: InlineSystem = InlineSystem.PRESERVE,
) -> TemplateInput:
    """The messages, tools and variables to render `conversation` with.

    `template_has_tools=False`: the chat template knows nothing of tools (plain
    ChatML, SmolLM2). Tools, calls and results are then written in the hermes
    format the way tool-tuned ChatML models were trained on it, so the model still
    sees its tools and the hermes parser reads its calls."""
    system, messages = _system_text(conversation)
    declared = declared_tools(conversation.tools)
    fallback = not template_has_tools and bool(declared)
    if fallback:
        system = (system + SYSTEM_BLOCK_SEPARATOR if system else "") + hermes_tools_prompt(declared)
    listing = deferred_listing(conversation)
    if listing:
        system = (system + SYSTEM_BLOCK_SEPARATOR if system else "") + listing
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "assistant":
            dicts = _assistant_dicts(message, profile, traits)
            out.extend(_hermes_assistant(d) for d in dicts) if fallback else out.extend(dicts)
        elif message.role in ("user", "tool"):
            dicts = _user_dicts(message, conversation.tools)
            out.extend(_hermes_tool_result(d) for d in dicts) if fallback else out.extend(dicts)
        else:  # a system/developer message later in the conversation
            native = traits.declares_message_tools and inline_system is InlineSystem.PRESERVE
            text = _system_message_text(message, conversation.tools, native_additions=native)
            additions = [
                _added_tools(p, conversation.tools)
                for p in message.parts
                if isinstance(p, ToolChange) and p.action == "add"
            ]
            if native and additions:
                if text:
                    out.append({"role": "system", "content": text})
                out.append({"role": "system", "content": "", "tools": tool_dicts(additions)})
            elif inline_system is InlineSystem.PRESERVE:
                out.append({"role": "system", "content": text})
            elif out and out[-1]["role"] in ("user", "tool"):
                # Into the turn it follows: that text is already final, so the
                # next turn renders it identically.
                content = out[-1].get("content") or ""
                out[-1] = {**out[-1], "content": content + FOLD_SEPARATOR + text if content else text}
            else:  # after an assistant turn: a user turn of its own
                out.append({"role": "user", "content": text})
    return TemplateInput(
        out,
        None if fallback else tool_dicts(declared),
        template_kwargs(conversation, profile, traits),
        thinking_enabled(conversation, profile),
    )


LOADED_TOOLS_HEADING = "Tools loaded; from now on they can be called like the others:"
REMOVED_TOOLS_HEADING = "Tools removed; from now on they can not be called:"
NO_TOOLS_LOADED = "No tools matched; none were loaded."


def loaded_tools_text(tools: list[ToolSpec]) -> str:
    """A tool-search result as the model reads it: one JSON line per loaded tool
    (model-facing name, description, parameter schema), in the order the client
    listed them. It sits where the result sits in the conversation, never in the
    system tool list, so the prompt before it stays byte-identical."""
    if not tools:
        return NO_TOOLS_LOADED
    lines = (
        json.dumps({"name": t.model_name, "description": t.description, "parameters": t.parameters}, ensure_ascii=False)
        for t in tools
    )
    return LOADED_TOOLS_HEADING + "\n" + "\n".join(lines)


def hermes_tools_prompt(tools: list[ToolSpec]) -> str:
    lines = "\n".join(json.dumps(spec["function"], ensure_ascii=False) for spec in tool_dicts(tools) or [])
    return (
        "# Tools\n\nYou may call one or more of these functions. Their signatures are inside "
        f"<tools></tools>:\n<tools>\n{lines}\n</tools>\n\n"
        "To call a function, reply with a JSON object holding its name and arguments inside "
        '<tool_call></tool_call>:\n<tool_call>\n{"name": <function name>, "arguments": <arguments object>}\n</tool_call>'
    )


def _hermes_assistant(entry: dict[str, Any]) -> dict[str, Any]:
    calls = entry.pop("tool_calls", None)
    if not calls:
        return entry
    written = [
        '<tool_call>\n{"name": '
        + json.dumps(c["function"]["name"], ensure_ascii=False)
        + ', "arguments": '
        + _arguments_text(c["function"]["arguments"])
        + "}\n</tool_call>"
        for c in calls
    ]
    content = entry.get("content") or ""
    entry["content"] = (content + "\n" if content else "") + "\n".join(written)
    return entry


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, ExactJson):
        return arguments.json_text
    if isinstance(arguments, str):
        return arguments if arguments.strip() else "{}"
    return json.dumps(arguments, ensure_ascii=False)


def _hermes_tool_result(entry: dict[str, Any]) -> dict[str, Any]:
    if entry["role"] != "tool":
        return entry
    return {"role": "user", "content": f"<tool_response>\n{entry['content']}\n</tool_response>"}
