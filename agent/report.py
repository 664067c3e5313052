"""``python -m agent.report DIR [DIR ...]``: rebuild the report of evidence folders, and compare them.

Each folder's ``summary.json``, plots, ``REPORT.md`` and ``REPORT.html`` are recomputed from its
``requests.jsonl`` and ``run.json`` (the same code a run ends with). ``--workload`` and
``--min-accuracy`` price the same evidence for other traffic: they are written into each folder's
``run.json`` (with a note saying so) so the summary stays a function of the folder's files. Given
two or more folders, the first is the baseline and the others are compared with it, backend by
backend, with every difference larger than its 95% interval marked; ``--out DIR`` also writes the
comparison as ``COMPARISON.md`` and ``COMPARISON.html``.

Exit status: 0 when every report was rebuilt; 2 for bad input (one line, nothing written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from rigs import utc

from .bench.command import evidence
from .bench.analysis.recommend import options_record, parse_accuracy, workload_option

EXIT_OK, EXIT_USAGE = 0, 2


class UsageError(Exception):
    """An argument or a folder that cannot be used; the message is one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent.report",
        description="Rebuild REPORT.md, REPORT.html, the plots and summary.json of evidence folders from their "
                    "requests.jsonl and run.json; with two or more folders, compare them with the first.")
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="evidence folders (results/<time>/)")
    parser.add_argument("--workload", type=workload_option, metavar="SPEC|FILE",
                        help="price the evidence for this traffic instead of the run's (written into run.json)")
    parser.add_argument("--min-accuracy", type=parse_accuracy, metavar="SHARE",
                        help="tool-calling accuracy floor instead of the run's (written into run.json)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="also write COMPARISON.md and COMPARISON.html here")
    return parser


def check_folder(folder: Path) -> dict[str, Any]:
    """The folder's ``run.json``; UsageError when the folder is not an evidence folder."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder")
    run_path = folder / evidence.RUN
    if not run_path.is_file() or not (folder / evidence.REQUESTS).is_file():
        raise UsageError(f"{folder}: not an evidence folder (it needs {evidence.RUN} and {evidence.REQUESTS}, "
                         "as python -m agent.run writes them)")
    try:
        run = json.loads(run_path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{run_path}: not readable JSON ({exc})") from None
    if not isinstance(run, dict) or not isinstance(run.get("backends"), list):
        raise UsageError(f"{run_path}: not a run.json written by python -m agent.run (no backends list)")
    return run


def set_options(folder: Path, run: dict[str, Any], args: argparse.Namespace) -> None:
    """Record ``--workload``/``--min-accuracy`` in the folder's run.json, with a note."""
    record = options_record(args)
    options = run.setdefault("options", {})
    changed = []
    if args.workload is not None:
        options["workload"] = record["workload"]
        changed.append("workload")
    if args.min_accuracy is not None:
        options["min_accuracy"] = record["min_accuracy"]
        changed.append("min_accuracy")
    run.setdefault("notes", []).append(f"Recommendation options ({', '.join(changed)}) set afterwards by "
                                       f"python -m agent.report on {utc.iso_millis()}.")
    evidence.write_json(folder / evidence.RUN, run)


def main(argv: Sequence[str] | None = None) -> int:
    import jsonschema
    from rich.console import Console
    from rich.markdown import Markdown

    from .bench.presentation import compare, html_report
    from .bench.command.runner import write_outputs
    from .bench.presentation.terminal import print_end

    args = build_parser().parse_args(argv)
    errors = Console(stderr=True, highlight=False)
    try:
        if len(set(f.resolve() for f in args.folders)) != len(args.folders):
            raise UsageError("a folder is named twice")
        if args.out is not None and args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {args.out}: exists and is not a folder")
        runs = [check_folder(f) for f in args.folders]
    except UsageError as exc:
        errors.print(f"error: {exc}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    summaries = []
    for folder, run in zip(args.folders, runs):
        if args.workload is not None or args.min_accuracy is not None:
            set_options(folder, run, args)
        try:
            summaries.append((str(folder), write_outputs(folder)))
        except (KeyError, TypeError, ValueError, jsonschema.ValidationError) as exc:  # a hand-edited run.json
            errors.print(f"error: {folder}: the report could not be rebuilt ({type(exc).__name__}: {exc})"[:400],
                         markup=False, soft_wrap=True)
            return EXIT_USAGE
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    if len(summaries) == 1:
        print_end(summaries[0][1], args.folders[0], console)
        return EXIT_OK
    for folder in args.folders:
        console.print(f"Rebuilt: {folder / evidence.REPORT} and {folder / html_report.FILE}", markup=False,
                      soft_wrap=True)
    text = compare.render(compare.compare(summaries))
    console.print(Markdown(text))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        evidence.write_atomic(args.out / "COMPARISON.md", text)
        evidence.write_atomic(args.out / "COMPARISON.html", html_report.render(text, args.out, title="Comparison"))
        console.print(f"Comparison: {args.out / 'COMPARISON.md'} and {args.out / 'COMPARISON.html'}", markup=False,
                      soft_wrap=True)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
