"""Synth time of the whole app against an empty CDK app, on this machine, through the real CLI.

Run: .venv/bin/python benchmarks/synth_time.py [--repeats N]
Both apps run with the same Python, the same CLI and the same offline settings; the
ratio (goal: under 1.5x) is what the app itself adds to the CDK's own start-up cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
CDK = PROJECT_DIR / "scripts" / "cdk"
EMPTY_APP = "import aws_cdk as cdk\napp = cdk.App({options})\ncdk.Stack(app, \"Empty\")\napp.synth()\n"


def time_synth(app_command: str, outdir: Path) -> float:
    env = {**os.environ, "CDK_DISABLE_VERSION_CHECK": "1", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    started = time.perf_counter()
    subprocess.run([str(CDK), "synth", "-q", "--app", app_command, "--output", str(outdir)],
                   cwd=PROJECT_DIR, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed synths of each app (default 5)")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as scratch:
        scratch_dir = Path(scratch)
        plain = scratch_dir / "empty_app.py"
        plain.write_text(EMPTY_APP.format(options=""))
        lean = scratch_dir / "empty_app_lean.py"
        lean.write_text(EMPTY_APP.format(options="builtin_cloud_formation_validation=False"))
        # The app turns the CDK's built-in template validation off (cfn-lint runs in the
        # tests instead), so the like-for-like baseline is an empty app with it off too.
        apps = {"empty CDK app": f"{python} {plain}",
                "empty, validation off": f"{python} {lean}",
                "aws-inference app": f"{python} app.py"}
        for command in apps.values():  # warm the jsii cache and the OS page cache once
            time_synth(command, scratch_dir / "warm")
        times: dict[str, list[float]] = {name: [] for name in apps}
        for repeat in range(args.repeats):  # interleaved, so drift lands on both
            for name, command in apps.items():
                times[name].append(time_synth(command, scratch_dir / f"{repeat}-{len(times[name])}"))
    for name, samples in times.items():
        print(f"{name:22s} median {statistics.median(samples):6.2f} s  "
              f"(min {min(samples):.2f}, max {max(samples):.2f}, n={len(samples)})")
    app_median = statistics.median(times["aws-inference app"])
    for baseline in ("empty, validation off", "empty CDK app"):
        ratio = app_median / statistics.median(times[baseline])
        print(f"ratio app / {baseline}: {ratio:.2f}x  (goal < 1.5x: {'met' if ratio < 1.5 else 'NOT met'})")
    print(f"machine: {os.cpu_count()} cores; other processes may share them, so read small gaps as noise")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
