"""The `tokenyard` command."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from .conversation import ToolSpec
from .events import event_to_dict, merge_adjacent
from .parsing.reasoning.parser import reasoning_parser_names
from .parsing.registry import UnknownParserError, tool_parser_names
from .parsing.splitter import OutputSplitter


def load_tool_specs(data: Any) -> list[ToolSpec]:
    """Tools as any of the three APIs write them: OpenAI chat
    (`{"type": "function", "function": {...}}`), Anthropic (`input_schema`), or
    flat (`{"name", "parameters"}`)."""
    items = data.get("tools", data) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("tools must be a JSON list")
    specs = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"a tool must be an object, got {item!r}")
        body = item.get("function", item) if isinstance(item.get("function"), dict) else item
        if "name" not in body:
            raise ValueError(f"a tool needs a name: {item!r}")
        parameters = body.get("parameters") or body.get("input_schema") or {"type": "object", "properties": {}}
        specs.append(ToolSpec(name=body["name"], description=body.get("description") or "", parameters=parameters))
    return specs


def run_parse(args: argparse.Namespace) -> int:
    if args.list:
        print("reasoning parsers:", ", ".join(reasoning_parser_names()))
        print("tool-call parsers:", ", ".join(tool_parser_names()))
        return 0
    tools = None
    if args.tools:
        with open(args.tools, encoding="utf-8") as handle:
            tools = load_tool_specs(json.load(handle))
    splitter = OutputSplitter(
        args.reasoning_parser,
        args.tool_call_parser,
        tools=tools,
        thinking_enabled=not args.thinking_off,
        prompt_opened_reasoning=args.prompt_opened_reasoning,
    )
    raw = sys.stdin.read()
    size = args.chunk_size if args.chunk_size > 0 else max(len(raw), 1)
    events: list = []
    for start in range(0, len(raw), size):
        events.extend(splitter.feed(raw[start : start + size]))
    events.extend(splitter.finish())
    if args.merge:
        events = merge_adjacent(events)
    out = sys.stdout
    for event in events:
        out.write(json.dumps(event_to_dict(event), ensure_ascii=False) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenyard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    parse = commands.add_parser(
        "parse",
        help="split a model's raw output (stdin) into reasoning/text/tool-call events (JSON lines)",
        description="Feed a model's raw output on stdin through a reasoning parser and a "
        "tool-call parser, exactly as the server does, and print the events as JSON lines.",
    )
    parse.add_argument("--reasoning-parser", metavar="NAME", help="e.g. qwen3, deepseek_r1, kimi_k25, gpt_oss")
    parse.add_argument("--tool-call-parser", metavar="NAME", help="e.g. hermes, qwen3_coder, kimi_k2, harmony")
    parse.add_argument("--tools", metavar="FILE", help="JSON list of tools (OpenAI, Anthropic or flat shape)")
    parse.add_argument("--chunk-size", type=int, default=0, metavar="N", help="feed N characters at a time (default: all at once)")
    parse.add_argument("--merge", action="store_true", help="coalesce adjacent deltas of one kind")
    parse.add_argument("--thinking-off", action="store_true", help="the request turned thinking off")
    parse.add_argument(
        "--prompt-opened-reasoning", action="store_true", help="the rendered prompt already ends inside <think>"
    )
    parse.add_argument("--list", action="store_true", help="list the known parser names and exit")
    parse.set_defaults(run=run_parse)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (UnknownParserError, ValueError, OSError) as error:
        print(f"tokenyard {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
