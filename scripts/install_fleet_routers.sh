#!/usr/bin/env bash
# Install the fleet routers tokenyard is tested in front of, each into its own venv
# outside the clone (their pins need not match tokenyard's), idempotently:
#   vllm-router (vLLM's router, a Rust binary in a wheel)  -> $CACHE/vllm-router-venv
#   ai-dynamo-runtime (Dynamo's KV indexer and selection services) -> $CACHE/dynamo-venv
# with CACHE=${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}. A second run only checks markers.
set -euo pipefail

CACHE=${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}

install() {
    local venv=$CACHE/$1 requirement=$2 check=$3
    local marker=$venv/.tokenyard-${requirement/==/-}
    if [[ -f $marker ]]; then
        echo "install_fleet_routers: $requirement already in $venv"
        return
    fi
    local started=$SECONDS
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "$requirement"
    "$venv/bin/python" -m "$check" --help >/dev/null
    touch "$marker"
    echo "install_fleet_routers: $requirement in $venv ($((SECONDS - started)) s, $(du -sh "$venv" | cut -f1))"
}

install vllm-router-venv vllm-router==0.1.17 vllm_router.launch_router
install dynamo-venv ai-dynamo-runtime==1.6.1 dynamo.indexer
