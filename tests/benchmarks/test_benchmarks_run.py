"""Benchmarks stay runnable: their quick modes run and print figures. No timing is
asserted here — speed targets live in the benchmarks' own output."""

import importlib.util
import pathlib
import re
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(autouse=True)
def fixtures_built():
    from ..fixtures import model_dir

    model_dir("qwen3")  # skips with the build command when fixtures are missing


def test_parsing_throughput_quick(capsys):
    assert load("parsing_throughput").main(["--quick", "--formats", "hermes,qwen3_coder,kimi_k2,harmony"]) == 0
    out = capsys.readouterr().out
    for fmt in ("hermes", "qwen3_coder", "kimi_k2", "harmony"):
        assert f"\n{fmt} " in out
    assert "slowest text-heavy" in out


def test_ttft_preamble_quick(capsys):
    pytest.importorskip("torch", reason="the real-engine half needs the embedded extra")
    assert load("ttft_preamble").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "kept / stripped" in out and "embedded CPU engine" in out and "plot:" in out


def test_ttft_reasoning_replay_quick(capsys):
    assert load("ttft_reasoning_replay").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "mutated / preserved" in out and "fully cached" in out


def test_dispatch_latency_quick(capsys):
    assert load("dispatch_latency").main(["--quick"]) == 0
    out = capsys.readouterr().out
    for api in ("anthropic", "chat", "responses"):
        assert f"  {api}" in out


@pytest.mark.parametrize("later", [[], ["--turns", "3"]], ids=["one message", "a later turn"])
def test_gateway_overhead_quick(capsys, later):
    assert load("gateway_overhead").main(["--quick", *later]) == 0
    out = capsys.readouterr().out
    assert "tokenyard" in out and "direct" in out and "bare hop" in out


@pytest.mark.parametrize("later", [[], ["--turns", "3"]], ids=["one message", "a later turn"])
def test_request_steps_quick(capsys, later):
    assert load("request_steps").main(["--rounds", "3", *later]) == 0
    out = capsys.readouterr().out
    for step in ("JSON + body → Conversation", "chat template", "tokenization", "start_generation"):
        assert f"  {step} " in out


def test_ttft_ab_quick(capsys):
    assert load("ttft_ab").main(["--rounds", "3", "src"]) == 0
    out = capsys.readouterr().out
    assert "shuffled rounds" in out and "direct" in out and "src" in out


def test_hop_relays_quick(capsys):
    assert load("hop_relays").main(["--rounds", "3"]) == 0
    out = capsys.readouterr().out
    for line in (
        "engine bursts the answer",
        "engine pauses 5 ms",
        "raw",
        "uvicorn",
        "starlette",
        "aiohttp",
        "bare hop",
    ):
        assert line in out


def test_loop_latency_quick(capsys):
    assert load("loop_latency").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "offload" in out and "on-loop" in out and "p99 on-loop / offload" in out


def test_kv_routing_quick(capsys):
    assert load("kv_routing").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "kv-aware / round-robin TTFT p50 = " in out
    for policy in ("round-robin", "least-loaded", "kv-aware"):
        assert f"\n{policy} " in out


def test_agentic_fleet_quick(capsys):
    assert load("agentic_fleet").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"kv-aware / round-robin TTFT p50 = \d+\.\d\dx", out)
    for policy in ("round-robin", "session-affinity", "kv-aware", "litellm-style"):
        assert f"\n{policy} " in out
    assert "prefill tokens kv-aware / litellm-style = " in out and "agentic_fleet.png" in out
    assert "(floor)" in out and "TTFT p50 above the floor: kv-aware " in out


def test_agent_session_quick(capsys):
    assert load("agent_session").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "tokenyard vs (a) LiteLLM-style: " in out and "+ speculative prefill" in out


def test_litellm_path_quick(capsys):
    assert load("litellm_path").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "prefilled per tool turn" in out and "\nqwen3 " in out


@pytest.mark.slow
def test_tool_accuracy_quick(capsys, tmp_path):
    """Three requests through SmolLM2 on each local path; the scores are not asserted
    (a 135M model rarely calls a tool), the table and the kept raw outputs are."""
    pytest.importorskip("torch", reason="the embedded path needs the embedded extra")
    paths = "embedded,tokenyard+llama.cpp,llama.cpp"
    argv = ["--quick", "--limit", "3", "--model", "smollm2", "--max-tokens", "24", "--paths", paths]
    module = load("tool_accuracy")
    assert module.main([*argv, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\nembedded " in out and "raw outputs:" in out
    assert len((tmp_path / "smollm2" / "embedded.jsonl").read_text().splitlines()) == 3
    if module.find_llama_server(None) is not None:  # scripts/install_llama_cpp.sh built it
        assert "schema-valid calls: tokenyard " in out and "/3 vs llama.cpp " in out
