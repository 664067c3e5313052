"""The local tools the project runs besides Python: AWS CLI v2 and the Session Manager plugin.

SSM port forwards (``aws ssm start-session`` with ``AWS-StartPortForwardingSession``) need
both on PATH. Version 1 of the AWS CLI (for example the ``awscli`` package from PyPI) is
not enough: the Session Manager plugin and ``--document-name`` port forwarding are
documented for v2, so v1 is reported as such rather than accepted because ``aws`` exists.
Shared by ``python -m rigs doctor`` and the agent's check before it opens forwards.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

AWS_CLI_INSTALL = "https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html"
PLUGIN_INSTALL = ("https://docs.aws.amazon.com/systems-manager/latest/userguide/"
                  "session-manager-working-with-install-plugin.html")
VERSION_TIMEOUT_S = 15.0

_AWS_CLI_VERSION = re.compile(r"aws-cli/(\d+)\.(\d+)\.(\d+)")
_PLUGIN_VERSION = re.compile(r"\b(\d+\.\d+\.\d+(?:\.\d+)?)\b")


@dataclass(frozen=True, slots=True)
class ToolCheck:
    """One local tool: whether it is usable, its version, and what to do when it is not."""

    name: str
    ok: bool
    version: str | None = None
    path: str | None = None
    problem: str = ""
    fix: str = ""


def _version_output(path: str) -> tuple[str | None, str]:
    """(``<tool> --version`` output, why it could not be read)."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"`{path} --version` did not answer in {VERSION_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return None, f"`{path} --version` could not run ({exc.strerror or exc})"
    return (done.stdout + done.stderr).strip(), ""


def aws_cli(which: Callable[[str], str | None] = shutil.which) -> ToolCheck:
    """AWS CLI v2 on PATH."""
    name, fix = "AWS CLI v2", f"install AWS CLI v2: {AWS_CLI_INSTALL}"
    path = which("aws")
    if path is None:
        return ToolCheck(name, False, problem="`aws` is not on PATH; port forwards need it", fix=fix)
    text, problem = _version_output(path)
    if text is None:
        return ToolCheck(name, False, path=path, problem=problem, fix=fix)
    match = _AWS_CLI_VERSION.search(text)
    if match is None:
        return ToolCheck(name, False, path=path, problem=f"`aws --version` said {text[:80]!r}, not aws-cli/2.x",
                         fix=fix)
    version = ".".join(match.groups())
    if int(match.group(1)) < 2:
        return ToolCheck(name, False, version, path, problem=f"AWS CLI {version} (v1) at {path}; port forwards need v2",
                         fix=f"{fix} (first on PATH)")
    return ToolCheck(name, True, version, path)


def session_manager_plugin(which: Callable[[str], str | None] = shutil.which) -> ToolCheck:
    """The Session Manager plugin on PATH (``aws ssm start-session`` runs it)."""
    name, fix = "Session Manager plugin", f"install the Session Manager plugin: {PLUGIN_INSTALL}"
    path = which("session-manager-plugin")
    if path is None:
        return ToolCheck(name, False, problem="`session-manager-plugin` is not on PATH; port forwards need it",
                         fix=fix)
    text, problem = _version_output(path)
    if text is None:
        return ToolCheck(name, False, path=path, problem=problem, fix=fix)
    match = _PLUGIN_VERSION.search(text)
    return ToolCheck(name, True, match.group(1) if match else None, path)


def ssm_tools(which: Callable[[str], str | None] = shutil.which) -> list[ToolCheck]:
    """Both tools an SSM port forward needs, in the order to install them."""
    return [aws_cli(which), session_manager_plugin(which)]
