"""scripts/build_fixtures.py: pinned inputs, rank -> merge recovery, idempotence."""

from __future__ import annotations

import importlib.util
import re
import sys
import time

import pytest

from tests.fixtures import REPO_ROOT, fixtures_root, model_dir


@pytest.fixture(scope="module")
def builder():
    spec = importlib.util.spec_from_file_location("build_fixtures", REPO_ROOT / "scripts" / "build_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_every_artifact_is_pinned_by_version_and_sha256(builder):
    for artifact in builder.ARTIFACTS.values():
        assert re.fullmatch(r"[0-9a-f]{64}", artifact.sha256)
        assert artifact.version in artifact.filename and artifact.url.endswith("/" + artifact.filename)


def test_merges_are_recovered_from_tiktoken_ranks(builder):
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4, b"abc": 5, b"cab": 6}
    # 'abc' is built from 'ab' (rank 3, lower than 'bc'), 'cab' from 'c' + 'ab'.
    assert builder.merges_from_ranks(ranks) == [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"c", b"ab")]


def test_a_second_run_with_everything_built_does_nothing(builder, capsys):
    model_dir("qwen3")  # skips unless the fixtures were built
    before = {p: p.stat().st_mtime_ns for p in (fixtures_root() / "models").rglob("*")}
    started = time.monotonic()
    assert builder.main([]) == 0
    assert time.monotonic() - started < 2
    assert "up to date" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in (fixtures_root() / "models").rglob("*")} == before
