"""The project's CLI wrappers reach nothing but loopback: npm's update notifier is off for ``npx cdk`` and ``./scripts/cdk``.

npm (and npx) ask the registry for the newest npm once a week unless ``update-notifier``
is off or the environment looks like CI (npm's ``lib/cli/update-notifier.js``). The
registry here is a loopback socket that counts connections; a control run with the
notifier forced on shows the socket does see npm's request.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

SHELLCHECK = PROJECT_DIR / ".venv" / "bin" / "shellcheck"


class CountingRegistry:
    """A TCP listener on loopback that accepts, counts and drops every connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def registry():
    counting = CountingRegistry()
    yield counting
    counting.close()


def fresh_npm_env(tmp_path: Path, registry: CountingRegistry, **extra: str) -> dict[str, str]:
    """A machine that never ran npm (no update-check stamp), with no CI variables, the registry on loopback."""
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "npm_config_cache": str(tmp_path / "cache"),
            "npm_config_registry": registry.url, "AWS_EC2_METADATA_DISABLED": "true", **extra}


def test_npx_cdk_in_the_project_never_asks_the_registry(tmp_path: Path, registry: CountingRegistry) -> None:
    npx = shutil.which("npx")
    assert npx is not None
    control = subprocess.run([npx, "--no-install", "cdk", "--version"], cwd=PROJECT_DIR, capture_output=True,
                             text=True, timeout=180,
                             env=fresh_npm_env(tmp_path / "control", registry, npm_config_update_notifier="true"))
    assert control.returncode == 0, control.stderr
    assert registry.connections > 0  # the notifier, forced on, is seen
    registry.connections = 0
    done = subprocess.run([npx, "--no-install", "cdk", "--version"], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=180, env=fresh_npm_env(tmp_path / "project", registry))
    assert done.returncode == 0, done.stderr
    assert registry.connections == 0  # the project's .npmrc turns it off


def test_scripts_cdk_never_asks_the_registry(tmp_path: Path, registry: CountingRegistry) -> None:
    done = subprocess.run([str(PROJECT_DIR / "scripts" / "cdk"), "--version"], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=180, env=fresh_npm_env(tmp_path, registry))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0].count(".") == 2  # the pinned CLI's version
    assert registry.connections == 0


@pytest.mark.parametrize("script", ["cdk", "env.sh"])
def test_wrapper_scripts_are_shellcheck_clean(script: str) -> None:
    result = subprocess.run([str(SHELLCHECK), "-x", "--severity=style", f"scripts/{script}"],
                            capture_output=True, text=True, cwd=PROJECT_DIR)
    assert result.returncode == 0, result.stdout
