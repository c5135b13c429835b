"""Tool calls as a GBNF grammar: how a forced `tool_choice` is guided on llama.cpp
(sans-IO).

llama.cpp constrains sampling with a GBNF grammar (its `grammar` request field); once
the grammar is complete it allows only end-of-generation tokens, so the turn ends
after the call(s). The grammar is the guide's call syntax (`CallGuide`: each tool's
opener, its arguments, the closer) with the arguments written out from the tool's
JSON Schema: objects with their properties (required ones first and always, the
others optional, in schema order), arrays of their items, strings, numbers,
integers, booleans, null, `enum`/`const` values, `anyOf`/`oneOf` and type lists.
What this does not spell out (`$ref`, `allOf`, `pattern`, lengths and bounds) is any
JSON value of the right kind: the pipeline validates the arguments whatever the
engine did.
"""

from __future__ import annotations

import json
from typing import Any

from .base import CallGuide

# JSON as llama.cpp's own grammars/json.gbnf writes it (whitespace bounded, so a
# model cannot pad forever).
JSON_RULES = r"""value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
boolean ::= "true" | "false"
null ::= "null"
ws ::= [ \t\n]{0,20}"""

_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean", "null": "null"}


def calls_grammar(guide: CallGuide, *, parallel: bool) -> str | None:
    """A grammar for one call (or, with `parallel`, one or more) of the guide's tools,
    starting at the output's first token; None when a tool's arguments are not JSON
    (xgrammar's other styles), which the pipeline then checks alone."""
    if any(tag.style != "json" for tag in guide.tags):
        return None
    builder = _Builder()
    tags = []
    for n, tag in enumerate(guide.tags):
        arguments = builder.rule(f"args{n}", tag.schema)
        tags.append(
            f"{literal(tag.begin)} {arguments} {literal(tag.end)}" if tag.end else f"{literal(tag.begin)} {arguments}"
        )
    call = " | ".join(f"( {t} )" for t in tags)
    root = "root ::= call ( ws call )*" if parallel else "root ::= call"
    return "\n".join([root, f"call ::= {call}", *builder.rules, JSON_RULES]) + "\n"


def literal(text: str) -> str:
    """`text` as a GBNF string literal (JSON's escapes are GBNF's)."""
    return json.dumps(text, ensure_ascii=False)


class _Builder:
    def __init__(self) -> None:
        self.rules: list[str] = []
        self._count = 0

    def rule(self, name: str, schema: Any) -> str:
        """A named rule for `schema`; returns its name."""
        self.rules.append(f"{name} ::= {self.expression(schema, name)}")
        return name

    def expression(self, schema: Any, name: str) -> str:
        if not isinstance(schema, dict):
            return "value"
        if "const" in schema:
            return literal(json.dumps(schema["const"], ensure_ascii=False))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return "( " + " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]) + " )"
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return "( " + " | ".join(self._sub(o, name) for o in options) + " )"
        kind = schema.get("type")
        if isinstance(kind, list) and kind:
            return "( " + " | ".join(self._sub({**schema, "type": k}, name) for k in kind) + " )"
        if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
            return self._object(schema, name)
        if kind == "array":
            item = self._sub(schema.get("items", {}), name) if isinstance(schema.get("items"), dict) else "value"
            return f'"[" ws ( {item} ( ws "," ws {item} )* )? ws "]"'
        return _TYPES.get(kind, "value") if isinstance(kind, str) else "value"

    def _sub(self, schema: Any, parent: str) -> str:
        self._count += 1
        return self.rule(f"{parent}-{self._count}", schema)

    def _object(self, schema: dict[str, Any], name: str) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            return "object"
        required = [k for k in properties if k in (schema.get("required") or [])]
        optional = [k for k in properties if k not in required]
        pairs = {
            k: f'{literal(json.dumps(k, ensure_ascii=False))} ws ":" ws {self._sub(v, name)}'
            for k, v in properties.items()
        }
        if required:
            body = ' ws "," ws '.join(pairs[k] for k in required)
            body += "".join(f' ( ws "," ws {pairs[k]} )?' for k in optional)
        else:
            # No property is required: any of them, in any order.
            anyone = "( " + " | ".join(pairs[k] for k in optional) + " )"
            body = f'( {anyone} ( ws "," ws {anyone} )* )?'
        return f'"{{" ws {body} ws "}}"'
