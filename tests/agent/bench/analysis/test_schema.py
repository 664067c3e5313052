"""The schemas of the files a user edits for the analysis (``devices.yaml``, a ``--workload`` file): committed as
the models generate them, and an editor checking a file against them agrees with the command."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from agent.bench.analysis import schema
from agent.bench.analysis.ceiling import DEVICES_PATH
from kit import generated


def committed(name: str) -> dict:
    return json.loads((schema.HERE / name).read_text())


def test_the_committed_schemas_are_what_the_models_generate():
    assert generated.stale(schema.files()) == [], "run: python -m agent.bench.analysis.schema --write"


def test_a_stale_schema_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.setattr(schema, "HERE", tmp_path)
    assert generated.main(schema.files(), schema.PROG, "", ["--write"]) == 0
    edited = committed("devices.schema.json")
    edited["$defs"]["Device"]["required"].remove("source")  # a hand edit, or a model changed since
    (tmp_path / "devices.schema.json").write_text(json.dumps(edited, indent=2) + "\n")
    capsys.readouterr()
    assert generated.main(schema.files(), schema.PROG, "", ["--check"]) == 1
    assert capsys.readouterr().err == (f"{tmp_path / 'devices.schema.json'} is stale: run "
                                       "python -m agent.bench.analysis.schema --write\n")


def test_the_device_file_validates_and_a_misspelt_key_does_not():
    data = yaml.safe_load(DEVICES_PATH.read_text())
    jsonschema.validate(data, committed("devices.schema.json"))
    data["models"][0]["bytes_per_step"] = data["models"][0].pop("bytes_per_step_gb")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, committed("devices.schema.json"))


@pytest.mark.parametrize("text", ["output_tokens_per_month: 2B\ninput_per_output: '5:1'\ntool_calls: no\n",
                                  "peak_to_average: 2.5\nmin_quality: 80%\n", "{}\n"])
def test_a_workload_file_the_command_reads_validates(text):
    jsonschema.validate(yaml.safe_load(text), committed("workload.schema.json"))


@pytest.mark.parametrize("text", ["users: 5\n", "peak_to_average: 0.5\n", "output_tokens_per_month: 0\n"])
def test_a_workload_file_the_command_refuses_does_not_validate(text):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(yaml.safe_load(text), committed("workload.schema.json"))
