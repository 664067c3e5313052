"""The commands README.md quotes still parse: each is read by the command's own parser (nothing runs), so an option
renamed or removed, or a value the parser now refuses, fails here instead of in a reader's terminal."""

from __future__ import annotations

import argparse
import re
import shlex
from typing import Callable, Iterator

import pytest

from tests.conftest import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text(encoding="utf-8")
COMMAND = re.compile(r"^(?:\$ )?(?:\.venv/bin/)?python3? -m (?P<module>[\w.]+)(?P<args>(?: .*)?)$")
SYNOPSIS = re.compile(r"[\[\]|]|\.\.\.")
"""A usage line (``RIG [...] [--doctor]``), not a command: its options are checked, not its values."""


def parsers() -> dict[str, Callable[[], argparse.ArgumentParser]]:
    from agent import quality, report, run
    from agent.bench.command import runner
    from rigs import cli

    return {"rigs": cli.build_parser, "agent.run": lambda: run.build_parser(runner), "agent.report": report.build_parser,
            "agent.quality": quality.build_parser}


def quoted() -> Iterator[tuple[str, bool]]:
    """Every ``python -m`` command README.md quotes, and whether it is a whole command (in a code block, or an inline
    one with arguments) rather than a command's name or its usage."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", README, re.S)
    for line in (part.strip() for block in blocks for line in block.splitlines() for part in line.split("&&")):
        if COMMAND.match(line.split(" #")[0].strip()):
            yield line.split(" #")[0].strip(), True
    for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", README, flags=re.S)):
        if COMMAND.match(span) and span != "python -m ...":
            yield span, False


def subparser(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    """The parser of the subcommand ``words`` start with (``rigs up``, ``rigs pins refresh``)."""
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if commands and words and not words[0].startswith("-"):
        assert words[0] in commands[0].choices, f"no command {words[0]!r}"
        return subparser(commands[0].choices[words[0]], words[1:])
    return parser


CASES = sorted(set(quoted()))


@pytest.mark.parametrize("line, whole", CASES, ids=[line for line, _ in CASES])
def test_a_quoted_command_parses(line: str, whole: bool):
    """A command is parsed whole (and ``agent.run``'s options checked together, as a run checks them); a usage line or
    a command's name has its subcommands and options checked."""
    match = COMMAND.match(line)
    assert match is not None
    words = shlex.split(match["args"])
    parser = parsers()[match["module"]]()
    if not SYNOPSIS.search(line) and (whole or any(w.startswith("-") for w in words)):
        namespace = parser.parse_args(words)
        if match["module"] == "agent.run":
            from agent.bench.command import runner

            runner.check_options(namespace)
        return
    sub = subparser(parser, words)
    known = {flag for action in sub._actions for flag in action.option_strings}
    flags = {w.strip("[]").split("=")[0] for w in words if w.strip("[").startswith("-")}
    assert flags <= known, f"{line}: {sorted(flags - known)} are not its options"


def test_the_readme_quotes_the_commands_it_is_about():
    """What the test above reads: every command module, the code blocks' lines (after a prompt, before a comment)."""
    found = dict(quoted())
    assert {COMMAND.match(line)["module"] for line in found} == set(parsers())
    assert found["$ python -m rigs up g6 sagemaker --capacity-grace 0 --ready-timeout 1"] is True
    assert found["python -m rigs rehearse --offline --yes"] is True
    assert found["python -m rigs up RIG [...] [--doctor]"] is False
