"""Running ``python -m rigs rehearse`` as a user does, for the offline rehearsal's end-to-end tests.

Each scenario has a file of its own (``test_rehearse_*.py``), so that pytest-xdist can run them at the
same time on different workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.agent.conftest import descendants
from tests.conftest import PROJECT_DIR


def environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(COLUMNS="160", CI="true", HOME=str(home))
    return env


def rehearse(args: list[str], tmp_path: Path, interrupt_when: Path | None = None) -> tuple[int, str, set[int]]:
    """Run the command; return its exit status, its output, and every process it started along the way."""
    log = tmp_path / "rehearse.out"
    seen: set[int] = set()
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "rigs", "rehearse", *args], cwd=PROJECT_DIR,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   env=environment(tmp_path))
        interrupted = False
        while process.poll() is None:
            seen |= descendants(process.pid)
            if interrupt_when is not None and not interrupted and interrupt_when.exists() and \
                    interrupt_when.read_text().strip():
                process.send_signal(signal.SIGINT)
                interrupted = True
            time.sleep(0.5)
    text = log.read_text()
    print(text[-6000:])
    return process.returncode, text, seen


def timeline_of(evidence: Path) -> dict:
    return json.loads((evidence / "timeline.json").read_text())
