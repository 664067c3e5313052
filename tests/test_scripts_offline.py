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


def node_reporting(directory: Path, version: str) -> dict[str, str]:
    """An environment whose ``node`` reports ``version`` as its own and is the real Node for the rest."""
    real = shutil.which("node")
    assert real is not None
    directory.mkdir(parents=True)
    fake = directory / "node"
    fake.write_text(f'#!/bin/sh\ncase "$2" in\n  process.versions.node) echo {version} ;;\n  *) exec {real} "$@" ;;\n'
                    "esac\n", encoding="utf-8")
    fake.chmod(0o755)
    return {"PATH": f"{directory}:{os.environ['PATH']}"}


def check_node(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(PROJECT_DIR / "scripts" / "check-node")], capture_output=True, text=True, env=env,
                          timeout=60)


def test_setup_refuses_a_node_older_than_the_cli_and_jsii_support(tmp_path: Path) -> None:
    done = check_node(node_reporting(tmp_path / "bin", "18.20.4"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("setup: Node.js 18.20.4 is too old: the pinned CDK CLI needs node >= 18.0.0 and jsii Node 20 "
                           "or later; install Node.js 22 or later and rerun\n")


def test_setup_takes_node_20_and_says_what_updating_the_cli_will_need(tmp_path: Path) -> None:
    done = check_node(node_reporting(tmp_path / "bin", "20.20.2"))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == ("setup: Node.js 20.20.2 runs the pinned CDK CLI (node >= 18.0.0); Node 22 or later will be "
                           "needed to update it (its AWS SDK requires node >=22 after January 2027)\n")
    newer = check_node(node_reporting(tmp_path / "bin22", "22.11.0"))
    assert (newer.returncode, newer.stdout, newer.stderr) == (0, "", "")


def test_setup_without_node_says_what_to_install(tmp_path: Path) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "dirname"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    done = check_node({"PATH": str(tools)})
    assert done.returncode == 1
    assert done.stderr == ("setup: Node.js 20 or later is needed for the CDK CLI and is not installed: install "
                           "Node.js 22 (https://nodejs.org/en/download) and rerun\n")


@pytest.mark.parametrize("script", ["cdk", "env.sh", "check-node", "setup", "test"])
def test_wrapper_scripts_are_shellcheck_clean(script: str) -> None:
    result = subprocess.run([str(SHELLCHECK), "-x", "--severity=style", f"scripts/{script}"],
                            capture_output=True, text=True, cwd=PROJECT_DIR)
    assert result.returncode == 0, result.stdout
