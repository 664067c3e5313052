"""The local tools: AWS CLI v2 and the Session Manager plugin. The agent's SSM port forwards need both; a deploy
does not, so a problem there is a warning. Not an AWS check: the runner runs it while the identity call waits on
the network."""

from __future__ import annotations

from typing import Callable

from rigs import local_tools
from rigs.account.checks.base import OK, WARN, Finding

LOCAL_CHECKS = ("AWS CLI v2", "Session Manager plugin")


def check_local_tools(which: Callable[[str], str | None] | None = None) -> list[Finding]:
    """AWS CLI v2 and the Session Manager plugin: warnings, since only the agent's port forwards need them."""
    tools = local_tools.ssm_tools(which) if which else local_tools.ssm_tools()
    findings = []
    for tool in tools:
        if tool.ok:
            findings.append(Finding(tool.name, "", None, OK, tool.version or "installed"))
        else:
            findings.append(Finding(tool.name, "", None, WARN, tool.problem, tool.fix))
    return findings
