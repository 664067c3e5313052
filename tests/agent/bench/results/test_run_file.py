"""``run.json`` through its model: written from it, read back through it key for key, a misspelt key refused
where it is written, where it is read and by the committed schema; evidence written before the model
existed (``tests/agent/bench/data/evidence-before/``, a run of the main branch of then: chat searched under
the default target, the quality lane) is read as it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from agent import report as report_cli
from agent.bench.command import evidence
from agent.bench.results import schema
from agent.bench.results.run import RunFile

BEFORE = Path(__file__).parents[1] / "data" / "evidence-before"


def written() -> dict:
    return json.loads((BEFORE / evidence.RUN).read_text())


def test_evidence_written_before_the_model_is_read_key_for_key(tmp_path: Path):
    folder = tmp_path / "before"
    shutil.copytree(BEFORE, folder)
    assert report_cli.main([str(folder)]) == 0
    run = json.loads((folder / evidence.SUMMARY).read_text())["run"]
    assert json.dumps(run["options"], sort_keys=True) == json.dumps(written()["options"], sort_keys=True)
    assert RunFile.model_validate(written()).as_json() == written()
    jsonschema.validate(written(), json.loads((schema.HERE / "run.schema.json").read_text()))


def misspelt() -> dict:
    run = written()
    run["options"]["bfcl_stram"] = True
    return run


def test_a_misspelt_key_is_refused_by_the_schema():
    with pytest.raises(jsonschema.ValidationError, match="bfcl_stram"):
        jsonschema.validate(misspelt(), json.loads((schema.HERE / "run.schema.json").read_text()))


def test_a_misspelt_key_is_never_written(tmp_path: Path):
    with pytest.raises(ValidationError, match=r"options\.bfcl_stram\n  Extra inputs are not permitted"):
        evidence.write_run(tmp_path / evidence.RUN, RunFile.model_validate(misspelt()))
    assert not (tmp_path / evidence.RUN).exists()


def test_a_wrong_value_is_refused_where_it_is_set_while_the_run_fills_run_json():
    run = RunFile.model_validate(written())
    with pytest.raises(ValidationError, match=r"finished\n  Input should be a valid string"):
        run.finished = 12
    with pytest.raises(ValidationError, match=r"options\.workload\.tool_calls"):
        RunFile.model_validate({**written(), "options": {**written()["options"], "workload": {
            **written()["options"]["workload"], "tool_calls": "often"}}})


def test_a_key_the_command_always_writes_is_required(tmp_path: Path):
    run = written()
    del run["options"]["bedrock_tier"]
    with pytest.raises(ValidationError, match=r"options\.bedrock_tier\n  Field required"):
        RunFile.model_validate(run)


def test_a_hand_edited_run_json_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture):
    folder = tmp_path / "edited"
    shutil.copytree(BEFORE, folder)
    (folder / evidence.RUN).write_text(json.dumps(misspelt()))
    assert report_cli.main([str(folder), "--min-accuracy", "0.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {folder}: the report could not be rebuilt (ValidationError: options.bfcl_stram: Extra "
                   "inputs are not permitted)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edited"]  # no re-priced copy left behind
