"""Stand-ins for local command-line tools: real executables that print what a version of the tool prints."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Callable

AWS_CLI_V2 = "aws-cli/2.22.35 Python/3.12.6 Linux/6.8.0 exe/x86_64.ubuntu.24"
AWS_CLI_V1 = "aws-cli/1.45.11 Python/3.11.7 Linux/6.8.0 botocore/1.43.11"
PLUGIN = "1.2.694.0"
PROJECT = Path(__file__).resolve().parents[1]


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


SSM_SESSION_AWS = textwrap.dedent("""\
    import asyncio, sys
    sys.path.insert(0, {project!r})
    from agent.reach import relay

    if sys.argv[1:] == ["--version"]:
        print({version!r})
        sys.exit(0)
    command, options = sys.argv[1:3], sys.argv[3:]
    args = dict(zip(options[::2], options[1::2]))
    assert command == ["ssm", "start-session"] and args["--document-name"] == "AWS-StartPortForwardingSession"
    ports = dict(item.split("=") for item in args["--parameters"].split(","))
    local, session = ports["localPortNumber"], "fake-" + args["--target"]
    print(f"\\nStarting session with SessionId: {{session}}", flush=True)
    try:
        sock = relay.listen(("127.0.0.1", int(local)))
    except OSError as exc:
        print(f"Cannot perform start session: listen tcp 127.0.0.1:{{local}}: bind: "
              f"{{(exc.strerror or str(exc)).lower()}}", flush=True)
        sys.exit(0)
    print(f"Port {{local}} opened for sessionId {{session}}.", end="", flush=True)
    print("\\nWaiting for connections...", flush=True)
    asyncio.run(relay.serve(sock, ("127.0.0.1", int(ports["portNumber"]))))
""")


def ssm_session_aws(directory: Path) -> Path:
    """A fake ``aws`` whose ``ssm start-session`` port forward prints what the AWS CLI and plugin print.

    The lines and their order follow github.com/aws/session-manager-plugin
    (``session/session.go``: ``Starting session with SessionId``;
    ``session/portsession/muxportforwarding.go``: ``Port P opened for sessionId S.`` then
    ``Waiting for connections...`` once the local port is bound; a bind failure ends the session,
    printed as ``Cannot perform start session: listen tcp ...: bind: address already in use`` by
    ``session/session.go``, and the plugin's ``main`` then returns: status 0). The "instance" is this machine:
    the forward relays to ``127.0.0.1:portNumber``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "aws"
    script = SSM_SESSION_AWS.format(project=str(PROJECT), version=AWS_CLI_V2)
    path.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
    path.chmod(0o755)
    return path
