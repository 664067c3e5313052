"""The benchmark's options in a rehearsal (``--bench-options``), read by the benchmark's own parser.

``rigs`` never imports the agent, so the rehearsal asks ``python -m agent.run`` itself: its hidden
``--parsed-options`` prints which options were given and the options the run would use (JSON), and
``--list --backends local`` then checks the options the run will get as the real run would (a bad
value, a ``--workload`` file), listing only the local rig: no AWS call, no server started, nothing
written. Either exits 2 with one line for a bad option. Nothing here reads the command line by hand.
The same answer gives the context the rigs are served at with ``--workload`` (:func:`server_context`).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kit.command import UsageError

RESERVED = ("--backends", "--out", "--stand-in", "--tunnel-limit", "--local", "--list")
"""The benchmark's options the rehearsal sets itself."""
LANE_DEMOS = ("--demos", "default,quality")
"""What the rehearsal adds to the benchmark's options when they name no parts: the default parts and the
quality lane."""
OFFLINE_LANE_ITEMS = 30
"""Offline, one CPU toy model plays every rig: the lane's flow rehearsed on 30 items each, unless
``--bench-options`` give ``--quality-n``."""
WORKLOAD = "--workload"
"""The benchmark's option the rehearsal's ``--workload`` is passed as."""
CHECK_S = 60.0
"""How long each question to the benchmark's parser may take (it answers in about a second)."""


@dataclass(frozen=True, slots=True)
class RehearsalBench:
    """What the benchmark is run with: its options (the quality lane added), and the lane's items per backend."""

    words: tuple[str, ...]
    lane_items: int | None
    """None when the quality lane is not run."""


def split(text: str) -> list[str]:
    """``--bench-options "--runs 1 --demos chat"`` as words; UsageError for a quote left open."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"--bench-options {text!r}: {exc}") from None


BENCH_OPTIONS = ("--bench-options", "them", "; nothing created")
"""What a refusal of the rehearsal's benchmark options names: the option, what it refuses, and the end of the line."""


def _agent(words: Sequence[str], asked: tuple[str, str, str] = BENCH_OPTIONS) -> subprocess.CompletedProcess:
    """``python -m agent.run WORDS``, its output captured; UsageError, naming what was ``asked`` (the option, ``it``
    or ``them``, the end of the line), when it refuses them or does not answer."""
    option, them, end = asked
    command = [sys.executable, "-m", "agent.run", *words]
    try:
        done = subprocess.run(command, cwd=os.getcwd(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=CHECK_S, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"{option}: `python -m agent.run` did not check {them} within {CHECK_S:g} s{end}") from None
    if done.returncode == 0:
        return done
    said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    reason = said[-1].removeprefix("python -m agent.run: ").removeprefix("error: ").removesuffix(" (see --help)") \
        if said else f"exit status {done.returncode}"
    raise UsageError(f"{option}: the benchmark refuses {them}: {reason} (see `python -m agent.run --help`){end}")


def parsed(words: Sequence[str], asked: tuple[str, str, str] = BENCH_OPTIONS) -> dict[str, Any]:
    """The benchmark parser's answer for ``words``: ``given`` (the options named, by their long name), ``options``
    (every option the run would use, defaults in) and the context a server needs for them
    (``workload_context_tokens``, ``server_context_tokens``)."""
    return json.loads(_agent(["--parsed-options", *words], asked).stdout)


def server_context(text: str, workload: str) -> int | None:
    """The tokens a rig benchmarked with ``--bench-options`` and the rehearsal's ``--workload`` should hold, as the
    benchmark answers (``server_context_tokens``: the workload's longest request, prompt and output, with room for
    the agent parts that run; None for the reference's one prompt). UsageError for a workload it refuses."""
    return parsed([*split(text), WORKLOAD, workload],
                  ("--bench-options and --workload", "them", "; nothing created"))["server_context_tokens"]


def workload_context(workload: str) -> int | None:
    """The workload's own context as the benchmark counts it (``workload_context_tokens``: its longest request,
    prompt and output, rounded up; None for the reference's one prompt). UsageError for a workload it refuses."""
    return parsed([WORKLOAD, workload], (f"--workload {workload}", "it", ""))["workload_context_tokens"]


def command(backends: Sequence[str], out: Path, stand_in: str | None, profile: str | None,
            words: Sequence[str], tunnel_limit: float | None = None) -> list[str]:
    """``python -m agent.run`` as the rehearsal runs its benchmark: on ``backends``, its evidence in ``out``, the
    rigs played by ``stand_in`` (offline, its relays shaped to ``tunnel_limit`` bytes a second when given), with
    ``profile`` and the benchmark's options (``words``)."""
    line = [sys.executable, "-m", "agent.run", "--backends", ",".join(backends), "--out", str(out)]
    if stand_in:
        line += ["--stand-in", stand_in]
    if stand_in and tunnel_limit:
        line += ["--tunnel-limit", f"{tunnel_limit:g}"]
    if profile:
        line += ["--profile", profile]
    return line + list(words)


def prepare(text: str, offline: bool, workload: str | None = None) -> RehearsalBench:
    """The benchmark's options from ``--bench-options`` (and the rehearsal's ``--workload``, passed on as the
    benchmark's own), checked by the benchmark before anything is created.

    UsageError for an option the rehearsal sets itself, a workload given twice, and for any option the benchmark
    refuses (a workload file it cannot read included). Unless they name the parts, the quality lane is added
    (:data:`LANE_DEMOS`; offline, :data:`OFFLINE_LANE_ITEMS` items unless ``--quality-n`` is given).
    """
    words = split(text)
    answer = parsed(words)
    given, options = answer["given"], answer["options"]
    taken = [flag for flag in RESERVED if flag in given]
    if taken:
        raise UsageError(f"--bench-options: {', '.join(taken)} is set by the rehearsal itself; leave it out")
    if workload is not None:
        if WORKLOAD in given:
            raise UsageError(f"--workload {workload} and --bench-options' {WORKLOAD}: give the workload once")
        words += [WORKLOAD, workload]
    items = options["quality_n"] if "quality" in options["demos"] else None
    if "--demos" not in given:
        words += LANE_DEMOS
        items = options["quality_n"]
        if offline and "--quality-n" not in given:
            words += ["--quality-n", str(OFFLINE_LANE_ITEMS)]
            items = OFFLINE_LANE_ITEMS
    _agent(["--list", "--backends", "local", *words])
    return RehearsalBench(tuple(words), items)
