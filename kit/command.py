"""The command kit every command of the project uses: its exit codes, its usage error, its one-line parser and the
the outcome a command ends with (its exit code and the line that says why).

The commands: ``python -m rigs``, ``python -m agent.run``, ``python -m agent.report``, ``python -m agent.quality``,
``python -m rigs.offline.moto_server``, ``python -m rigs.account.session_check``, ``python -m
rigs.estate.whereabouts``, the generated-files commands (``python -m agent.bench.results.schema``) and the
helpers ``python -m agent.local_rig``, ``python -m agent.reach.relay`` and the rig's load generator ``python -m
agent.bench.parts.load_generator``. The same
cause gives the same exit code in each: 2 for bad input, 3 for AWS credentials, 4 when AWS cannot be reached
(``./scripts/cdk`` too, through ``session_check``). ``tests/test_command.py`` checks that no other module defines
an exit code, a usage error or an argument parser. The map from an AWS error to its exit code is :func:`rigs.aws.outcome`.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple, NoReturn

EXIT_OK = 0
EXIT_FAILED = 1
"""The command ran, and its goal was not met (a rig did not come up, a backend failed, a file is stale)."""
EXIT_USAGE = 2
"""Bad input: one line says what, before any work."""
EXIT_CREDENTIALS = 3
"""AWS credentials are missing, expired or refused."""
EXIT_UNREACHABLE = 4
"""AWS (or the configured endpoint) cannot be reached at all."""
EXIT_NONE_DEPLOYED = 3
"""``python -m rigs.estate.whereabouts``: every region answered and no stack of the app is there."""
EXIT_NOT_VERIFIED = 2
"""``python -m rigs.estate.whereabouts``: a region could not be asked, so where the stacks are is not known."""
EXIT_INTERRUPTED = 130
"""Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it)."""


class UsageError(Exception):
    """Bad input or environment, reported as one line before any work (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 2 (the usage is for ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


class Outcome(NamedTuple):
    """How a command ends for an exception: its exit code and the one line that says why."""

    code: int
    line: str
