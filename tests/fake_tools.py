"""Stand-ins for local command-line tools: real executables that print what a version of the tool prints."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

AWS_CLI_V2 = "aws-cli/2.22.35 Python/3.12.6 Linux/6.8.0 exe/x86_64.ubuntu.24"
AWS_CLI_V1 = "aws-cli/1.45.11 Python/3.11.7 Linux/6.8.0 botocore/1.43.11"
PLUGIN = "1.2.694.0"


def fake_tool(directory: Path, name: str, output: str, status: int = 0) -> Path:
    """An executable ``directory/name`` that prints ``output`` and exits with ``status``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{output}'\nexit {status}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def tools(directory: Path, aws: str | None = AWS_CLI_V2, plugin: str | None = PLUGIN) -> Callable[[str], str | None]:
    """A ``which`` that finds fake ``aws`` and ``session-manager-plugin`` (None leaves one out)."""
    found = {}
    if aws is not None:
        found["aws"] = str(fake_tool(directory, "aws", aws))
    if plugin is not None:
        found["session-manager-plugin"] = str(fake_tool(directory, "session-manager-plugin", plugin))
    return found.get
