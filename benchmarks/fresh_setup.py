"""Minutes from a fresh clone to a report: ``./scripts/setup``, then the README's first command.

Run: python3 benchmarks/fresh_setup.py [--source REPO] [--branch BRANCH] [--json FILE] [--keep]

What it does, in an empty temporary folder:

1. ``git clone`` of BRANCH (default: the branch checked out here) from SOURCE (default: this
   repository, over ``file://``, so the clone's own time is a local copy, not a network one);
2. ``./scripts/setup`` in the clone, with empty pip, uv and npm caches (fresh
   ``PIP_CACHE_DIR``, ``UV_CACHE_DIR`` and ``npm_config_cache``), no pip configuration files
   (``PIP_CONFIG_FILE`` set to the null device) and no ``PIP_FIND_LINKS``, so every package
   comes from the registries as on a fresh machine, not from a local wheel folder or a local
   index mirror that a development machine may have configured; each phase is timed from
   the ``setup:`` line that starts it;
3. ``.venv/bin/python -m agent.run`` in the clone with no AWS credentials (no ``AWS_*``
   variables, credential and config files pointed at nothing, instance metadata off), which
   starts the local rig and writes a report.

Goals (issue 12): setup under 3 minutes, setup plus the first command under 4, on a fresh
2-core machine. It prints the figures, the CPU seconds each step used (user + system, of
all its processes: on a shared machine the wall time also holds waiting for the cores), the
machine (cores, CPU, memory, load average before and after) and, with ``--json``, writes
them to FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
SETUP_GOAL_S = 180.0
FIRST_COMMAND_GOAL_S = 240.0


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    memory_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal:"))
    return {"cores": len(os.sched_getaffinity(0)), "cpu": cpu, "memory_gib": round(memory_kib / 2**20, 1),
            "os": platform.platform(), "python": platform.python_version(),
            "node": _version(["node", "--version"]), "npm": _version(["npm", "--version"])}


def _version(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "not found"


def pip_configuration() -> list[str]:
    """The names of this machine's pip configuration-file settings (``pip config list``), ignored for the run."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    return [line.split("=", 1)[0] for line in done.stdout.splitlines() if "=" in line and not line.startswith(":env:")]


def clean_env(scratch: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The environment of a fresh machine's shell, and what was removed from this one."""
    removed = {k: v for k, v in os.environ.items()
               if k.startswith(("AWS_", "PIP_FIND_LINKS", "PIP_CONFIG_FILE", "PIP_CONSTRAINT", "PIP_EXTRA_INDEX_URL",
                                "PIP_INDEX_URL", "UV_", "VIRTUAL_ENV", "PYTHONPATH", "npm_config_", "CI"))}
    env = {k: v for k, v in os.environ.items() if k not in removed}
    env.update(PIP_CACHE_DIR=str(scratch / "pip-cache"), UV_CACHE_DIR=str(scratch / "uv-cache"),
               PIP_CONFIG_FILE=os.devnull,
               npm_config_cache=str(scratch / "npm-cache"),
               AWS_SHARED_CREDENTIALS_FILE=str(scratch / "no-aws-credentials"),
               AWS_CONFIG_FILE=str(scratch / "no-aws-config"), AWS_EC2_METADATA_DISABLED="true")
    return env, removed


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_timed(command: list[str], cwd: Path, env: dict[str, str],
              log: Path) -> tuple[int, float, float, list[tuple[float, str]]]:
    """Run ``command``, echo and keep its output; its exit status, wall and CPU seconds, timed lines."""
    lines: list[tuple[float, str]] = []
    cpu_before = children_cpu_s()
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        assert process.stdout is not None
        for line in process.stdout:
            at = time.monotonic() - started
            lines.append((at, line.rstrip("\n")))
            out.write(f"{at:7.1f}s {line}")
            print(f"  {at:6.1f}s | {line}", end="", flush=True)
        code = process.wait()
    return code, time.monotonic() - started, children_cpu_s() - cpu_before, lines


def setup_phases(lines: list[tuple[float, str]], total_s: float) -> dict[str, float]:
    """Seconds per phase of scripts/setup, each from its ``setup: ...`` line to the next one."""
    marks = [(0.0, "(before the first line)")]
    marks += [(at, text.removeprefix("setup: ")) for at, text in lines if text.startswith("setup: ")]
    ends = [at for at, _ in marks[1:]] + [total_s]
    return {name: round(end - at, 1) for (at, name), end in zip(marks, ends) if name != "done" and end - at >= 0.1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(PROJECT_DIR), help="repository to clone (default: this one)")
    parser.add_argument("--branch", default=None, help="branch to clone (default: the one checked out here)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args()
    branch = args.branch or subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=args.source,
                                           capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", branch], cwd=args.source, capture_output=True, text=True,
                            check=True).stdout.strip()
    scratch = Path(tempfile.mkdtemp(prefix="fresh-setup-"))
    clone = scratch / "clone"
    env, removed = clean_env(scratch)
    record: dict = {"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "branch": branch,
                    "commit": commit, "machine": machine(), "load_average_before": os.getloadavg(),
                    "environment": {"removed": sorted(removed),
                                    "pip_find_links_was_set": "PIP_FIND_LINKS" in removed,
                                    "pip_configuration_ignored": pip_configuration(),
                                    "pip_cache": "empty (fresh PIP_CACHE_DIR, UV_CACHE_DIR)",
                                    "npm_cache": "empty (fresh npm_config_cache)",
                                    "aws": "no credentials; AWS_EC2_METADATA_DISABLED=true"}}
    try:
        print(f"fresh clone of {branch} ({commit}) into {clone}")
        started = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", "--single-branch", "--branch", branch,
                        f"file://{Path(args.source).resolve()}", str(clone)], check=True, env=env)
        record["clone_s"] = round(time.monotonic() - started, 1)

        print("./scripts/setup")
        code, setup_s, setup_cpu_s, lines = run_timed(["./scripts/setup"], clone, env, scratch / "setup.log")
        record.update(setup_exit=code, setup_s=round(setup_s, 1), setup_cpu_s=round(setup_cpu_s, 1),
                      setup_phases=setup_phases(lines, setup_s))
        if code != 0:
            print(f"setup failed (exit {code}); log: {scratch / 'setup.log'}", file=sys.stderr)
            return 1

        print(".venv/bin/python -m agent.run")
        code, run_s, run_cpu_s, _ = run_timed([".venv/bin/python", "-m", "agent.run"], clone, env,
                                              scratch / "run.log")
        reports = sorted((clone / "results").glob("*/REPORT.md"))
        record.update(first_command_exit=code, agent_run_s=round(run_s, 1), agent_run_cpu_s=round(run_cpu_s, 1),
                      report_written=bool(reports), readme_first_command_s=round(setup_s + run_s, 1))
        record["load_average_after"] = os.getloadavg()
        record["goals"] = {"setup_under_180_s": setup_s < SETUP_GOAL_S,
                           "first_command_under_240_s": setup_s + run_s < FIRST_COMMAND_GOAL_S}
    finally:
        if args.keep:
            print(f"kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    print(json.dumps(record, indent=2))
    if args.json:
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0 if record.get("first_command_exit") == 0 and record.get("report_written") else 1


if __name__ == "__main__":
    raise SystemExit(main())
