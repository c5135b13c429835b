"""Builds benchmarks/data/tool_accuracy.jsonl, the fixed case set of tool_accuracy.py:
BFCL cases taken from a checkout of the Berkeley Function Calling Leaderboard
(github.com/ShishirPatil/gorilla, Apache-2.0) plus cases written for tokenyard. Each
line is one OpenAI chat request (`messages`, `tools`) with `id`, `source`,
`category`, `expect` ("call" or "no_call") and, where known, `expected_names`.

    python benchmarks/tool_accuracy_cases.py GORILLA_CHECKOUT [--commit SHA]

BFCL's function docs are converted the way BFCL converts them for OpenAI-style
models (bfcl_eval/model_handler/utils.py `convert_to_tool`, constants/type_mappings.py
`GORILLA_TO_OPENAPI`): `dict`→object, `float`→number, `tuple`→array, `any`→string,
dots in names → underscores. From each category the shortest requests are taken (a
CPU decodes a 1.5B model at a few tokens a second), plus the shortest with non-ASCII
text, so unicode arguments are covered.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "tool_accuracy.jsonl"
BFCL_DATA = "berkeley-function-call-leaderboard/bfcl_eval/data"
# category -> (how many, what a right answer is)
BFCL_TAKE = {
    "simple_python": (30, "call"),
    "multiple": (22, "call"),
    "parallel": (25, "call"),
    "parallel_multiple": (18, "call"),
    "irrelevance": (25, "no_call"),
    "live_simple": (22, "call"),
    "live_multiple": (15, "call"),
    "live_parallel": (8, "call"),
    "live_parallel_multiple": (5, "call"),
    "live_irrelevance": (20, "no_call"),
    "live_relevance": (5, "call"),
}
NON_ASCII_EXTRA = {"live_simple": 4, "live_multiple": 3, "live_irrelevance": 3}
OPENAPI_TYPES = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object", "tuple": "array",
    "any": "string", "byte": "integer", "short": "integer", "long": "integer", "double": "number", "char": "string",
}  # fmt: skip
TOKENYARD_SOURCE = "tokenyard (written for this benchmark)"


def _schema(node: dict[str, Any]) -> dict[str, Any]:
    node = dict(node)
    node["type"] = OPENAPI_TYPES.get(node.get("type", "string"), "string")
    if "properties" in node:
        node["properties"] = {k: _schema(v) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _schema(node["items"])
    # BFCL marks optional parameters with a `default`; a `default` of the wrong type
    # is legal JSON Schema (annotations are not validated), so it stays.
    return node


def _tool(function: dict[str, Any]) -> dict[str, Any]:
    function = copy.deepcopy(function)
    parameters = _schema(function.get("parameters") or {"type": "object", "properties": {}})
    parameters["type"] = "object"
    return {
        "type": "function",
        "function": {
            "name": re.sub(r"\.", "_", function["name"]),
            "description": function.get("description", ""),
            "parameters": parameters,
        },
    }


def _expected_names(answer: dict[str, Any] | None) -> list[str] | None:
    if answer is None:
        return None
    return [re.sub(r"\.", "_", next(iter(call))) for call in answer["ground_truth"]]


def bfcl_cases(checkout: Path, commit: str) -> list[dict[str, Any]]:
    cases = []
    for category, (count, expect) in BFCL_TAKE.items():
        data = checkout / BFCL_DATA
        rows = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").read_text().splitlines() if line]
        answers_file = data / "possible_answer" / f"BFCL_v4_{category}.json"
        answers = (
            {a["id"]: a for a in map(json.loads, answers_file.read_text().splitlines()) if a}
            if answers_file.exists()
            else {}
        )
        rows = [r for r in rows if len(r["question"]) == 1]
        rows.sort(key=lambda r: (len(json.dumps(r["question"])) + len(json.dumps(r["function"])), r["id"]))
        chosen = rows[:count]
        non_ascii = [r for r in rows[count:] if not json.dumps(r["question"], ensure_ascii=False).isascii()]
        chosen += non_ascii[: NON_ASCII_EXTRA.get(category, 0)]
        for row in chosen:
            cases.append(
                {
                    "id": f"bfcl-{row['id']}",
                    "source": f"BFCL v4 (ShishirPatil/gorilla@{commit[:12]}, Apache-2.0) "
                    f"{BFCL_DATA}/BFCL_v4_{category}.json#{row['id']}",
                    "category": f"bfcl_{category}",
                    "messages": row["question"][0],
                    "tools": [_tool(f) for f in row["function"]],
                    "expect": expect,
                    "expected_names": _expected_names(answers.get(row["id"])) if expect == "call" else [],
                }
            )
    return cases


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


STR = {"type": "string"}
WEATHER = _fn("get_weather", "Current weather for a city.", {"city": STR, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"])  # fmt: skip
READ = _fn("read_file", "Read a text file.", {"path": STR}, ["path"])
SEARCH = _fn("search_files", "Find files whose name matches a glob pattern.", {"pattern": STR}, ["pattern"])
EVENT = _fn(
    "create_event",
    "Create a calendar event.",
    {
        "title": STR,
        "start": {"type": "string", "description": "ISO 8601 date-time"},
        "attendees": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": STR, "email": STR, "optional": {"type": "boolean"}},
                "required": ["name"],
            },
        },
        "reminder": {
            "type": "object",
            "properties": {
                "minutes_before": {"type": "integer", "minimum": 0},
                "method": {"type": "string", "enum": ["email", "popup"]},
            },  # fmt: skip
            "required": ["minutes_before"],
        },
    },
    ["title", "start"],
)
THERMOSTAT = _fn("set_thermostat", "Set the thermostat.", {"mode": {"type": "string", "enum": ["heat", "cool", "auto", "off"]}, "temperature": {"type": "number"}}, ["mode"])  # fmt: skip
SEND = _fn("send_message", "Send a chat message to a person.", {"to": STR, "text": STR}, ["to", "text"])
TRANSLATE = _fn("translate", "Translate text.", {"text": STR, "target_language": {"type": "string", "description": "ISO 639-1 code"}}, ["text", "target_language"])  # fmt: skip
TAGS = _fn("tag_issue", "Set the labels of an issue.", {"issue": {"type": "integer"}, "labels": {"type": "array", "items": STR, "minItems": 1}}, ["issue", "labels"])  # fmt: skip
TRANSFER = _fn("transfer", "Move money between accounts.", {"amount": {"type": "number", "exclusiveMinimum": 0}, "currency": {"type": "string", "enum": ["EUR", "USD", "JPY"]}, "from_account": STR, "to_account": STR}, ["amount", "currency", "from_account", "to_account"])  # fmt: skip
RUN = _fn("run_command", "Run a shell command.", {"command": STR, "timeout_seconds": {"type": "integer"}}, ["command"])


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _after_call(question: str, name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    """A conversation whose assistant turn called `name` and got `result` back."""
    call_id = f"call_{name}"
    return [
        {"role": "user", "content": question},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


# (id, category, messages, tools, expect, expected names)
OWN_CASES: list[tuple[str, str, list[dict[str, Any]], list[dict[str, Any]], str, list[str]]] = [
    (
        "nested-event",
        "nested",
        _user(
            "Book 'Sprint review' on 2026-03-02T10:00 with Ana (ana@example.com) and Bo, remind me 15 minutes before by popup."
        ),
        [EVENT],
        "call",
        ["create_event"],
    ),  # fmt: skip
    (
        "nested-event-optional",
        "nested",
        _user("Schedule 'Lunch' at 2026-05-01T12:30 with Kim, who is optional."),
        [EVENT, WEATHER],
        "call",
        ["create_event"],
    ),  # fmt: skip
    ("enum-thermostat", "enum", _user("Set the heating to 21.5 degrees."), [THERMOSTAT], "call", ["set_thermostat"]),
    (
        "enum-thermostat-off",
        "enum",
        _user("Turn the thermostat off."),
        [THERMOSTAT, WEATHER],
        "call",
        ["set_thermostat"],
    ),  # fmt: skip
    (
        "enum-weather-unit",
        "enum",
        _user("What's the weather in Oslo in fahrenheit?"),
        [WEATHER],
        "call",
        ["get_weather"],
    ),  # fmt: skip
    (
        "number-transfer",
        "number",
        _user("Transfer 1250.75 EUR from account A-1 to account B-2."),
        [TRANSFER],
        "call",
        ["transfer"],
    ),  # fmt: skip
    (
        "number-transfer-jpy",
        "number",
        _user("Send 3000 yen from savings to checking."),
        [TRANSFER],
        "call",
        ["transfer"],
    ),  # fmt: skip
    ("array-labels", "array", _user("Label issue 42 as bug, regression and p1."), [TAGS], "call", ["tag_issue"]),
    (
        "unicode-send",
        "unicode",
        _user("Envoie à José le message « Ça marche 👍, à demain ! »"),
        [SEND],
        "call",
        ["send_message"],
    ),  # fmt: skip
    ("unicode-translate", "unicode", _user("把“早上好，世界”翻译成日语。"), [TRANSLATE], "call", ["translate"]),
    ("unicode-weather", "unicode", _user("Wie ist das Wetter in München?"), [WEATHER], "call", ["get_weather"]),
    (
        "unicode-quotes",
        "unicode",
        _user('Send Zoë the text: he said "fine" \\ then left'),
        [SEND],
        "call",
        ["send_message"],
    ),  # fmt: skip
    (
        "parallel-weather",
        "parallel",
        _user("Weather in Paris and in Tokyo, please."),
        [WEATHER],
        "call",
        ["get_weather", "get_weather"],
    ),  # fmt: skip
    (
        "parallel-mixed",
        "parallel",
        _user("Read README.md and find all *.toml files."),
        [READ, SEARCH],
        "call",
        ["read_file", "search_files"],
    ),  # fmt: skip
    ("no-call-thanks", "no_call", _user("Thanks, that's all for today!"), [WEATHER, READ], "no_call", []),
    ("no-call-math", "no_call", _user("What is 7 times 6?"), [WEATHER, SEND], "no_call", []),
    ("no-call-explain", "no_call", _user("In one sentence, what is a thermostat?"), [THERMOSTAT], "no_call", []),
    ("no-call-poem", "no_call", _user("Write a two-line poem about rain."), [WEATHER], "no_call", []),
    (
        "turn2-weather-answer",
        "multi_turn",
        _after_call("Weather in Rome?", "get_weather", {"city": "Rome"}, '{"temperature": 24, "sky": "clear"}'),
        [WEATHER],
        "no_call",
        [],
    ),  # fmt: skip
    (
        "turn2-read-answer",
        "multi_turn",
        _after_call("What version is in VERSION?", "read_file", {"path": "VERSION"}, "2.4.1\n"),
        [READ],
        "no_call",
        [],
    ),  # fmt: skip
    (
        "turn2-search-then-read",
        "multi_turn",
        _after_call("Find the config file and read it.", "search_files", {"pattern": "*.cfg"}, '["setup.cfg"]'),
        [SEARCH, READ],
        "call",
        ["read_file"],
    ),  # fmt: skip
    (
        "turn2-run-answer",
        "multi_turn",
        _after_call("How many CPUs does this machine have?", "run_command", {"command": "nproc"}, "8\n"),
        [RUN],
        "no_call",
        [],
    ),  # fmt: skip
    (
        "turn2-run-failed-retry",
        "multi_turn",
        _after_call("List the files in /tmp.", "run_command", {"command": "lss /tmp"}, "bash: lss: command not found"),
        [RUN],
        "call",
        ["run_command"],
    ),  # fmt: skip
    (
        "turn2-unicode-result",
        "multi_turn",
        _after_call(
            "Translate 'good night' to Japanese.",
            "translate",
            {"text": "good night", "target_language": "ja"},
            '{"translation": "おやすみなさい"}',
        ),
        [TRANSLATE],
        "no_call",
        [],
    ),  # fmt: skip
    (
        "turn2-weather-then-message",
        "multi_turn",
        _after_call(
            "Check the weather in Lyon and text Marie what it is.",
            "get_weather",
            {"city": "Lyon"},
            '{"temperature": 9, "sky": "rain"}',
        ),
        [WEATHER, SEND],
        "call",
        ["send_message"],
    ),  # fmt: skip
]


def own_cases() -> list[dict[str, Any]]:
    return [
        {
            "id": f"ty-{case_id}",
            "source": TOKENYARD_SOURCE,
            "category": category,
            "messages": messages,
            "tools": tools,
            "expect": expect,
            "expected_names": names,
        }
        for case_id, category, messages, tools, expect, names in OWN_CASES
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gorilla", type=Path, help="a checkout of ShishirPatil/gorilla")
    parser.add_argument("--commit", required=True, help="the checkout's commit (named in each case's source)")
    args = parser.parse_args(argv)
    cases = bfcl_cases(args.gorilla, args.commit) + own_cases()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    print(f"{len(cases)} cases -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
