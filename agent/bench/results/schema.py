"""The JSON Schemas of ``summary.json``, of ``run.json`` and of a ``requests.jsonl`` line, generated from the
models.

``python -m agent.bench.results.schema --write`` writes them beside this file;
``python -m agent.bench.results.schema --check`` (and a test) fails when a committed one is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from kit.generated import Generated
import kit.generated as generated

from .records import RECORDS
from .run import RunFile
from .summary import Summary

HERE = Path(__file__).parent
PROG = "python -m agent.bench.results.schema"


def summary_schema() -> str:
    return generated.json_schema(
        Summary.model_json_schema(), "summary.json",
        "Every figure of a benchmark run, computed from requests.jsonl and run.json. Generated "
        f"from agent/bench/results/ ({PROG} --write); do not edit.")


def requests_schema() -> str:
    return generated.json_schema(
        RECORDS.json_schema(), "one line of requests.jsonl",
        "One request of a benchmark run, told apart by its part. Generated from "
        f"agent/bench/results/records.py ({PROG} --write); do not edit.")


def run_schema() -> str:
    return generated.json_schema(
        RunFile.model_json_schema(), "run.json",
        "What a benchmark run was: when, from which commit, with which backends, options, settings and prices, "
        "and what was skipped or stopped; an unknown key is refused. Generated from agent/bench/results/run.py "
        f"({PROG} --write); do not edit.")


SCHEMAS = {"summary.schema.json": summary_schema, "requests.schema.json": requests_schema,
           "run.schema.json": run_schema}


def files() -> list[Generated]:
    return [Generated(HERE / name, make) for name, make in SCHEMAS.items()]


def render(name: str) -> str:
    return SCHEMAS[name]()


def stale() -> list[str]:
    """The committed schemas that differ from what the models generate."""
    return [path.name for path in generated.stale(files())]


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(files(), PROG, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
