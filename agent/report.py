"""``python -m agent.report DIR [DIR ...]``: rebuild the report of evidence folders, and compare them.

Each folder's ``summary.json``, plots, ``REPORT.md`` and ``REPORT.html`` are recomputed from its
``requests.jsonl`` and ``run.json`` (the same code a run ends with). ``--workload`` and
``--min-accuracy`` (and ``--min-quality``) price the same evidence for other traffic: ``--workload`` sets only the
volume and decision keys (the others keep the run's values; one that would change the shape of the traffic sent is
refused, naming the run that would measure it, since the latency was measured for the run's shape); the evidence
folder is left as it was measured, and the re-priced report goes into a new folder holding a copy of its ``requests.jsonl``
and a ``run.json`` with the new options (and a note saying so), so the summary stays a function of
that folder's files. With one folder, ``--out DIR`` is that new folder (without ``--workload``, a
rebuilt copy); by default a re-priced copy goes to ``DIR-repriced/<UTC timestamp>/``. Given two or
more folders, the first is the baseline and the others are compared with it, backend by backend,
with every difference larger than its 95% interval marked; ``--out DIR`` then also writes the
comparison as ``COMPARISON.md`` and ``COMPARISON.html``.

Exit status: 0 when every report was rebuilt; 2 for bad input (one line, nothing written).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from rigs import utc
from rigs.command import EXIT_OK, EXIT_USAGE, Parser, UsageError
from rigs.files import write_atomic

from .bench.command.declared import OPTION
from .bench.command.options import recommendation_record
from .bench.command import evidence

if TYPE_CHECKING:
    from .bench.results.summary import Summary

PLAIN_WIDTH = 120
REPRICING = {
    "workload": "price the evidence for this traffic instead of the run's, in a new folder (the evidence is left as "
                "measured)",
    "min_accuracy": "tool-calling accuracy floor instead of the run's, in a new folder like --workload",
    "min_quality": "answer-quality floor instead of the run's (the workload key min_quality is the same floor), in a "
                   "new folder like --workload",
}
"""The options of ``python -m agent.run`` this command shares (their declarations), with what they do here."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m agent.report",
        description="Rebuild REPORT.md, REPORT.html, the plots and summary.json of evidence folders from their "
                    "requests.jsonl and run.json; with two or more folders, compare them with the first.")
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="evidence folders (results/<time>/)")
    for name, help in REPRICING.items():
        OPTION[name].add_to(parser, help)
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="with one folder: the new folder for its rebuilt (or re-priced) report, with a copy of "
                             "its evidence (default with --workload: DIR-repriced/<UTC timestamp>/); with two or "
                             "more: where COMPARISON.md and COMPARISON.html go")
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


def _run_to_make(run: dict[str, Any]) -> str:
    """The options of ``python -m agent.run`` that measured ``run`` again, besides its workload."""
    options = run.get("options") or {}
    names = options.get("backends") or [b.get("name") for b in run.get("backends") or [] if b.get("name")]
    out = [f"--backends {','.join(names)}"] if names else []
    levels = options.get("concurrency")
    if levels:
        out.append(f"--concurrency {levels if isinstance(levels, str) else ','.join(map(str, levels))}")
    if options.get("slo_source") == "option":
        limits = ",".join(f"{k}={v:g}" for k, v in (options.get("slo") or {}).items() if v is not None)
        out.append(f"--slo {limits}")
    if options.get("rate") is not None:
        out.append(f"--rate {options['rate']}")
    return "".join(f" {o}" for o in out)


def repriced_workload(run: dict[str, Any], asked: Any, folder: Path) -> Any:
    """The run's traffic with the volume and decision keys of ``--workload`` (:func:`~.bench.analysis.traffic.repriced`).

    Raises:
        UsageError: ``--workload`` changes a key that shapes the traffic: the latency was measured for another
            shape; the message names the run that would measure it.
    """
    from .bench.analysis.traffic import ShapeChanged, Traffic, repriced

    try:
        return repriced(Traffic.from_dict((run.get("options") or {}).get("workload")), asked)
    except ShapeChanged as exc:
        raise UsageError(f"{folder}: {exc}{_run_to_make(run)}") from None


def repriced_options(run: dict[str, Any], args: argparse.Namespace, source: Path) -> dict[str, Any]:
    """``run`` with ``--workload``/``--min-accuracy``/``--min-quality`` in its options and a note saying where
    from (a workload with ``min_quality`` sets the quality floor too). A ``--workload`` changes only the volume and
    decision keys: the traffic's shape stays the one measured."""
    floor_in_workload = args.workload is not None and args.workload.min_quality is not None
    if args.workload is not None:
        args = argparse.Namespace(**{**vars(args), "workload": repriced_workload(run, args.workload, source)})
    record = recommendation_record(args)
    changed = [OPTION[name].record for name in REPRICING
               if getattr(args, name) is not None or (name == "min_quality" and floor_in_workload)]
    options = {**(run.get("options") or {}), **{key: record[key] for key in changed}}
    note = (f"Recommendation options ({', '.join(changed)}) set afterwards by python -m agent.report on "
            f"{utc.iso_millis()}; the evidence as measured is in {source}.")
    return {**run, "options": options, "notes": [*(run.get("notes") or []), note]}


def copy_evidence(folder: Path, run: dict[str, Any], dest: Path | None) -> Path:
    """A new evidence folder (``dest``, else ``<folder>-repriced/<UTC timestamp>/``) holding ``folder``'s
    records and ``run``; ``folder`` is not changed.

    Raises:
        UsageError: ``dest`` is a file or already holds a run's evidence.
    """
    from .bench.results.run import RunFile

    try:
        checked = RunFile.model_validate(run)  # a hand-edited run.json: refused before a folder is made
    except ValueError as exc:
        raise _not_rebuilt(folder, exc) from None
    try:
        target = evidence.claim_folder(dest) if dest is not None else \
            evidence.fresh_results_dir(folder.parent / f"{folder.name}-repriced")
    except (evidence.FolderInUse, OSError) as exc:
        raise UsageError(f"--out {dest}: {exc}") from None
    try:
        shutil.copyfile(folder / evidence.REQUESTS, target / evidence.REQUESTS)
        evidence.write_run(target / evidence.RUN, checked.as_json())
    finally:
        evidence.end_claim(target)
    return target


def _one_line(exc: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'run.json'}: {first['msg']}"
    return " ".join(str(exc).split())


def rebuild(folder: Path) -> Summary:
    """Rebuild one folder's outputs.

    Raises:
        UsageError: the records or ``run.json`` cannot be read (a hand-edited file).
    """
    from .bench.command.runner import write_outputs

    try:
        return write_outputs(folder)
    except (KeyError, TypeError, ValueError) as exc:
        raise _not_rebuilt(folder, exc) from None


def _not_rebuilt(folder: Path, exc: Exception) -> UsageError:
    return UsageError(f"{folder}: the report could not be rebuilt ({type(exc).__name__}: {_one_line(exc)})"[:400])


class Copies:
    """The folders this command writes instead of the evidence (``--out``, re-priced copies), removed
    again when the command fails, so a failed command leaves nothing behind."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.reprice = args.workload is not None or args.min_accuracy is not None or args.min_quality is not None
        self.args = args
        self.made: list[tuple[Path, bool]] = []

    def target(self, folder: Path, run: dict[str, Any]) -> Path:
        """Where ``folder``'s report is rebuilt: the folder itself, or a new copy."""
        out = self.args.out if len(self.args.folders) == 1 else None
        if not self.reprice and out is None:
            return folder
        existed = out is not None and out.exists()
        target = copy_evidence(folder, repriced_options(run, self.args, folder) if self.reprice else run, out)
        self.made.append((target, existed))
        return target

    def remove(self) -> None:
        for path, existed in self.made:
            for child in (path.iterdir() if existed else ()):
                child.unlink() if child.is_file() else shutil.rmtree(child, ignore_errors=True)
            if not existed:
                shutil.rmtree(path, ignore_errors=True)
                if path.parent.name.endswith("-repriced") and not any(path.parent.iterdir()):
                    path.parent.rmdir()


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console
    from rich.markdown import Markdown

    from .bench.presentation import compare, html_report
    from .bench.presentation.terminal import print_end

    args = build_parser().parse_args(argv)
    errors = Console(stderr=True, highlight=False)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH)
    copies = Copies(args)
    try:
        if len(set(f.resolve() for f in args.folders)) != len(args.folders):
            raise UsageError("a folder is named twice")
        if args.out is not None and args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {args.out}: exists and is not a folder")
        if args.min_quality is not None and args.workload is not None and \
                args.workload.min_quality not in (None, args.min_quality):
            raise UsageError("--min-quality and the --workload key min_quality are the same floor with two values: "
                             "give one of them")
        runs = [check_folder(f) for f in args.folders]
        summaries = []
        for folder, run in zip(args.folders, runs):
            target = copies.target(folder, run)
            summaries.append((str(target), rebuild(target), target, folder))
    except UsageError as exc:
        copies.remove()
        errors.print(f"error: {exc}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    for label, _, target, folder in summaries:
        if target != folder:
            console.print(f"Copy of {folder} rebuilt in {target} ({folder} is left as measured)", markup=False,
                          soft_wrap=True)
    if len(summaries) == 1:
        print_end(summaries[0][1], summaries[0][2], console)
        return EXIT_OK
    for _, _, target, _ in summaries:
        console.print(f"Rebuilt: {target / evidence.REPORT} and {target / html_report.FILE}", markup=False,
                      soft_wrap=True)
    text = compare.render(compare.compare([(label, s) for label, s, _, _ in summaries]))
    console.print(Markdown(text))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out / "COMPARISON.md", text)
        write_atomic(args.out / "COMPARISON.html", html_report.render(text, args.out, title="Comparison"))
        console.print(f"Comparison: {args.out / 'COMPARISON.md'} and {args.out / 'COMPARISON.html'}", markup=False,
                      soft_wrap=True)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
