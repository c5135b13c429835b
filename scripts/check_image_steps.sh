#!/usr/bin/env bash
# Proves the container image's install steps where no container engine runs: the
# remote image's install (deploy/install.sh, exactly as the Dockerfile runs it) into
# a fresh venv, then that venv alone (no torch, nothing from this checkout on the
# path) serves a model and passes the image's own HEALTHCHECK command.
#   scripts/check_image_steps.sh [MODEL_DIR]   (default: the built qwen3 fixture)
# The embedded image's steps (torch==2.13.0 first, then the `embedded` extra) are the
# ones .ci/run installs its own venv with.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
model=${1:-${TOKENYARD_FIXTURES:-$repo/.fixtures}/models/qwen3}

for target in remote embedded; do
    grep -qx "RUN ./deploy/install.sh /opt/tokenyard /src $target" Dockerfile ||
        { echo "the Dockerfile no longer installs the $target image with deploy/install.sh" >&2; exit 1; }
done

work=$(mktemp -d)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

sh deploy/install.sh "$work/venv" "$repo" remote >"$work/install.log" 2>&1 ||
    { tail -20 "$work/install.log" >&2; exit 1; }
cd "$work"
unset PYTHONPATH
"$work/venv/bin/tokenyard" --help >/dev/null
"$work/venv/bin/tokenyard" serve --help >/dev/null
"$work/venv/bin/python" - <<'PY'
import importlib.util

assert importlib.util.find_spec("torch") is None, "the remote image must not carry torch"
import tokenyard
import tokenyard.engines.remote
import tokenyard.routing.pool
import tokenyard.server.app

assert "/venv/" in tokenyard.__file__, tokenyard.__file__
PY

# The image's entrypoint and settings (a scripted engine stands in for the remote one),
# with the sealing key from a secret file as the image reads it.
port=$("$work/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/seal-key"
TOKENYARD_CACHE="$work/cache" TOKENYARD_SEAL_KEY_FILE="$work/seal-key" TOKENYARD_HOST=127.0.0.1 \
    TOKENYARD_PORT="$port" "$work/venv/bin/tokenyard" serve --engine scripted --model "$model" \
    >"$work/serve.log" 2>&1 &
server=$!
# The HEALTHCHECK's own command, on this port.
healthcheck=$("$work/venv/bin/python" - "$repo/Dockerfile" "$port" <<'PY'
import json, re, shlex, sys

text = open(sys.argv[1]).read().replace("\\\n", " ")
command = json.loads(re.search(r"^HEALTHCHECK .*?CMD (\[.*\])$", text, re.M).group(1))
print(shlex.join(c.replace("127.0.0.1:8000", f"127.0.0.1:{sys.argv[2]}") for c in command))
PY
)
for _ in $(seq 120); do
    if PATH="$work/venv/bin:$PATH" bash -c "$healthcheck" 2>/dev/null; then
        echo "image steps: installed in a fresh venv (no torch), served, healthy"
        exit 0
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
done
echo "the server installed by the image's steps did not become healthy:" >&2
tail -20 "$work/serve.log" >&2
exit 1
