"""Files generated from the code and committed (JSON Schemas, the docs' option table): one way to
write them and one way to find a stale one.

A module that owns such files lists them as :class:`Generated` (where, and the function that makes the
text) and hands them to :func:`main`, which gives it ``--write`` and ``--check``; a test calls
:func:`stale` so a committed file that no longer matches the code fails the suite.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from kit.command import EXIT_FAILED, EXIT_OK, Parser
from kit.files import write_atomic
from kit.options import Option, Options, Together

DRAFT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Generated:
    """One committed file and what makes its text."""

    path: Path
    make: Callable[[], str]

    def is_stale(self) -> bool:
        return not self.path.is_file() or self.path.read_text(encoding="utf-8") != self.make()


def untitled(schema: Any) -> Any:
    """``schema`` without the titles pydantic derives from field names (they repeat the key)."""
    if isinstance(schema, dict):
        out = {k: untitled(v) for k, v in schema.items()}
        for prop in (out.get("properties") or {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        return out
    if isinstance(schema, list):
        return [untitled(v) for v in schema]
    return schema


def json_schema(body: dict[str, Any], title: str, description: str) -> str:
    """A generated JSON Schema file's text: the draft, our title and description, then ``body``."""
    schema = {"$schema": DRAFT, "title": title, "description": description,
              **{k: v for k, v in untitled(body).items() if k not in ("title", "description")}}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def schema_file(path: Path, body: Callable[[], dict[str, Any]], title: str, description: str) -> Generated:
    """A committed JSON Schema made from ``body`` (a model's ``model_json_schema``) with our title and description."""
    return Generated(path, lambda: json_schema(body(), title, description))


def stale(files: Sequence[Generated]) -> list[Path]:
    """The committed files that differ from what the code makes."""
    return [f.path for f in files if f.is_stale()]


ONE_ACTION = Together(required=True)


class GeneratedOptions(Options):
    """The options of a generated-files command (``python -m agent.bench.results.schema``)."""

    write = Option(("--write",), "write the generated files", default=False, switch=True, together=ONE_ACTION)
    check = Option(("--check",), "exit 1 when a committed file is stale", default=False, switch=True,
                   together=ONE_ACTION)


def main(files: Sequence[Generated], prog: str, description: str, argv: Sequence[str] | None = None) -> int:
    """``--write`` writes every file; ``--check`` exits 1 naming each stale one."""
    parser = Parser(prog=prog, description=description)
    GeneratedOptions.add_arguments(parser)
    args = GeneratedOptions.of(parser.parse_args(argv))
    if args.write:
        for f in files:
            write_atomic(f.path, f.make())
            print(f"wrote {f.path}")
        return EXIT_OK
    behind = stale(files)
    for path in behind:
        print(f"{path} is stale: run {prog} --write", file=sys.stderr)
    return EXIT_FAILED if behind else EXIT_OK
