"""Each option of the project's commands is declared once and named through its declaration: its flag (``--max-tokens``)
is written as a string in its declaration and in at most one other module (one that writes the command line of
another command, ``rigs rehearse`` writing ``python -m agent.run``'s), and its dest is not written as a string to
read it (``getattr(args, "max_tokens")``): the typed options are read by attribute.

The modules read are those of ``agent/``, ``rigs/``, ``kit/``, ``stacks/`` and ``app.py``; a string counts when it is
the whole flag (a flag quoted in a message is text, not the option). A flag two commands declare each for their own
option (``--out`` of ``agent.run`` and of ``agent.report``) gets one module of use per declaration. A flag of another
program spelt as one of ours (the aws CLI's ``--profile``) is not ours: :data:`OTHER_PROGRAMS` names the module and the
program, and nothing else is let off.
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterator

import pytest

from kit.command import Parser
from tests.conftest import PROJECT_DIR, parse_file

CHECKED = ("agent", "rigs", "kit", "stacks")
OTHER_PROGRAMS = {
    ("--profile", "agent/reach/forwarding.py"): "the aws CLI's (aws ssm start-session)",
    ("--region", "agent/reach/forwarding.py"): "the aws CLI's (aws ssm start-session)",
    ("--profile", "rigs/account/session_check.py"): "the CDK CLI's, read from its command line",
    ("--profile", "rigs/aws.py"): "where a profile came from, in a message of whichever command passed it",
}
"""``(flag, module)``: a flag of another program (or of any command) written there, and why it is not our option's."""
DECLARING_CALLS = {"Option", "option", "add_argument", "but"}
"""The calls that declare an option: ``Option(("--flag",), ...)``, ``.but(flags=("--n",))``, ``add_argument``."""
ATTRIBUTE_BY_NAME = {"getattr", "setattr", "hasattr", "delattr"}


def actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from actions(sub)
        elif not isinstance(action, argparse._HelpAction):
            yield action


def parsers() -> list[Callable[[], argparse.ArgumentParser]]:
    """Every command's parser: the four commands and the helpers whose options are a model."""
    from agent import local_rig, quality, report, run
    from agent.bench.command import runner
    from agent.reach import relay
    from kit import generated
    from rigs import cli
    from rigs.estate import whereabouts
    from rigs.offline import moto_server

    def of(model: type) -> Callable[[], argparse.ArgumentParser]:
        def make() -> argparse.ArgumentParser:
            parser = Parser(prog=model.__name__)
            model.add_arguments(parser)
            return parser
        return make

    return [lambda: run.build_parser(runner), report.build_parser, quality.build_parser, cli.build_parser,
            of(moto_server.ServerOptions), of(whereabouts.WhereaboutsOptions), of(local_rig.LocalRigOptions),
            of(relay.RelayOptions), of(generated.GeneratedOptions)]


def options() -> tuple[set[str], set[str]]:
    """The flags and the dests of every option of every command."""
    found = [action for make in parsers() for action in actions(make())]
    return ({flag for a in found for flag in a.option_strings},
            {a.dest for a in found if a.option_strings and a.dest != argparse.SUPPRESS})


def modules(root: Path = PROJECT_DIR) -> list[Path]:
    return sorted(p for folder in CHECKED for p in (root / folder).rglob("*.py")) + [root / "app.py"]


def _declared_flags(call: ast.Call) -> set[str]:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name not in DECLARING_CALLS:
        return set()
    given = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "flags")]
    return {n.value for arg in given for n in ast.walk(arg) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def written(paths: list[Path], root: Path = PROJECT_DIR) -> tuple[dict[str, set[str]], dict[str, set[str]],
                                                                   dict[str, set[str]]]:
    """By string: the modules it is written in, those where it is declared as a flag, and those where it names an
    attribute (``getattr(x, "name")``)."""
    anywhere, declared, by_name = defaultdict(set), defaultdict(set), defaultdict(set)
    for path in paths:
        where = str(path.relative_to(root))
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                anywhere[node.value].add(where)
            elif isinstance(node, ast.Call):
                for flag in _declared_flags(node):
                    declared[flag].add(where)
                if getattr(node.func, "id", "") in ATTRIBUTE_BY_NAME and len(node.args) > 1 and \
                        isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                    by_name[node.args[1].value].add(where)
    return anywhere, declared, by_name


def flags_written_too_often(flags: set[str], paths: list[Path], root: Path = PROJECT_DIR) -> dict[str, list[str]]:
    """Each flag written in more modules than its declarations and one use each: the modules that use it."""
    anywhere, declared, _ = written(paths, root)
    out = {}
    for flag in sorted(flags):
        uses = sorted(m for m in anywhere[flag] - declared[flag] if (flag, m) not in OTHER_PROGRAMS)
        if len(uses) > max(1, len(declared[flag])):
            out[flag] = uses
    return out


def dests_read_by_name(dests: set[str], paths: list[Path], root: Path = PROJECT_DIR) -> dict[str, list[str]]:
    _, _, by_name = written(paths, root)
    return {dest: sorted(by_name[dest]) for dest in sorted(dests) if by_name[dest]}


def test_every_flag_is_written_in_its_declaration_and_in_one_module_that_uses_it():
    flags, _ = options()
    assert {"--max-tokens", "--model-config", "--capacity-grace", "-c", "--n"} <= flags
    assert flags_written_too_often(flags, modules()) == {}


def test_no_option_is_read_by_its_name_as_a_string():
    _, dests = options()
    assert {"max_tokens", "model_config", "capacity_grace", "skip_checks"} <= dests
    assert dests_read_by_name(dests, modules()) == {}


def test_the_other_programs_flags_are_still_written_where_they_are_said_to_be():
    anywhere, _, _ = written(modules())
    assert {(flag, module) for flag, module in OTHER_PROGRAMS if module in anywhere[flag]} == set(OTHER_PROGRAMS)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent").mkdir()
    (tmp_path / "app.py").write_text("")
    (tmp_path / "agent" / "declared.py").write_text(
        'from kit.options import Option\nMAX = Option(("--max-tokens",), "output tokens", type=int)\n')
    (tmp_path / "agent" / "reader.py").write_text('def tokens(args):\n    return getattr(args, "max_tokens")\n')
    (tmp_path / "agent" / "caller.py").write_text('LINE = ["python", "-m", "agent.run", "--max-tokens", "5"]\n')
    return tmp_path


def test_a_flag_written_in_a_third_module_is_found_and_one_in_a_message_is_not(project: Path):
    paths = lambda: sorted((project / "agent").glob("*.py"))  # noqa: E731
    assert flags_written_too_often({"--max-tokens"}, paths(), project) == {}
    (project / "agent" / "again.py").write_text('SAID = "give --max-tokens N"\nFLAG = "--max-tokens"\n')
    assert flags_written_too_often({"--max-tokens"}, paths(), project) == {
        "--max-tokens": ["agent/again.py", "agent/caller.py"]}


def test_a_dest_read_by_its_name_is_found(project: Path):
    paths = sorted((project / "agent").glob("*.py"))
    assert dests_read_by_name({"max_tokens"}, paths, project) == {"max_tokens": ["agent/reader.py"]}
