"""Chat templates with the semantics HF model templates are written for.

Templates render in a sandboxed jinja2 environment set up as transformers sets it
up (`trim_blocks`, `lstrip_blocks`, `loopcontrols`, its `tojson`, `raise_exception`,
`strftime_now`, the `{% generation %}` tag), so a model's own template yields the
prompt the model was trained on. `ChatTemplate` also reads the template's source to
report how it wants its inputs: whether it replays `reasoning_content`, whether
tool-call `arguments` must be a mapping or a string, and which thinking controls it
reads.

Sans-IO: rendering never reads the clock; a template that asks for the current
date gets the `now` the caller passed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.runtime
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..faults import TemplateError

# Template variables that switch thinking/reasoning behaviour, as the field names them.
THINKING_KWARGS = frozenset(
    {
        "enable_thinking",
        "thinking",
        "truncate_history_thinking",
        "reasoning_effort",
        "clear_thinking",
        "drop_thinking",
        "keep_reasoning",
        "preserve_thinking",
        "thinking_mode",
    }
)

# Uses of a value that only make sense if it is a mapping.
_MAPPING_FILTERS = frozenset({"items", "tojson", "dictsort"})
_MAPPING_METHODS = frozenset({"items", "keys", "values", "get"})


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


class ExactJson(dict[str, Any]):
    """Tool-call arguments as a mapping that remembers the exact JSON text the model
    wrote. Templates iterate it like any mapping, and `tojson` (with default
    formatting) gives back that exact text, so a replayed call is byte-identical to
    what the model generated (prefix stability)."""

    __slots__ = ("json_text",)

    def __init__(self, value: dict[str, Any], json_text: str):
        super().__init__(value)
        self.json_text = json_text


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    if isinstance(value, ExactJson) and indent is None and separators is None and not sort_keys and not ensure_ascii:
        return value.json_text
    # transformers' variant: jinja2's own tojson escapes HTML and sorts keys,
    # which no model was trained on.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _from_json(text: str) -> Any:
    # llama.cpp's template engine offers this and its copies of the DeepSeek
    # V3.2/V4 templates use it for string arguments.
    return json.loads(text)


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}…{% endgeneration %}` marks assistant text for training
    masks in transformers; for rendering it is transparent."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


# Every attribute a plain dict has: its class is built in and its instances have no
# `__dict__`, so no other name can be an attribute of one.
_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Sandbox(ImmutableSandboxedEnvironment):
    """jinja's immutable sandbox, making the same decisions faster for what a chat
    template reads most: a message or tool (a plain dict) by attribute, and string
    methods. The sandbox is the safety boundary for templates from the hub; nothing
    here widens it (tests/prompting/test_template.py compares both)."""

    # Bounded: only names `getattr` found on these built-in types.
    _safe: dict[tuple[type, str], bool] = {}

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            # What the stock path does after `getattr(obj, attribute)` raises, without the raise.
            try:
                return obj[attribute]
            except (TypeError, LookupError):
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        kind = type(obj)
        if kind not in _MEMO_TYPES:
            return bool(super().is_safe_attribute(obj, attr, value))
        # For an instance of one of these types the stock decision depends on the
        # type and the name alone (its internal-attribute and known-mutable checks read
        # nothing else; `value` is not read).
        safe = self._safe.get((kind, attr))
        if safe is None:
            safe = self._safe[kind, attr] = bool(super().is_safe_attribute(obj, attr, value))
        return safe


# Exact types only (a subclass may add attributes of its own): the plain values a
# template is given, and jinja's own loop and namespace objects, read on every turn.
_MEMO_TYPES = frozenset({str, dict, list, tuple, jinja2.runtime.LoopContext, jinja2.utils.Namespace})


_ENVIRONMENT = _Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols])
_ENVIRONMENT.filters["tojson"] = _tojson
_ENVIRONMENT.filters["from_json"] = _from_json
_ENVIRONMENT.globals["raise_exception"] = _raise_exception


@dataclass(frozen=True)
class TemplateTraits:
    """What a template's source says about the inputs it expects."""

    reads_reasoning_content: bool
    # "object": tool-call arguments are used as a mapping (items/tojson/indexing);
    # "string": concatenated as text; None: the template never renders them.
    arguments_as: Literal["object", "string"] | None
    # The template branches on `arguments is string`, so the exact original JSON
    # text can be passed through unchanged.
    accepts_string_arguments: bool
    reads_kwargs: frozenset[str]
    reads_current_time: bool
    # The template declares tools a message carries (`message.tools`, Kimi K3's
    # "New Tools Available" system message), where they appear.
    declares_message_tools: bool = False


class ChatTemplate:
    """A compiled chat template. Instances for the same source share one compilation."""

    def __init__(self, source: str, *, bos_token: str | None = None, eos_token: str | None = None):
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._template, self.traits = _compile(source)

    @property
    def reads_reasoning_content(self) -> bool:
        return self.traits.reads_reasoning_content

    @property
    def arguments_as(self) -> Literal["object", "string"] | None:
        return self.traits.arguments_as

    @property
    def reads_kwargs(self) -> frozenset[str]:
        return self.traits.reads_kwargs

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        *,
        now: datetime | None = None,
        **kwargs: Any,
    ) -> str:
        """Render OpenAI-chat-shaped `messages` and `tools`. `kwargs` become template
        variables (`enable_thinking`, `reasoning_effort`…); `now` is what the
        template's `strftime_now` formats."""

        def strftime_now(fmt: str) -> str:
            if now is None:
                raise jinja2.TemplateError("this template reads the current date; pass render(now=...)")
            return now.strftime(fmt)

        context = {
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **kwargs,
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": add_generation_prompt,
            "strftime_now": strftime_now,
        }
        try:
            return self._template.render(context)
        except jinja2.TemplateError as error:
            raise TemplateError(error.message or str(error)) from error
        except (TypeError, ValueError, LookupError) as error:
            # e.g. `'text' + arguments` given a mapping: the inputs do not fit this template.
            raise TemplateError(f"chat template failed: {type(error).__name__}: {error}") from error


@lru_cache(maxsize=64)
def _compile(source: str) -> tuple[jinja2.Template, TemplateTraits]:
    try:
        tree = _ENVIRONMENT.parse(source)
        template = _ENVIRONMENT.from_string(tree)
    except jinja2.TemplateError as error:
        raise TemplateError(f"chat template does not compile: {error}") from error
    # jinja chains the template's globals to the environment's (a ChainMap), and each
    # render copies them into a dict: a KeyError raised inside for every environment
    # global (7 a render). Ours are all set at import, so a plain dict reads the same.
    template.globals = dict(template.globals)
    return template, inspect_template(tree)


def inspect_template(tree: jinja2.nodes.Template) -> TemplateTraits:
    parents = _parent_map(tree)
    names_read = {n.name for n in tree.find_all(jinja2.nodes.Name) if n.ctx == "load"}
    reads_reasoning = any(
        isinstance(n, jinja2.nodes.Const) and n.value == "reasoning_content" for n in tree.find_all(jinja2.nodes.Const)
    ) or any(n.attr == "reasoning_content" for n in tree.find_all(jinja2.nodes.Getattr))
    arguments = _argument_expressions(tree)
    mapping_use = string_use = string_test = False
    for node in arguments:
        parent = parents.get(id(node))
        if isinstance(parent, jinja2.nodes.Filter) and parent.node is node and parent.name in _MAPPING_FILTERS:
            mapping_use = True
        elif isinstance(parent, jinja2.nodes.Getattr) and parent.attr in _MAPPING_METHODS:
            mapping_use = True
        elif isinstance(parent, jinja2.nodes.Getitem) and parent.node is node:
            mapping_use = True
        elif isinstance(parent, (jinja2.nodes.Add, jinja2.nodes.Concat, jinja2.nodes.Output)):
            string_use = True
        elif isinstance(parent, jinja2.nodes.Test) and parent.name == "string":
            string_test = True
    arguments_as: Literal["object", "string"] | None = "object" if mapping_use else "string" if string_use else None
    return TemplateTraits(
        reads_reasoning_content=reads_reasoning,
        arguments_as=arguments_as,
        accepts_string_arguments=arguments_as == "string" or string_test,
        reads_kwargs=frozenset(names_read & THINKING_KWARGS),
        reads_current_time="strftime_now" in names_read,
        declares_message_tools=_reads_message_tools(tree),
    )


def _reads_message_tools(tree: jinja2.nodes.Template) -> bool:
    """`message.tools`, `message['tools']` or `message.get('tools')` appears."""

    def is_message(node: jinja2.nodes.Node) -> bool:
        return isinstance(node, jinja2.nodes.Name) and node.name == "message"

    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem, jinja2.nodes.Call)):
        if isinstance(node, jinja2.nodes.Getattr) and node.attr == "tools" and is_message(node.node):
            return True
        if isinstance(node, jinja2.nodes.Getitem) and is_message(node.node):
            if isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == "tools":
                return True
        if (
            isinstance(node, jinja2.nodes.Call)
            and isinstance(node.node, jinja2.nodes.Getattr)
            and node.node.attr == "get"
            and is_message(node.node.node)
            and node.args
            and isinstance(node.args[0], jinja2.nodes.Const)
            and node.args[0].value == "tools"
        ):
            return True
    return False


def _parent_map(tree: jinja2.nodes.Node) -> dict[int, jinja2.nodes.Node]:
    parents: dict[int, jinja2.nodes.Node] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in node.iter_child_nodes():
            parents[id(child)] = node
            stack.append(child)
    return parents


def _is_arguments_access(node: jinja2.nodes.Node) -> bool:
    """`x.arguments`, `x['arguments']` or `x.get('arguments', ...)`."""
    if isinstance(node, jinja2.nodes.Getattr):
        return node.attr == "arguments"
    if isinstance(node, jinja2.nodes.Getitem):
        return isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == "arguments"
    if isinstance(node, jinja2.nodes.Call) and isinstance(node.node, jinja2.nodes.Getattr):
        return (
            node.node.attr == "get"
            and bool(node.args)
            and isinstance(node.args[0], jinja2.nodes.Const)
            and node.args[0].value == "arguments"
        )
    return False


def _argument_expressions(tree: jinja2.nodes.Template) -> list[jinja2.nodes.Node]:
    """Every expression that evaluates to a tool call's arguments: direct accesses
    (`tool_call.arguments`, `f['arguments']`) and reads of variables or macro
    parameters bound to them (`{% set args = f['arguments'] %}` … `args.items()`)."""
    aliases: set[str] = set()

    def yields_arguments(value: jinja2.nodes.Node) -> bool:
        while True:  # see through `args | from_json` and `args or {}`
            if isinstance(value, jinja2.nodes.Filter) and value.node is not None:
                value = value.node
            elif isinstance(value, jinja2.nodes.Or):
                value = value.left
            else:
                break
        return _is_arguments_access(value) or (isinstance(value, jinja2.nodes.Name) and value.name in aliases)

    macros = {m.name: m for m in tree.find_all(jinja2.nodes.Macro)}
    while True:  # aliases of aliases: repeat until nothing new is bound
        known = len(aliases)
        for assign in tree.find_all(jinja2.nodes.Assign):
            if isinstance(assign.target, jinja2.nodes.Name) and yields_arguments(assign.node):
                aliases.add(assign.target.name)
        for call in tree.find_all(jinja2.nodes.Call):
            macro = macros.get(call.node.name) if isinstance(call.node, jinja2.nodes.Name) else None
            if macro is not None:
                aliases.update(
                    param.name for param, arg in zip(macro.args, call.args, strict=False) if yields_arguments(arg)
                )
        if len(aliases) == known:
            break
    found: list[jinja2.nodes.Node] = [
        n
        for n in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem, jinja2.nodes.Call))
        if _is_arguments_access(n)
    ]
    found += [n for n in tree.find_all(jinja2.nodes.Name) if n.ctx == "load" and n.name in aliases]
    return found
