"""One command kit (``kit/command.py``): exit codes defined there only, one usage error, one one-line parser, and
every command answering a bad argument with one line and exit status 2."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from kit.command import EXIT_CREDENTIALS, EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE, UsageError
from rigs import aws
from rigs.aws import outcome
from tests.conftest import PROJECT_DIR, parse_file

KIT = PROJECT_DIR / "kit" / "command.py"
CHECKED = ("kit", "rigs", "agent", "stacks")
RUN_BY_PATH = {PROJECT_DIR / "agent" / "llama_server.py", PROJECT_DIR / "kit" / "guard.py"}
"""Run by their path with the standard library only (they cannot import the kit): their exit codes are their own."""


def _exit_call(node: ast.AST) -> bool:
    """``sys.exit(N)``, ``SystemExit(N)`` or ``parser.exit(N)`` with an int literal other than 0."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = node.args[0]
    return name in ("exit", "SystemExit") and isinstance(first, ast.Constant) and type(first.value) is int \
        and first.value != 0


def definitions(path: Path, root: Path = PROJECT_DIR) -> list[str]:
    """Where ``path`` defines an exit code, a usage error or an argument parser of its own."""
    tree = parse_file(path)
    where = str(path.relative_to(root))
    found = [f"{where}:{node.lineno} {target.id}" for node in tree.body if isinstance(node, ast.Assign)
             for element in node.targets
             for target in (element.elts if isinstance(element, ast.Tuple) else [element])
             if isinstance(target, ast.Name) and target.id.startswith("EXIT_")]
    found += [f"{where}:{node.lineno} exit with a literal" for node in ast.walk(tree) if _exit_call(node)]
    found += [f"{where}:{node.lineno} main returns a literal" for function in ast.walk(tree)
              if isinstance(function, ast.FunctionDef) and function.name == "main" for node in ast.walk(function)
              if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant)
              and type(node.value.value) is int and node.value.value != 0]
    found += [f"{where}:{node.lineno} class {node.name}" for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
              and (node.name == "UsageError" or any(ast.unparse(base).endswith("ArgumentParser")
                                                    for base in node.bases))]
    return found


def test_only_the_kit_defines_exit_codes_usage_errors_and_parsers() -> None:
    files = [p for folder in CHECKED for p in sorted((PROJECT_DIR / folder).rglob("*.py"))
             if p != KIT and p not in RUN_BY_PATH]
    assert [hit for path in files for hit in definitions(path)] == []


def test_an_exit_code_defined_outside_the_kit_is_found(tmp_path: Path) -> None:
    path = tmp_path / "cli.py"
    path.write_text("import argparse, sys\nEXIT_OK, EXIT_USAGE = 0, 2\nEXIT_GONE = 5\n"
                    "class UsageError(Exception): pass\nclass P(argparse.ArgumentParser): pass\n"
                    "def main():\n    sys.exit(3)\n    return 2\n\ndef fine():\n    sys.exit(0)\n    return 1\n")
    assert definitions(path, tmp_path) == ["cli.py:2 EXIT_OK", "cli.py:2 EXIT_USAGE", "cli.py:3 EXIT_GONE",
                                           "cli.py:7 exit with a literal", "cli.py:8 main returns a literal",
                                           "cli.py:4 class UsageError", "cli.py:5 class P"]


@pytest.mark.parametrize("module, prog", [
    ("rigs", "python -m rigs"),
    ("agent.run", "python -m agent.run"),
    ("agent.report", "python -m agent.report"),
    ("agent.quality", "python -m agent.quality"),
    ("rigs.offline.moto_server", "python -m rigs.offline.moto_server"),
    ("rigs.estate.whereabouts", "python -m rigs.estate.whereabouts"),
    ("agent.bench.results.schema", "python -m agent.bench.results.schema"),
    ("agent.local_rig", "python -m agent.local_rig"),
    ("agent.reach.relay", "python -m agent.reach.relay"),
    ("agent.bench.parts.load_generator", "python -m agent.bench.parts.load_generator"),
])
def test_every_command_answers_a_bad_argument_in_one_line_with_exit_2(module: str, prog: str,
                                                                      tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--no-such-option"], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(f"{prog}: error: ")
    assert len(done.stderr.splitlines()) == 1 and done.stderr.rstrip().endswith("(see --help)")


def test_one_map_from_an_exception_to_the_exit_code_and_its_line() -> None:
    import botocore.exceptions

    assert outcome(UsageError("--x: bad")) == (EXIT_USAGE, "--x: bad")
    missing = outcome(botocore.exceptions.NoCredentialsError())
    assert missing is not None and missing.code == EXIT_CREDENTIALS and missing.line.startswith("no AWS credentials")
    refused = outcome(botocore.exceptions.EndpointConnectionError(endpoint_url="http://localhost:1"))
    assert refused is not None and refused.code == EXIT_UNREACHABLE
    assert refused.line.startswith("cannot reach AWS at http://localhost:1: ")
    denied = botocore.exceptions.ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeStacks")
    assert outcome(denied) == (EXIT_FAILED, "DescribeStacks failed: AccessDenied: no")
    assert outcome(aws.RigsError("the catalog says no")) == (EXIT_FAILED, "the catalog says no")
    assert outcome(ZeroDivisionError("a bug")) is None  # not the kit's: the command lets it raise
