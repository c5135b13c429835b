"""The README's launcher commands, run as written, complete a real tool round trip.

The lines come from the README block marked `readme-launchers`. Each runs in the
loopback-only namespace of a scripted `tokenyard serve` on the launchers' default
URL (127.0.0.1:8000), which the launcher finds and uses; the client's answer must
quote the output of the command the scripted model had it run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.e2e import harness
from tests.fixtures import model_dir

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
