"""Each option of ``python -m agent.run`` declared once: the parser, the part check, the defaults a run
reads, its ``run.json`` key and the docs' tables all come from the declaration."""

from __future__ import annotations

import argparse

import pytest

from agent import run as run_module
from agent.bench.command import declared, option_table, runner
from agent.bench.command.options import BenchOptions, OptionError, check
from agent.bench.results.run import RunOptions

PART_FLAGS = [(part, name) for part, names in declared.PART_OPTIONS.items() for name in names]
EXAMPLE_VALUE = {"slo": "ttft_p99_ms=500", "bfcl_n": "50", "quality_reference": "g6", "tasks_category": "miss_func",
                 "min_task_success": "0.5", "tasks_agent_target": "task_s_p90=60"}


def parse(*argv: str) -> argparse.Namespace:
    return run_module.build_parser(runner).parse_args(list(argv))


def given(name: str) -> list[str]:
    option = declared.OPTION[name]
    return [option.flag] if option.switch else [option.flag, EXAMPLE_VALUE.get(name, "2")]


def test_a_part_names_its_options_and_each_one_is_declared():
    assert declared.PART_OPTIONS["bfcl"] == ("bfcl_n", "bfcl_seed", "bfcl_stream")
    assert set(declared.PART_OPTIONS) == {"chat", "bfcl", "quality", "tasks"}
    assert all(declared.OPTION[name].part == part for part, name in PART_FLAGS)


@pytest.mark.parametrize("part,name", PART_FLAGS)
def test_every_option_of_a_part_is_refused_without_it_and_accepted_with_it(part: str, name: str):
    others = ",".join(d for d in declared.DEMOS if d != part)
    with pytest.raises(OptionError, match=f"^{declared.OPTION[name].flag} only changes the {part} part"):
        check(parse("--demos", others, *given(name)))
    check(parse("--demos", part, *given(name)))


def test_left_out_every_option_is_its_declared_default():
    options = BenchOptions.from_namespace(parse())
    assert options.runs == declared.OPTION["runs"].default == 5
    assert options.target == declared.OPTION["slo"].default and not options.target.given
    assert (options.bfcl_n, options.quality_n, options.slo_budget_s) == (
        declared.OPTION["bfcl_n"].default, declared.OPTION["quality_n"].default, declared.OPTION["slo_budget_s"].default)
    assert options.demos == declared.DEFAULT_DEMOS and options.bedrock_tier == "standard"


def test_help_states_each_declared_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("COLUMNS", "10000")  # one line per option: no word is split across lines
    text = run_module.build_parser(runner).format_help()
    for option in declared.OPTIONS:
        if option.shown:
            assert f"(default: {option.shown})" in text, option.flag


def test_every_recorded_option_is_a_key_of_the_run_json_model_and_recorded_under_its_name():
    recorded = {o.name for o in declared.OPTIONS if o.record}
    assert recorded <= set(RunOptions.model_fields)
    record = BenchOptions.from_namespace(parse("--demos", "default,bfcl,quality,tasks", "--quality-reference", "g6",
                                               "--tasks-agent-target", "task_s_p90=60",
                                               "--backends", "g6", "--rate", "2", "--rate-duration", "5")).record(
        bfcl_concurrency=1)
    assert recorded <= record.model_fields_set
    assert {o.name for o in declared.OPTIONS if o.record == declared.PLAN} == {
        "concurrency", "slo", "repeats", "max_concurrency", "slo_budget_s"}  # the chat part's plan records those


def test_the_docs_option_tables_are_generated_from_the_declarations():
    assert option_table.stale() == [], f"run {option_table.PROG} --write"


def test_a_hand_edited_table_is_stale_and_written_back():
    path = option_table.ROOT / "docs" / "options.md"
    text = path.read_text(encoding="utf-8")
    edited = text.replace("| 200 |", "| 300 |")
    assert edited != text
    assert option_table.with_table(edited, option_table.TABLES["docs/options.md"], "options.md") == text


def test_a_docs_file_without_the_markers_is_an_error():
    with pytest.raises(option_table.MarkersMissing, match="markers of the options' table are missing"):
        option_table.with_table("# no table here\n", ("run",), "agent.md")
