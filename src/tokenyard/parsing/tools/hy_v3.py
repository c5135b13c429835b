"""Tencent Hunyuan HY3 (`hy_v3`; SGLang's `hunyuan`): the `arg_key`/`arg_value`
shape of glm45.py inside a `<tool_calls>` section, the name ended by `<tool_sep>`:

    <tool_calls>
    <tool_call>get_weather<tool_sep>
    <arg_key>city</arg_key>
    <arg_value>Tokyo</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call>
    </tool_calls>

Every tag is a special token that a checkpoint may spell with a suffix: the
public HY3 template writes `<tool_calls:opensource>`, `<tool_call:opensource>`...
(`HYTK`), the preview tokenizer none. Both spellings are read; a region keeps the
spelling it began with. Non-string values are JSON, strings bare (its template).
"""

from __future__ import annotations

from .glm45 import KeyValueSyntax, KeyValueToolParser

# The suffixes of Hunyuan's special tokens the public checkpoints use.
HUNYUAN_SUFFIXES = ("", ":opensource")


def hunyuan_syntax(suffix: str, *, tool_sep: bool) -> KeyValueSyntax:
    def tags(name: str) -> tuple[str, str]:
        return f"<{name}{suffix}>", f"</{name}{suffix}>"

    return KeyValueSyntax(
        tags("tool_call"),
        tags("arg_key"),
        tags("arg_value"),
        name_ends=(f"<tool_sep{suffix}>",) if tool_sep else (),
        section=tags("tool_calls"),
    )


class HyV3ToolParser(KeyValueToolParser):
    name = "hy_v3"
    aliases = ("hunyuan",)
    syntaxes = tuple(hunyuan_syntax(suffix, tool_sep=True) for suffix in HUNYUAN_SUFFIXES)
    # Only the section's opening ends reasoning the model never closed.
    reasoning_exit_markers = tuple(s.section[0] for s in syntaxes)
