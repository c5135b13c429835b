"""Drive a full-screen client in a pseudo-terminal, then report what it left running.

`python tui_session.py MARKER EXPECTED PROMPT -- argv…` starts argv on a pty
(200x50), answers a folder-trust prompt, waits for the client's input prompt, sends
PROMPT, waits until EXPECTED is on the screen (a whole turn ran), quits it with
Ctrl-C (twice, as a TUI asks to confirm), waits for it to exit, and prints one JSON
line: the exit code, whether the prompt was reached and EXPECTED seen, and the
command lines of processes still running whose command line contains MARKER (they
are killed afterwards, so a failing run leaves nothing behind either).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

READY = ("Ask Codex", "for shortcuts")
TRUST = "Trust and continue"


def leftovers(marker: str) -> dict[int, str]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if marker in cmdline and "tui_session.py" not in cmdline:
            found[int(entry)] = cmdline
    return found


def main() -> None:
    marker, expected, prompt = sys.argv[1:4]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    screen, ready, trusted, answered = "", False, False, False
    deadline = time.monotonic() + float(os.environ.get("TUI_TIMEOUT", "240"))
    submit_at = quit_at = None
    while time.monotonic() < deadline and process.poll() is None:
        if select.select([master], [], [], 0.5)[0]:
            try:
                screen = (screen + os.read(master, 65536).decode(errors="replace"))[-20000:]
            except OSError:
                break
        now = time.monotonic()
        if not trusted and TRUST in screen:
            os.write(master, b"\r")
            trusted, screen = True, ""
        elif not ready and any(r in screen for r in READY):
            ready, screen = True, ""
            os.write(master, prompt.encode())
            submit_at = now + 1  # typed text then Enter at once reads as a paste
        elif submit_at is not None and now > submit_at:
            os.write(master, b"\r")  # again every 10 s until the turn shows
            submit_at = now + 10
        if not answered and expected in screen:
            answered, submit_at, quit_at = True, None, now + 3
        if quit_at is not None and now > quit_at:
            os.write(master, b"\x03")
            time.sleep(1)
            os.write(master, b"\x03")
            quit_at = now + 10
    try:
        code = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        code = process.wait()
    time.sleep(2)
    left = leftovers(marker)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    report = {"returncode": code, "ready": ready, "answered": answered, "left": sorted(left.values())}
    print(json.dumps({**report, "screen": screen[-2000:]}))


if __name__ == "__main__":
    main()
