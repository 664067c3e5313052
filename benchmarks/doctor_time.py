"""How long `python -m rigs doctor` takes against moto's server, and how fast a command gives up on AWS it cannot reach.

Run: .venv/bin/python benchmarks/doctor_time.py [--repeats N]

1. moto's server (tests/e2e/moto_server.py, the catalog's AMI parameters seeded, the three rig
   regions bootstrapped) answers `python -m rigs doctor` for every rig in its regions, and for
   every rig with `--regions` naming all four. Goal: under 60 s, one screen (the table's lines
   at 160 columns are counted). moto has no Service Quotas for EC2 and answers 500 for the
   others, so those calls fail fast there; on AWS they answer.
2. AWS out of reach, four ways, each timed for `python -m rigs doctor`, `python -m rigs status`,
   `python -m agent.run --backends bedrock` and `./scripts/cdk deploy`:
   - refused: AWS_ENDPOINT_URL at a loopback port where nothing listens;
   - no answer: a loopback listener that accepts and never replies (read timeouts);
   - dropped: a listener whose backlog is full, so connection attempts time out (a firewall);
   - no DNS: the real AWS endpoint on this machine, which has no network (names do not resolve).
   Goal: each answers in under 15 s with one line and exit 4.

Wall time of the whole command, Python's start included; medians of the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

PROJECT_DIR = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BASE_ENV = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
            "COLUMNS": "160", "CI": "true"}
BASE_ENV.pop("AWS_PROFILE", None)
BASE_ENV.pop("AWS_DEFAULT_REGION", None)
BASE_ENV.pop("AWS_ENDPOINT_URL", None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def moto_server() -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen([PYTHON, str(PROJECT_DIR / "tests" / "e2e" / "moto_server.py"), "--port", str(port),
                               "--stop-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, cwd=PROJECT_DIR)
    try:
        line = server.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"moto server did not start: {line!r}")
        yield f"http://localhost:{port}"
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def bootstrap(endpoint: str, regions: list[str]) -> None:
    """What `cdk bootstrap` leaves that doctor reads: the CDKToolkit stack and the version parameter."""
    import boto3

    for region in regions:
        kwargs = dict(region_name=region, endpoint_url=endpoint, aws_access_key_id="testing",
                      aws_secret_access_key="testing")
        boto3.client("cloudformation", **kwargs).create_stack(StackName="CDKToolkit", TemplateBody=json.dumps(
            {"Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}}))
        boto3.client("ssm", **kwargs).put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Type="String",
                                                    Value="30")


def timed(command: list[str], env: dict[str, str], timeout: float = 300) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - started, done


class Silent:
    """A loopback listener that never answers.

    ``accepting``: it accepts every connection and holds it open (reads time out). Otherwise its
    backlog is filled at once and never drained, so new connection attempts are dropped (connects
    time out), as behind a firewall that drops packets.
    """

    def __init__(self, accepting: bool) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0 if not accepting else 16)
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        if accepting:
            self.sock.settimeout(0.2)
            threading.Thread(target=self._hold, daemon=True).start()
        else:
            for _ in range(4):
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(self.sock.getsockname())
                self.held.append(filler)
            time.sleep(0.2)

    def _hold(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        self._stop.set()
        for sock in [*self.held, self.sock]:
            sock.close()


COMMANDS = {
    "rigs doctor": [PYTHON, "-m", "rigs", "doctor"],
    "rigs status": [PYTHON, "-m", "rigs", "status"],
    "agent.run --backends bedrock": [PYTHON, "-m", "agent.run", "--backends", "bedrock"],
    "scripts/cdk deploy": [str(PROJECT_DIR / "scripts" / "cdk"), "deploy", "InferenceG6"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each case (default 3)")
    args = parser.parse_args()

    print("1. doctor against moto's server")
    with moto_server() as endpoint:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30)
        bootstrap(endpoint, ["us-east-1", "us-east-2", "us-west-2"])
        env = {**BASE_ENV, "AWS_ENDPOINT_URL": endpoint}
        for name, extra in (("every rig, catalog regions", []),
                            ("every rig, all four regions", ["--regions", "us-east-1,us-east-2,us-west-1,us-west-2"])):
            timed([PYTHON, "-m", "rigs", "doctor", *extra], env)  # warm the page cache and moto's lazy backends
            samples, lines, codes = [], 0, set()
            for _ in range(args.repeats):
                seconds, done = timed([PYTHON, "-m", "rigs", "doctor", *extra], env)
                samples.append(seconds)
                lines, codes = len(done.stdout.splitlines()), codes | {done.returncode}
            median = statistics.median(samples)
            print(f"  {name:30s} median {median:5.1f} s (min {min(samples):.1f}, max {max(samples):.1f}, "
                  f"n={len(samples)}); {lines} lines at 160 columns; exit {sorted(codes)}; "
                  f"goal < 60 s: {'met' if median < 60 else 'NOT met'}")

    print("2. AWS out of reach (goal: under 15 s, one line, exit 4)")
    with ExitStack() as stack:
        silent = Silent(accepting=True)
        dropped = Silent(accepting=False)
        stack.callback(silent.close)
        stack.callback(dropped.close)
        cases = {"refused": {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"},
                 "no answer": {"AWS_ENDPOINT_URL": silent.url},
                 "dropped": {"AWS_ENDPOINT_URL": dropped.url},
                 "no DNS (offline)": {}}
        for case, extra in cases.items():
            for name, command in COMMANDS.items():
                samples, codes, last = [], set(), ""
                for _ in range(args.repeats):
                    seconds, done = timed(command, {**BASE_ENV, **extra})
                    samples.append(seconds)
                    codes.add(done.returncode)
                    said = [" ".join(line.strip("│ ").split()) for line in (done.stderr + done.stdout).splitlines()
                            if "cannot reach" in line or line.startswith("error:")]
                    last = said[0] if said else (done.stderr.strip().splitlines() or [""])[-1]
                median = statistics.median(samples)
                print(f"  {case:17s} {name:29s} median {median:5.1f} s (max {max(samples):.1f}); exit {sorted(codes)}; "
                      f"{'met' if max(samples) < 15 else 'NOT met'}")
                print(f"      {last[:150]}")
    print(f"machine: {os.cpu_count()} cores; other processes may share them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
