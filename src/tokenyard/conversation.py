"""The canonical request.

Every API's request becomes a `Conversation`; the prompt is a function of it alone.
An assistant turn is an ordered list of parts: reasoning, text and tool calls keep
the order the model produced them in, because the next turn must replay them
exactly.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import wire_json


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Text(_Part):
    type: Literal["text"] = "text"
    text: str


class Reasoning(_Part):
    """Model reasoning. `text` is the exact reasoning as generated, when we have it.
    `signature` is whatever proof of origin the client echoed (ours or foreign);
    `opaque` holds reasoning we can not read (Anthropic `redacted_thinking` data, an
    encrypted item that is not ours) and is never rendered into a prompt."""

    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    signature: str | None = None
    opaque: str | None = None


class ToolCall(_Part):
    """`arguments` is the arguments JSON text exactly as it was produced."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: str = "{}"
    kind: Literal["function", "custom"] = "function"
    # The namespace of a namespaced tool (Codex's `multi_agent_v1`); `name` is bare.
    namespace: str | None = None

    @property
    def model_name(self) -> str:
        return model_facing_name(self.name, self.namespace)

    def input(self) -> Any:
        try:
            return wire_json.loads(self.arguments, where="arguments") if self.arguments.strip() else {}
        except ValueError:
            return self.arguments


class Image(_Part):
    type: Literal["image"] = "image"
    media_type: str | None = None
    data: str | None = None  # base64
    url: str | None = None

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An image given by URL: a base64 `data:` URL becomes inline data, else the URL."""
        inline = _DATA_URL.fullmatch(url)
        if inline:
            return cls(media_type=inline["media"], data=inline["data"])
        return cls(url=url)


_DATA_URL = re.compile(r"data:(?P<media>[\w.+-]+/[\w.+-]+)?(?:;[\w=-]+)*;base64,(?P<data>.*)", re.DOTALL)


class ToolReference(_Part):
    """A tool search's answer names a deferred tool: its full definition enters the
    prompt here, and the model may call it from now on."""

    type: Literal["tool_reference"] = "tool_reference"
    tool_name: str


class ToolResult(_Part):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    content: list[Text | Image | ToolReference] = Field(default_factory=list)
    is_error: bool = False
    name: str | None = None
    # Tools this result made available (a Codex `tool_search_output`): the prompt lists
    # them here, in the result, and they are declared from this point on.
    loaded_tools: list[ToolSpec] = Field(default_factory=list)

    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))

    def references(self) -> list[str]:
        return [p.tool_name for p in self.content if isinstance(p, ToolReference)]


class ToolChange(_Part):
    """A tool added to the conversation or removed from it at this point (Anthropic
    `tool_addition` / `tool_removal` blocks in a system message; tools a system
    message declares, as Kimi K3's template takes them). An added tool is defined
    here, never in the system tool list, so the prompt before it stays the same:
    `tool` is its definition, or None when it names a tool of the request's list
    (a deferred one). A removed tool can not be called from here on."""

    type: Literal["tool_change"] = "tool_change"
    action: Literal["add", "remove"]
    tool_name: str
    tool: ToolSpec | None = None


Part = Annotated[Text | Reasoning | ToolCall | ToolResult | Image | ToolChange, Field(discriminator="type")]

Role = Literal["system", "developer", "user", "assistant", "tool"]


class Message(BaseModel):
    role: Role
    parts: list[Part] = Field(default_factory=list)

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))


NAMESPACE_SEPARATOR = "__"


def model_facing_name(name: str, namespace: str | None) -> str:
    """The one name the model sees for a tool: `<namespace>__<name>` inside a
    namespace (the convention Codex-compatible adapters use), else the name."""
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}" if namespace else name


class ToolSpec(BaseModel):
    """A tool offered to the model. Custom (freeform) tools are presented to open
    models as a function with one string parameter. A namespaced tool keeps its bare
    `name` and its `namespace`; the model knows it by `model_name`."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    kind: Literal["function", "custom"] = "function"
    namespace: str | None = None

    @property
    def model_name(self) -> str:
        return model_facing_name(self.name, self.namespace)

    # Deferred (Anthropic `defer_loading`): only its name and description are shown
    # up front; its definition is rendered where a tool search references it.
    deferred: bool = False


class ToolChoice(BaseModel):
    """`none`: the tools stay in the prompt but no call is returned; `required`: at
    least one call; `named`: a call to `name`. Enforced by the pipeline."""

    mode: Literal["auto", "none", "required", "named"] = "auto"
    name: str | None = None


class ThinkingControl(BaseModel):
    """Per-request thinking. `default` means the client said nothing; `adaptive` lets
    the model decide (Claude Code's default). `effort` is OpenAI's reasoning.effort
    or Anthropic's output_config.effort. `budget_tokens` caps the reasoning tokens:
    when spent, the reasoning block is ended as the template expects."""

    mode: Literal["default", "enabled", "adaptive", "disabled"] = "default"
    budget_tokens: int | None = None
    effort: str | None = None

    @property
    def enabled(self) -> bool:
        return self.mode != "disabled"


class ToolUseClearing(BaseModel):
    """Once the prompt is over `trigger_tokens`, the results of all but the last
    `keep_tool_uses` tool calls are replaced by a note (their arguments too with
    `clear_inputs`, or for the tools it names), except for `exclude_tools`; not done
    when it would save fewer than `clear_at_least_tokens`."""

    trigger_tokens: int = 100_000
    keep_tool_uses: int = 3
    clear_at_least_tokens: int = 0
    exclude_tools: list[str] = Field(default_factory=list)
    clear_inputs: bool | list[str] = False


class ContextEdits(BaseModel):
    """What of the history the client asked to keep from the model (Anthropic's
    `context_management.edits`); the client keeps sending its full history.
    `keep_thinking_turns`: reasoning stays only in the last N assistant turns (None:
    all of it)."""

    keep_thinking_turns: int | None = None
    clear_tool_uses: ToolUseClearing | None = None


class SamplingParams(BaseModel):
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: list[str] = Field(default_factory=list)
    seed: int | None = None
    # OpenAI's penalties (Chat): None leaves the model's declared default (frequency)
    # or the engine's (presence).
    frequency_penalty: float | None = None
    presence_penalty: float | None = None


class OutputFormat(BaseModel):
    """The shape the answer's text must have: a JSON object (`json_object`), or JSON
    matching `json_schema` (`json_schema`; Chat `response_format`, Responses
    `text.format`, Anthropic `output_config.format`). Engines that can guide their
    decoding are held to it; the pipeline validates the answer on every engine."""

    type: Literal["json_object", "json_schema"]
    json_schema: dict[str, Any] | bool | None = None
    name: str | None = None


class AgentHints(BaseModel):
    """Serving hints a harness may send (Dynamo's `nvext.agent_hints`, or headers).
    `priority`: higher is served sooner (tokenyard's queue; forwarded to engines that
    schedule by priority). `strict_priority`: a queue tier that always precedes lower
    ones. `osl`: the expected output length in tokens (load estimates).
    `speculative_prefill`: when the turn ends in tool calls, prefill the next turn's
    prefix on the chosen worker while the tools run."""

    priority: int = 0
    strict_priority: int = 0
    osl: int | None = Field(default=None, ge=0)
    speculative_prefill: bool = False


class Conversation(BaseModel):
    model: str
    system: list[Text] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: ToolChoice = Field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    thinking: ThinkingControl = Field(default_factory=ThinkingControl)
    output_format: OutputFormat | None = None
    context_edits: ContextEdits = Field(default_factory=ContextEdits)
    # Extra chat-template variables the client asked for (chat_template_kwargs).
    template_kwargs: dict[str, Any] = Field(default_factory=dict)
    # Identifies the agent session for prefix-stability tracking.
    session_key: str | None = None
    # Within a session: the agent that sent this (a subagent's id) and the agent
    # that started it (Claude Code's x-claude-code-agent-id / -parent-agent-id).
    agent_id: str | None = None
    parent_agent_id: str | None = None
    # The end user the client names (OpenAI `user`; an Anthropic `metadata.user_id`
    # that holds no session): what engine routers keep together when there is no session.
    user: str | None = None
    # The harness's own session headers as it sent them (Claude Code's
    # x-claude-code-session-id, Codex's session-id...), forwarded to engines because
    # fleet routers read them (apis/hints.py lists them).
    harness_headers: dict[str, str] = Field(default_factory=dict)
    hints: AgentHints = Field(default_factory=AgentHints)
    # What kind of request this is when it is not an ordinary turn ("compaction").
    request_kind: str | None = None

    @property
    def affinity_key(self) -> str | None:
        """What the requests that should reach one engine worker share: the session,
        per agent (a subagent's prompts extend each other, not the main agent's), else
        the end user. Engine routers get it as `x-session-id`; tokenyard's own router
        keeps it for affinity."""
        if self.session_key:
            return f"{self.session_key}/{self.agent_id}" if self.agent_id else self.session_key
        return self.user

    def model_tools(self) -> list[ToolSpec]:
        """Every tool the model may call, under the names it sees: the offered tools,
        then those loaded by tool results and added by tool changes in the
        conversation (first one wins), less those a later change removed."""
        seen: dict[str, ToolSpec] = {}

        def offer(tool: ToolSpec, replace: bool = False) -> None:
            flat = tool.model_copy(update={"name": tool.model_name, "namespace": None})
            if replace:
                seen[tool.model_name] = flat
            else:
                seen.setdefault(tool.model_name, flat)

        for tool in self.tools:
            offer(tool)
        removed: set[str] = set()
        for message in self.messages:
            for part in message.parts:
                if isinstance(part, ToolResult):
                    for tool in part.loaded_tools:
                        offer(tool)
                elif isinstance(part, ToolChange) and part.action == "remove":
                    removed.add(part.tool_name)
                elif isinstance(part, ToolChange):
                    removed.discard(part.tool_name)
                    if part.tool is not None:
                        offer(part.tool, replace=True)  # a tool defined again is defined anew
        return [t for name, t in seen.items() if name not in removed]
