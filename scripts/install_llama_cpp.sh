#!/usr/bin/env bash
# Provide `llama-server` (CPU build) for `tokenyard serve --engine llama.cpp` and
# tests/integration/test_llama_cpp.py, idempotently. Prints the binary's path as its
# last line.
#
# 1. A `llama-server` on PATH whose build number is at least MIN_BUILD is used as is.
# 2. Else a finished build in ${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}/llama.cpp is
#    reused (seconds).
# 3. Else llama.cpp is built from the tree that the llama-cpp-python sdist on PyPI
#    vendors (pinned version, sha256-checked by pip), target llama-server only, CPU
#    only, static, no web UI: about 11 minutes of CPU on a 2-core machine. It builds in
#    a staging directory and is renamed into place, so an interrupted run leaves no
#    half-built binary behind.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_PYTHON_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# The llama.cpp commit that sdist vendors (its CHANGELOG) and that commit's build number
# (`git rev-list --count`), so the binary's --version reports what upstream's would.
LLAMA_CPP_COMMIT=0c1e57098
LLAMA_CPP_BUILD=11312
# A llama-server on PATH must be at least the build tokenyard is tested against.
MIN_BUILD=$LLAMA_CPP_BUILD
JOBS=${LLAMA_CPP_JOBS:-2}

CACHE=${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}
DEST=$CACHE/llama.cpp
BINARY=$DEST/bin/llama-server
MARKER=$DEST/.tokenyard-llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION

log() { echo "install_llama_cpp: $*" >&2; }

build_number() { # N of "version: X (build N, commit C)" or of the older "version: N (C)"
    "$1" --version 2>&1 | sed -n -e 's/.*(build \([0-9][0-9]*\).*/\1/p' -e 's/^version: \([0-9][0-9]*\) .*/\1/p' | head -n1
}

if on_path=$(command -v llama-server); then
    found=$(build_number "$on_path")
    if [[ -n $found && $found -ge $MIN_BUILD ]]; then
        log "using $on_path (build $found >= $MIN_BUILD)"
        echo "$on_path"
        exit 0
    fi
    log "ignoring $on_path (build ${found:-unknown} < $MIN_BUILD)"
fi

if [[ -f $MARKER && -x $BINARY ]]; then
    log "llama-server from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION already built"
    echo "$BINARY"
    exit 0
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v ninja >/dev/null || missing+=(ninja-build)
if ((${#missing[@]})); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        log "installing ${missing[*]}"
        apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    command -v cmake >/dev/null && command -v g++ >/dev/null ||
        { log "cmake and a C++ compiler are needed to build llama-server"; exit 1; }
fi
generator=("-G" "Unix Makefiles")
command -v ninja >/dev/null && generator=("-G" "Ninja")

started=$SECONDS
downloads=$CACHE/downloads
mkdir -p "$downloads"
requirement=$(mktemp)
trap 'rm -f "$requirement"' EXIT
echo "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION --hash=sha256:$LLAMA_CPP_PYTHON_SHA256" >"$requirement"
log "downloading the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist"
python3 -m pip download --quiet --no-deps --no-binary :all: --require-hashes \
    --dest "$downloads" -r "$requirement"
sdist=$downloads/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
echo "$LLAMA_CPP_PYTHON_SHA256  $sdist" | sha256sum --check --quiet

staging=$CACHE/llama.cpp.staging
rm -rf "$staging"
mkdir -p "$staging/out/bin"
tar -xzf "$sdist" -C "$staging" "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
source=$staging/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp

log "building llama-server (CPU, -j$JOBS)"
nice cmake -S "$source" -B "$staging/build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_NUMBER="$LLAMA_CPP_BUILD" -DLLAMA_BUILD_COMMIT="$LLAMA_CPP_COMMIT" \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_CCACHE=OFF >"$staging/configure.log"
nice cmake --build "$staging/build" --target llama-server -j "$JOBS" >"$staging/build.log"

cp "$staging/build/bin/llama-server" "$staging/out/bin/"
"$staging/out/bin/llama-server" --version >&2
touch "$staging/out/.tokenyard-llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION"
rm -rf "$DEST"
mv "$staging/out" "$DEST"
rm -rf "$staging"
log "built in $((SECONDS - started))s"
echo "$BINARY"
