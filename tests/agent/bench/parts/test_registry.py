"""The registry of parts: the order of a run, and what each part says of itself (its name, its records,
the options declared for it) agreeing with the command line and the typed records."""

from __future__ import annotations

import argparse
import typing

import pytest

from agent.bench.command import declared, runner
from agent.bench.parts.registry import PARTS
from agent.bench.results.records import RequestRecord

from tests.agent.bench.conftest import make_options, openai_backend


def test_the_parts_run_in_the_registrys_order_whatever_the_order_of_demos(tmp_path, fake_agent_server, capsys):
    """The chat part goes first (its cold request is the backend's first), the orchestrator last."""
    g6 = openai_backend("g6", fake_agent_server.base_url)
    code = runner.run([g6], make_options("--runs", "1", "--demos", "orchestrator,counting,chat"), tmp_path / "out",
                      None)
    lines = [ln.split("] ", 1)[1] for ln in capsys.readouterr().err.splitlines() if ln.startswith("[")]
    assert code == 0
    assert lines == ["g6: chat", "g6: counting", "g6: counting_strict", "orchestrator on g6, asking 1 backend(s)",
                     "g6: orchestrator"]
    assert list(PARTS) == ["chat", "open_loop", "counting", "bfcl", "quality", "tasks", "orchestrator"]


def test_every_part_is_a_demos_choice_and_every_choice_a_part():
    assert sorted(PARTS) == sorted(declared.DEMOS)


def _record_parts(record_type: object) -> set[str]:
    """The ``part`` values a record model (or a union of them) accepts."""
    if typing.get_origin(record_type) in (typing.Annotated, typing.Union):
        return set().union(*(_record_parts(t) for t in typing.get_args(record_type)))
    if not isinstance(record_type, type) or "part" not in getattr(record_type, "model_fields", {}):
        return set()
    return set(typing.get_args(record_type.model_fields["part"].annotation))


def test_the_parts_write_each_kind_of_record_the_typed_records_know_and_no_other():
    written = [name for part in PARTS.values() for name in part.records]
    assert len(written) == len(set(written)), "two parts write the same kind of record"
    assert set(written) == _record_parts(RequestRecord) == {"chat", "chat_not_sent", "orchestrator_ask", "counting",
                                                            "counting_strict", "orchestrator", "bfcl", "quality", "open_loop",
                                                            "tasks"}


SAMPLE = {"slo": "ttft_p99_ms=1000", "tasks_agent_target": "task_s_p90=60"}
"""A value the option accepts, where ``1`` (or its first choice) is not one."""


def _argv(parser: argparse.ArgumentParser, name: str) -> list[str]:
    action = next(a for a in parser._actions if a.dest == name)
    if action.nargs == 0:
        return [action.option_strings[0]]
    return [action.option_strings[0], SAMPLE.get(name, action.choices[0] if action.choices else "1")]


@pytest.mark.parametrize("part", [p for p in PARTS.values() if declared.PART_OPTIONS.get(p.name)], ids=lambda p: p.name)
def test_an_option_declared_for_a_part_is_refused_when_the_part_is_not_run(part):
    parser = argparse.ArgumentParser()
    runner.add_arguments(parser)
    other = next(name for name in PARTS if name not in (part.name, "open_loop"))  # the open loop needs --rate
    for name in declared.PART_OPTIONS[part.name]:
        namespace = parser.parse_args([*_argv(parser, name), "--demos", other])
        with pytest.raises(runner.OptionError, match=f"only changes the {part.name} part"):
            runner.check_options(namespace)
        runner.check_options(parser.parse_args([*_argv(parser, name), "--demos", f"{other},{part.name}"]))
