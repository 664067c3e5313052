"""The JSON Schemas of ``summary.json`` and of a ``requests.jsonl`` line, generated from the models.

``python -m agent.bench.results.schema --write`` writes them beside this file;
``python -m agent.bench.results.schema --check`` (and a test) fails when a committed one is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .records import RECORDS
from .summary import Summary

HERE = Path(__file__).parent
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _untitled(schema: Any) -> Any:
    """``schema`` without the titles pydantic derives from field names (they repeat the key)."""
    if isinstance(schema, dict):
        out = {k: _untitled(v) for k, v in schema.items()}
        for prop in (out.get("properties") or {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        return out
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def summary_schema() -> dict[str, Any]:
    body = _untitled(Summary.model_json_schema())
    return {"$schema": DRAFT, "title": "summary.json",
            "description": "Every figure of a benchmark run, computed from requests.jsonl and run.json. Generated "
                           "from agent/bench/results/ (python -m agent.bench.results.schema --write); do not edit.",
            **{k: v for k, v in body.items() if k != "title"}}


def requests_schema() -> dict[str, Any]:
    body = _untitled(RECORDS.json_schema())
    return {"$schema": DRAFT, "title": "one line of requests.jsonl",
            "description": "One request of a benchmark run, told apart by its part. Generated from "
                           "agent/bench/results/records.py (python -m agent.bench.results.schema --write); do not "
                           "edit.",
            **body}


SCHEMAS = {"summary.schema.json": summary_schema, "requests.schema.json": requests_schema}


def render(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=2, ensure_ascii=False) + "\n"


def stale() -> list[str]:
    """The committed schemas that differ from what the models generate."""
    return [name for name in SCHEMAS if not (HERE / name).is_file() or (HERE / name).read_text() != render(name)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.bench.results.schema", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="write the schemas beside the models")
    action.add_argument("--check", action="store_true", help="exit 1 when a committed schema is stale")
    args = parser.parse_args(argv)
    if args.write:
        for name in SCHEMAS:
            (HERE / name).write_text(render(name))
            print(f"wrote {HERE / name}")
        return 0
    behind = stale()
    for name in behind:
        print(f"{HERE / name} is stale: run python -m agent.bench.results.schema --write", file=sys.stderr)
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main())
