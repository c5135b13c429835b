"""Benchmarks stay runnable: their quick mode runs and prints figures. No timing
is asserted here."""

import importlib.util
import pathlib

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parsing_throughput_quick(capsys):
    bench = load("parsing_throughput")
    assert bench.main(["--quick", "--formats", "hermes,qwen3_coder,kimi_k2,harmony"]) == 0
    out = capsys.readouterr().out
    for fmt in ("hermes", "qwen3_coder", "kimi_k2", "harmony"):
        assert f"\n{fmt} " in out
    assert "slowest text-heavy" in out
