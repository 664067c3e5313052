"""The options kit (``kit/options.py``): an option declared once, as a field of its command's model, gives the
parser, the typed options and a table; a shared option is the same declaration on each command."""

from __future__ import annotations

import argparse

import pytest

from kit.command import Parser
from kit.options import Option, Options, Together, add_command, parsed

SHARED = Option(("--json",), "print JSON", default=False, switch=True)
EITHER = Together(required=True)


class Base(Options):
    profile = Option(("--profile",), "AWS profile", metavar="P")


class Up(Base):
    rigs = Option((), "rigs to deploy", nargs="+", metavar="RIG")
    max_hours = Option(("--max-hours",), "lifetime limit", type=float, metavar="HOURS", shown="the catalog's")
    skip_checks = Option(("--skip-check",), "a check that stops nothing", default=(), repeated=True, metavar="CHECK")
    json = SHARED


class Fit(Base):
    model = Option(("--model",), "a model of the catalog", metavar="ID", together=EITHER)
    model_config = Option(("--model-config",), "a config.json", metavar="FILE", together=EITHER)
    json = SHARED.but(help="print JSON: the fit")


def parser() -> argparse.ArgumentParser:
    main = Parser(prog="tool")
    Base.add_arguments(main)
    sub = main.add_subparsers(dest="command", required=True)
    add_command(sub, "up", Up, "deploy", beside=Base)
    add_command(sub, "fit", Fit, "fit", beside=Base)
    return main


def test_the_parser_and_the_typed_options_come_from_the_declarations():
    options = parsed(parser().parse_args(["--profile", "p", "up", "g6", "inf2", "--max-hours", "2",
                                          "--skip-check", "a", "--skip-check", "b"]))
    assert isinstance(options, Up)
    assert (options.profile, options.rigs, options.max_hours, options.skip_checks, options.json) == (
        "p", ["g6", "inf2"], 2.0, ["a", "b"], False)
    left_out = parsed(parser().parse_args(["up", "g6"]))
    assert (left_out.max_hours, left_out.skip_checks, left_out.profile) == (None, (), None)


def test_on_the_class_an_attribute_is_the_declaration_and_on_an_instance_its_value():
    assert Up.max_hours.flag == "--max-hours" and Up.max_hours.name == "max_hours"
    assert Up.rigs.flag == "RIG" and Up.rigs.usage == "RIG"
    assert Up.max_hours.usage == "--max-hours HOURS" and Up.max_hours.full_help() == \
        "lifetime limit (default: the catalog's)"
    assert [o.name for o in Up.options()] == ["profile", "rigs", "max_hours", "skip_checks", "json"]
    assert Up(rigs=["g6"]).max_hours is None and Up(rigs=["g6"]).replace(max_hours=3).max_hours == 3


def test_a_shared_option_is_one_declaration_and_a_variant_keeps_its_flag_and_name():
    assert Up.json is SHARED and Fit.json.flag == SHARED.flag and Fit.json.name == "json"
    assert "print JSON: the fit" in parser().parse_args(["fit", "--model", "m"]).options_model.json.help


def test_a_group_of_which_one_is_required_refuses_none_and_both(capsys: pytest.CaptureFixture):
    for argv in (["fit"], ["fit", "--model", "m", "--model-config", "c.json"]):
        with pytest.raises(SystemExit) as stop:
            parser().parse_args(argv)
        assert stop.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_options_are_frozen_and_unknown_ones_refused():
    with pytest.raises(AttributeError, match="frozen"):
        Up(rigs=["g6"]).max_hours = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="has no option max_usd"):
        Up(max_usd=1)


def test_an_option_declared_under_two_names_is_refused():
    with pytest.raises((TypeError, RuntimeError)) as refused:
        class Wrong(Options):  # noqa: F841 - defining it is the test
            as_json = SHARED
    assert "the option --json is already declared as 'json'" in str(refused.value.__cause__ or refused.value)
