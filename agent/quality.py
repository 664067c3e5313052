"""``python -m agent.quality``: the quality lane's items and grades, outside a run.

* ``export --n N --seed S OUT.jsonl`` writes exactly the items a run with ``--quality-n N
  --quality-seed S`` sends, one JSON object a line (id, suite, lane version, the messages with the
  system turn, the output cap, the reference answer and how it is graded), so they can be read or
  run elsewhere. The file is written whole or not at all; an existing file is kept unless
  ``--force``.
* ``grade DIR`` regrades the ``part: quality`` records of an evidence folder's ``requests.jsonl``
  with the grading code as it is now, and prints each backend's accuracy (with its Wilson 95%
  interval), per suite too: the figures of ``summary.json``'s ``quality`` blocks, from the same
  code (:func:`agent.bench.analysis.blocks.quality.grades`; ``--json`` prints those blocks). It
  writes nothing: the folder stays as the run left it.

Accuracy is right / graded, where graded = right + wrong + unreadable; failed requests and items
not sent are counted apart and never graded.

Exit status: 0 done; 1 reasoning-gym missing (export); 2 bad arguments (one line, nothing written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping

from kit.command import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Parser, UsageError
from kit.files import write_atomic
from kit.options import Option, Options, add_command, parsed

from .bench.command import evidence
from .bench.command.declared import Declared
from .bench.parts.quality import DEFAULT_SEED


class ExportOptions(Options):
    """``export``: the lane's items of ``python -m agent.run``'s ``--quality-n`` and ``--quality-seed`` (their
    declarations, under shorter flags)."""

    quality_n = Declared.quality_n.but(flags=("--n",), help=f"number of items (as {Declared.quality_n.flag})",
                                       shown="", part=None, required=True)
    quality_seed = Declared.quality_seed.but(flags=("--seed",), help=f"seed (as {Declared.quality_seed.flag}; "
                                             f"default: {DEFAULT_SEED})", shown="", part=None)
    out = Option((), "the file to write", type=Path, metavar="OUT.jsonl")
    force = Option(("--force",), "replace OUT.jsonl if it exists", default=False, switch=True)


class GradeOptions(Options):
    """``grade``: an evidence folder's quality records, regraded."""

    folder = Option((), "an evidence folder (with requests.jsonl)", type=Path, metavar="DIR")
    json = Option(("--json",), "print the counts as one JSON object instead", default=False, switch=True)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m agent.quality",
                    description="Export the quality lane's items, or regrade a run's replies.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{export,grade}")
    add_command(sub, "export", ExportOptions, "write the items a run with the same --n and --seed sends (JSON lines)")
    add_command(sub, "grade", GradeOptions, "regrade the quality records of an evidence folder and print accuracy")
    return parser


def export(n: int, seed: int, out: Path, force: bool) -> int:
    """Write the items to ``out`` through a temporary file and a rename."""
    from .bench.tasks.quality import lane
    from .bench.tasks.quality.gym import QualityUnavailableError

    if out.is_dir():
        raise UsageError(f"{out}: is a folder; give a file name such as {out / 'items.jsonl'}")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such folder; create it first")
    if out.exists() and not force:
        raise UsageError(f"{out}: already exists; give another name or --force to replace it")
    try:
        items = lane.select(n, seed)
    except QualityUnavailableError as exc:
        print(f"python -m agent.quality: {exc}", file=sys.stderr)
        return EXIT_FAILED
    version = lane.version()
    write_atomic(out, "".join(json.dumps(item.row(version)) + "\n" for item in items))
    print(f"wrote {len(items)} items ({version}, seed {seed}) to {out}")
    return EXIT_OK


def _line(name: str, t: Mapping[str, Any]) -> str:
    accuracy = "n/a" if t["accuracy"] is None else (
        f"{t['accuracy']:.1%} [{t['ci95_low']:.1%}, {t['ci95_high']:.1%}]")
    return (f"{name:<14} {t['right']:>5}/{t['graded']:<5} {accuracy:<22} wrong {t['wrong']}, unreadable "
            f"{t['unreadable']} (refusals {t['refusals']}), failed {t['failed']}, not sent {t['not_sent']}")


def print_grades(folder: Path, table: Mapping[str, Mapping[str, Any]]) -> None:
    print(f"quality lane, regraded from {folder / evidence.REQUESTS} (accuracy = right / graded, Wilson 95%)")
    for name, t in table.items():
        print(_line(name, t) + f"  [{', '.join(t['lane'])}]")
        for suite, s in t["by_suite"].items():
            print("  " + _line(suite, s))


def grade_folder(folder: Path, as_json: bool) -> int:
    from .bench.analysis.blocks.quality import grades
    from .bench.results.records import RecordError

    path = folder / evidence.REQUESTS
    if not path.is_file():
        raise UsageError(f"{folder}: no {evidence.REQUESTS} here; give an evidence folder written by python -m agent.run")
    try:
        blocks = grades(evidence.read_requests(path))
    except RecordError as exc:
        raise UsageError(f"{path}: {exc}") from None
    table = {name: block.model_dump(mode="json") for name, block in blocks.items()}
    if not table:
        raise UsageError(f"{path}: no quality records (run with --demos quality)")
    if as_json:
        print(json.dumps(table, indent=2))
    else:
        print_grades(folder, table)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    options = parsed(build_parser().parse_args(argv))
    try:
        if isinstance(options, ExportOptions):
            return export(options.quality_n, options.quality_seed, options.out, options.force)
        assert isinstance(options, GradeOptions)
        return grade_folder(options.folder, options.json)
    except UsageError as exc:
        print(f"python -m agent.quality: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
