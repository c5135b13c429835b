"""The README's first run, measured: each launcher line against the default model.

For each launcher the README's `readme-launchers` line runs as a new user runs it
(fresh HOME, a fresh launcher cache but the converted default model, a free port):
the launcher starts `tokenyard serve` itself (the default model on the embedded CPU
engine, a cold prefix cache, `--prompt-log` added). Printed per
launcher: the first request's prompt size (tokens, tool count, `max_tokens`), its
time to first token (the server's own TTFT histogram, request arrival to first
output), the whole run's wall time and exit status, and the load average, since on
a shared machine that moves every figure.

Run: python benchmarks/first_turn.py [--launcher claude] [--full] [--timeout 900]
(`--full`: the launchers' full harness surface instead of their lean profile.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, free_port  # noqa: E402

TTFT_LINE = re.compile(r"^tokenyard_time_to_first_token_seconds_(sum|count)\{[^}]*\} ([0-9.e+-]+)$", re.M)


def readme_lines() -> dict[str, list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- readme-launchers:.*?-->\s*```bash\n(.*?)```", text, re.S)
    assert block, "README has no readme-launchers block"
    lines = [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]
    return {argv[1]: argv for argv in lines}


def ttft_totals(url: str) -> tuple[float, float]:
    """(sum, count) of the server's TTFT histogram over every API and model."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:  # noqa: S310 (loopback)
        text = response.read().decode()
    totals = {"sum": 0.0, "count": 0.0}
    for kind, value in TTFT_LINE.findall(text):
        totals[kind] += float(value)
    return totals["sum"], totals["count"]


def up(url: str) -> bool:
    try:
        urllib.request.urlopen(url + "/health", timeout=2)  # noqa: S310 (loopback)
        return True
    except OSError:
        return False


def measure(client: str, argv: list[str], *, full: bool, timeout: float, work: Path) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    prompts = work / f"{client}-prompts.jsonl"
    home = work / f"{client}-home"
    (home / "project").mkdir(parents=True)
    (home / "tmp").mkdir()
    launcher_cache = home / ".cache" / "tokenyard"
    (launcher_cache / "models").parent.mkdir(parents=True)
    # The models a user's earlier run converted (no conversion measured here).
    (launcher_cache / "models").symlink_to(Path(os.environ.get("TOKENYARD_CACHE") or default_cache()) / "models")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "TOKENYARD_CACHE": str(launcher_cache),
        "TOKENYARD_CLIENTS": str(default_cache() / "clients"),
        "OPENCLAW_OFFLINE": "1",
    }
    # The launcher starts the server itself, as the README's line does.
    launcher = [sys.executable, "-m", "tokenyard.cli", client, "--url", url, f"--serve-arg=--prompt-log={prompts}"]
    launcher += ["--full"] if full else []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    run = subprocess.Popen(
        [*launcher, *argv[2:]],
        cwd=home / "project",
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    ttft = None
    while run.poll() is None and time.monotonic() - started < timeout:
        if ttft is None and up(url):
            total, count = ttft_totals(url)
            if count:
                ttft = total / count
        time.sleep(0.5)
    timed_out = run.poll() is None
    if timed_out:
        # The launcher stops its server on SIGTERM; then the client goes.
        os.kill(run.pid, signal.SIGTERM)
        try:
            run.wait(timeout=90)
        finally:
            os.killpg(run.pid, signal.SIGKILL)
    out, err = run.communicate()
    wall = time.monotonic() - started
    records = [json.loads(line) for line in prompts.read_text().splitlines()] if prompts.exists() else []
    first = records[0] if records else {}
    request = first.get("request", {})
    return {
        "launcher": client,
        # What the launcher said it chose (a launcher without profiles says neither).
        "profile": next((k for k in ("lean", "full") if f"{k} profile" in err.decode(errors="replace")), None),
        "exit": None if timed_out else run.returncode,
        "wall_s": round(wall, 1),
        "requests": len(records),
        "first_prompt_tokens": first.get("prompt_tokens"),
        "first_tools": len(request.get("tools") or []),
        "first_max_tokens": request.get("max_tokens") or request.get("max_output_tokens"),
        "ttft_s": None if ttft is None else round(ttft, 1),
        "load_avg": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "answer": out.decode(errors="replace").strip()[-300:],
        "stderr_tail": err.decode(errors="replace").strip()[-300:],
    }


def default_cache() -> Path:
    return Path.home() / ".cache" / "tokenyard"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launcher", action="append", choices=["claude", "codex", "openclaw"])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--work", type=Path, help="keep the servers' logs and prompt logs here (default: a temporary folder)"
    )
    args = parser.parse_args()
    lines = readme_lines()
    with tempfile.TemporaryDirectory(prefix="first-turn-") as folder:
        work = args.work or Path(folder)
        work.mkdir(parents=True, exist_ok=True)
        for client in args.launcher or list(lines):
            result = measure(client, lines[client], full=args.full, timeout=args.timeout, work=work)
            print(json.dumps(result, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
