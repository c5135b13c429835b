#!/bin/sh
# The install steps of the container image (Dockerfile), in one place: the image runs
# this, and CI runs it into a temporary venv (scripts/check_image_steps.sh).
#   deploy/install.sh VENV SOURCE remote|embedded
# remote: tokenyard without torch (a remote engine does the model's work);
# embedded: plus the CPU build of torch and the `embedded` extra. TORCH_INDEX_URL is
# where that torch comes from (the image: PyTorch's CPU index, because PyPI's torch
# is the CUDA build; empty: pip's configured index).
set -eu
venv=$1
source=$2
target=$3
case $target in
remote | embedded) ;;
*)
    echo "install.sh: target must be remote or embedded, not '$target'" >&2
    exit 2
    ;;
esac
python3 -m venv "$venv"
pip="$venv/bin/pip"
if [ "$target" = embedded ]; then
    # torch first: anything that pulls an unpinned torch would bring GBs of CUDA.
    "$pip" install --no-cache-dir ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} torch==2.13.0
    "$pip" install --no-cache-dir "$source[embedded]"
else
    "$pip" install --no-cache-dir "$source"
fi
