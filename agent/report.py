"""``python -m agent.report DIR [DIR ...]``: rebuild the report of an evidence folder, or compare folders.

With one folder, its ``summary.json``, plots, ``REPORT.md`` and ``REPORT.html`` are recomputed from its
``requests.jsonl`` and ``run.json`` (the same code a run ends with). ``--workload`` and ``--min-accuracy`` (and
``--min-quality``, ``--compare-models``) price the same evidence for other traffic: ``--workload`` sets only the
volume and decision keys (the others keep the run's values; one that would change the shape of the traffic sent is
refused, naming the run that would measure it, since the latency was measured for the run's shape); the evidence
folder is left as it was measured, and the re-priced report goes into a new folder holding a copy of its ``requests.jsonl``
and a ``run.json`` with the new options (and a note saying so), so the summary stays a function of
that folder's files. ``--out DIR`` is that new folder (without ``--workload``, a rebuilt copy); by
default a re-priced copy goes to ``DIR-repriced/<UTC timestamp>/``.

Given two or more folders, the first is the baseline and the others are compared with it, backend by backend,
with every difference larger than its 95% interval marked, answer quality included (with the paired difference
where the runs graded the same items). The folders are only read: each summary is computed from its records in
memory (priced for ``--workload`` and the floors when given), and the comparison is always written, as
``COMPARISON.md`` and ``COMPARISON.html``, into ``--out DIR`` or a new ``results/comparisons/<UTC timestamp>/``
(the command prints where).

Exit status: 0 when every report was rebuilt or the comparison written; 2 for bad input (one line, nothing written).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from kit import utc
from kit.command import EXIT_OK, EXIT_USAGE, Parser, UsageError
from kit.files import write_atomic

from kit.options import Option, Options

from .bench.command.declared import Declared
from .bench.command import evidence

if TYPE_CHECKING:
    from .bench.results.run import RunFile
    from .bench.results.summary import Summary

PLAIN_WIDTH = 120
COMPARISONS = Path("results") / "comparisons"
"""Where a comparison goes without ``--out`` (a new folder per comparison, named by its UTC time)."""


class ReportOptions(Options):
    """The options of ``python -m agent.report``: the folders, the options of ``python -m agent.run`` it shares
    (their declarations, with what they do here) and where its output goes."""

    folders = Option((), "evidence folders (results/<time>/)", nargs="+", type=Path, metavar="DIR")
    workload = Declared.workload.but(shown="", help="price the evidence for this traffic instead of the run's, in a "
                                                    "new folder (the evidence is left as measured)")
    min_accuracy = Declared.min_accuracy.but(shown="", help="tool-calling accuracy floor instead of the run's, in a "
                                                            "new folder like --workload")
    min_quality = Declared.min_quality.but(shown="", help="answer-quality floor instead of the run's (the workload "
                                                          "key min_quality is the same floor), in a new folder like "
                                                          "--workload")
    compare_models = Declared.compare_models.but(shown="", help="let backends serving another model compete, the "
                                                                "quality lane the arbiter (the run's choice "
                                                                "otherwise), in a new folder like --workload")
    out = Option(("--out",), "with one folder: the new folder for its rebuilt (or re-priced) report, with a copy of "
                 "its evidence (default with --workload: DIR-repriced/<UTC timestamp>/); with two or more: where "
                 f"COMPARISON.md and COMPARISON.html go (default: {COMPARISONS}/<UTC timestamp>/; never one of the "
                 "folders compared)", type=Path, metavar="DIR")


REPRICING = (ReportOptions.workload, ReportOptions.min_accuracy, ReportOptions.min_quality,
             ReportOptions.compare_models)
"""The options that price the evidence again (recorded in the copy's ``run.json`` under their names)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m agent.report",
        description="Rebuild REPORT.md, REPORT.html, the plots and summary.json of evidence folders from their "
                    "requests.jsonl and run.json; with two or more folders, compare them with the first.")
    ReportOptions.add_arguments(parser)
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


def _run_to_make(run: RunFile) -> str:
    """The options of ``python -m agent.run`` that measured ``run`` again, besides its workload."""
    options = run.options
    names = options.backends or [b.name for b in run.backends]
    out = [f"{Declared.backends.flag} {','.join(names)}"] if names else []
    levels = options.concurrency
    if levels:
        out.append(f"{Declared.concurrency.flag} {levels if isinstance(levels, str) else ','.join(map(str, levels))}")
    if options.slo_source == "option":
        limits = ",".join(f"{k}={v:g}" for k, v in options.slo.model_dump().items() if v is not None)
        out.append(f"{Declared.slo.flag} {limits}")
    if options.rate is not None:
        out.append(f"{Declared.rate.flag} {options.rate}")
    return "".join(f" {o}" for o in out)


def repriced_workload(run: RunFile, asked: Any, folder: Path) -> Any:
    """The run's traffic with the volume and decision keys of ``--workload`` (:func:`~.bench.analysis.traffic.repriced`).

    Raises:
        UsageError: ``--workload`` changes a key that shapes the traffic: the latency was measured for another
            shape; the message names the run that would measure it.
    """
    from .bench.analysis.traffic import ShapeChanged, Traffic, repriced

    try:
        return repriced(Traffic.from_dict(run.options.workload), asked)
    except ShapeChanged as exc:
        raise UsageError(f"{folder}: {exc}{_run_to_make(run)}") from None


def repricing(options: ReportOptions) -> bool:
    """Whether the evidence is priced for other options than its run's (``--workload``, the floors)."""
    return any(getattr(options, option.name) not in (None, False) for option in REPRICING)


def repriced_run(run: RunFile, options: ReportOptions, source: Path) -> RunFile:
    """``run`` with ``--workload``/``--min-accuracy``/``--min-quality``/``--compare-models`` in its options and a
    note saying where from (a workload with ``min_quality`` sets the quality floor too). A ``--workload`` changes
    only the volume and decision keys: the traffic's shape stays the one measured."""
    from .bench.analysis.traffic import default_traffic
    from .bench.results.run import RunWorkload

    asked = options.workload
    traffic = repriced_workload(run, asked, source) if asked is not None else default_traffic()
    floor = options.min_quality if options.min_quality is not None else traffic.min_quality
    values: dict[Option, Any] = {ReportOptions.workload: RunWorkload.of(traffic.record()),
                                 ReportOptions.min_accuracy: options.min_accuracy,
                                 ReportOptions.min_quality: floor, ReportOptions.compare_models: options.compare_models}
    changed = [option.name for option in REPRICING if getattr(options, option.name) not in (None, False)
               or (option is ReportOptions.min_quality and asked is not None and asked.min_quality is not None)]
    note = (f"Recommendation options ({', '.join(changed)}) set afterwards by python -m agent.report on "
            f"{utc.iso_millis()}; the evidence as measured is in {source}.")
    return run.but(options=run.options.but(**{o.name: v for o, v in values.items() if o.name in changed}),
                   notes=[*run.notes, note])


def checked_run(folder: Path, run: dict[str, Any]) -> RunFile:
    """``run`` read through its model (:class:`~.bench.results.run.RunFile`); UsageError for a hand-edited one."""
    from .bench.results.run import RunFile

    try:
        return RunFile.model_validate(run)
    except ValueError as exc:
        raise _not_rebuilt(folder, exc) from None


def copy_evidence(folder: Path, run: RunFile, dest: Path | None) -> Path:
    """A new evidence folder (``dest``, else ``<folder>-repriced/<UTC timestamp>/``) holding ``folder``'s
    records and ``run``; ``folder`` is not changed.

    Raises:
        UsageError: ``dest`` is a file or already holds a run's evidence.
    """
    try:
        target = evidence.claim_folder(dest) if dest is not None else \
            evidence.fresh_results_dir(folder.parent / f"{folder.name}-repriced")
    except (evidence.FolderInUse, OSError) as exc:
        raise UsageError(f"--out {dest}: {exc}") from None
    try:
        shutil.copyfile(folder / evidence.REQUESTS, target / evidence.REQUESTS)
        evidence.write_run(target / evidence.RUN, run)
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

    def __init__(self, options: ReportOptions) -> None:
        self.reprice = repricing(options)
        self.options = options
        self.made: list[tuple[Path, bool]] = []

    def target(self, folder: Path, run: dict[str, Any]) -> Path:
        """Where ``folder``'s report is rebuilt: the folder itself, or a new copy."""
        out = self.options.out
        if not self.reprice and out is None:
            return folder
        existed = out is not None and out.exists()
        checked = checked_run(folder, run)  # a hand-edited run.json: refused before a folder is made
        target = copy_evidence(folder, repriced_run(checked, self.options, folder) if self.reprice else checked, out)
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


def _check_arguments(args: ReportOptions) -> None:
    """What the arguments say together, before any folder is read."""
    if len(set(f.resolve() for f in args.folders)) != len(args.folders):
        raise UsageError("a folder is named twice")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a folder")
    if args.min_quality is not None and args.workload is not None and \
            args.workload.min_quality not in (None, args.min_quality):
        raise UsageError("--min-quality and the --workload key min_quality are the same floor with two values: "
                         "give one of them")
    if len(args.folders) > 1 and args.out is not None and any(
            args.out.resolve() == f.resolve() or f.resolve() in args.out.resolve().parents for f in args.folders):
        raise UsageError(f"--out {args.out}: that is in a folder compared, and a comparison never changes its "
                         "inputs: name another folder")


def summarized(folder: Path, run: dict[str, Any], args: ReportOptions) -> tuple[Summary, list[Any], Any]:
    """``folder``'s summary computed in memory (priced for ``--workload`` and the floors when given), its records
    and its checked ``run.json``; nothing is written. Raises UsageError for records or a ``run.json`` that cannot be
    read."""
    from .bench.analysis import summary

    records = evidence.read_requests(folder / evidence.REQUESTS)
    checked = checked_run(folder, run)
    if repricing(args):
        checked = repriced_run(checked, args, folder)
    try:
        return summary.summarize(records, checked), records, checked
    except (KeyError, TypeError, ValueError) as exc:
        raise _not_rebuilt(folder, exc) from None


def compare_folders(args: ReportOptions, runs: Sequence[dict[str, Any]]) -> tuple[str, Path]:
    """The comparison as Markdown, and the folder it was written to (``--out``, else a new one under
    :data:`COMPARISONS`): the folders compared are only read."""
    from .bench.analysis.blocks.quality_pairs import between_runs
    from .bench.presentation import compare, html_report

    loaded = [(str(folder), *summarized(folder, run, args)) for folder, run in zip(args.folders, runs)]
    base_label, _, base_records, base_run = loaded[0]
    quality = [between_runs((base_label, base_records, base_run), (label, records, run))
               for label, _, records, run in loaded[1:]]
    text = compare.render(compare.compare([(label, s) for label, s, _, _ in loaded], quality))
    out = comparison_folder(args.out)
    write_atomic(out / "COMPARISON.md", text)
    write_atomic(out / "COMPARISON.html", html_report.render(text, out, title="Comparison"))
    return text, out


def comparison_folder(given: Path | None) -> Path:
    """Where a comparison goes: ``--out`` (made if needed; never a folder holding a run's evidence), else a new
    ``results/comparisons/<UTC timestamp>/`` (``-2``, ``-3`` ... when that name is taken)."""
    if given is not None:
        found = [name for name in evidence.EVIDENCE if (given / name).exists()]
        if found:
            raise UsageError(f"--out {given}: holds a run's evidence ({', '.join(found)}): name another folder")
        folder = given
    else:
        stamp = utc.folder_stamp()
        names = itertools.chain([stamp], (f"{stamp}-{n}" for n in itertools.count(2)))
        folder = next(COMPARISONS / name for name in names if not (COMPARISONS / name).exists())
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {folder}: cannot create it ({exc.strerror or exc})") from None
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console
    from rich.markdown import Markdown

    from .bench.presentation.terminal import print_end

    args = ReportOptions.of(build_parser().parse_args(argv))
    errors = Console(stderr=True, highlight=False)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH)
    copies = Copies(args)
    try:
        _check_arguments(args)
        runs = [check_folder(f) for f in args.folders]
        if len(args.folders) > 1:
            text, out = compare_folders(args, runs)
        else:
            target = copies.target(args.folders[0], runs[0])
            built = rebuild(target)
    except UsageError as exc:
        copies.remove()
        errors.print(f"error: {exc}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    if len(args.folders) > 1:
        console.print(Markdown(text))
        console.print(f"Comparison: {out / 'COMPARISON.md'} and {out / 'COMPARISON.html'} (the folders compared are "
                      "left as they were)", markup=False, soft_wrap=True)
        return EXIT_OK
    if target != args.folders[0]:
        console.print(f"Copy of {args.folders[0]} rebuilt in {target} ({args.folders[0]} is left as measured)",
                      markup=False, soft_wrap=True)
    print_end(built, target, console)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
