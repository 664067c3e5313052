"""The committed JSON Schemas of rigs/catalog.yaml and rigs/prices.yaml: what the models generate, and what the
committed files (and an editor that reads the schema line at their top) validate against."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from rigs.catalog import schema
from rigs.catalog.model import CATALOG_PATH
from rigs.catalog.pricing import PRICES_PATH


def as_json(path: Path) -> object:
    """The YAML file as an editor sees it: an unquoted date is a string."""
    return json.loads(json.dumps(yaml.safe_load(path.read_text()), default=str))


def test_the_committed_schemas_are_what_the_models_generate():
    assert [f.path for f in schema.files() if f.is_stale()] == [], f"run: {schema.PROG} --write"
    assert schema.main(["--check"]) == 0


def test_a_stale_schema_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    stale = tmp_path / "catalog.schema.json"
    stale.write_text(schema.catalog_schema().replace('"minItems": 1', '"minItems": 2', 1))
    monkeypatch.setattr(schema, "CATALOG_SCHEMA", stale)
    assert schema.main(["--check"]) == 1
    assert f"{stale} is stale: run {schema.PROG} --write" in capsys.readouterr().err


@pytest.mark.parametrize("data, committed", [(CATALOG_PATH, schema.CATALOG_SCHEMA), (PRICES_PATH, schema.PRICES_SCHEMA)],
                         ids=["catalog", "prices"])
def test_the_committed_files_validate_against_their_committed_schemas(data: Path, committed: Path):
    assert data.read_text().splitlines()[0] == f"# yaml-language-server: $schema={committed.name}"
    jsonschema.validate(as_json(data), json.loads(committed.read_text()))


def messages(data: object, committed: Path) -> list[str]:
    """Every error the schema finds, those inside a ``oneOf`` (the rig kinds) included."""
    pending = list(jsonschema.Draft202012Validator(json.loads(committed.read_text())).iter_errors(data))
    found = []
    while pending:
        error = pending.pop()
        found.append(error.message)
        pending.extend(error.context or [])
    return found


def test_the_schema_refuses_what_the_models_refuse():
    catalog = as_json(CATALOG_PATH)
    catalog["rigs"]["g6"]["instnce_type"] = "g6.xlarge"
    assert "Additional properties are not allowed ('instnce_type' was unexpected)" in messages(
        catalog, schema.CATALOG_SCHEMA)
    prices = as_json(PRICES_PATH)
    prices["ec2_on_demand"][0]["usd_per_hour"] = "cheap"
    assert "'cheap' is not of type 'number'" in messages(prices, schema.PRICES_SCHEMA)
