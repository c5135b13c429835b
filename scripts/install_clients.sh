#!/usr/bin/env bash
# Install the real harness clients that tests/e2e drives, idempotently, into a cache
# outside the clone: ${TOKENYARD_CLIENTS:-$HOME/.cache/tokenyard/clients}.
#
# Claude Code's npm package declares engines.node >= 22. npm resolves version
# *ranges* to the newest release whose engines match the running Node, so on Node 20
# `@anthropic-ai/claude-code@^2.1` silently becomes 2.1.197. An exact pin is installed
# as asked (npm only warns EBADENGINE), and the `claude` it installs is a native
# executable that never runs Node, so no newer Node is needed.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.330
CLIENTS=${TOKENYARD_CLIENTS:-$HOME/.cache/tokenyard/clients}
CLAUDE_PREFIX=$CLIENTS/claude-code-$CLAUDE_CODE_VERSION
CLAUDE_BIN=$CLIENTS/bin/claude

# Loopback-only namespaces need unshare (util-linux) and ip (iproute2); the smoke
# test traces connect() calls with strace.
install_debian_tools() {
    local missing=()
    command -v unshare >/dev/null || missing+=(util-linux)
    command -v nsenter >/dev/null || missing+=(util-linux)
    command -v ip >/dev/null || missing+=(iproute2)
    command -v strace >/dev/null || missing+=(strace)
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

install_debian_tools
if ! claude_is_installed; then
    install_claude_code
    claude_is_installed || { echo "install_clients: $CLAUDE_BIN is not Claude Code $CLAUDE_CODE_VERSION" >&2; exit 1; }
fi
echo "claude: $CLAUDE_BIN ($("$CLAUDE_BIN" --version))"
