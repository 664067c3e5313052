"""Running a load job on an EC2 rig itself (``--load-from rig``): the rig's load generator asset and ``run_load.sh``
(:mod:`rigs.userdata.load_generator`), through SSM Run Command, the job and its results through the base stack's
bucket; or, offline, the very same zip and script run on this machine.

:class:`SsmRigCommand` puts the job in the bucket (``load/<run>/<n>/job.json``), sends ``AWS-RunShellScript`` with
the script under its ``LOAD_*`` lines (:func:`rigs.userdata.load_generator.command`): pre-signed URLs to get the load generator (from the CDK asset bucket) and the
job and to put the results, so the instance role needs no S3 permission of its own. It polls the invocation until it
ends (boto3's ``command_executed`` waiter cannot be stopped part-way, and a Ctrl-C must end the wait and cancel the
command: :meth:`stop`), reads the results back, and deletes both objects (the bucket's lifecycle rule removes any a
killed run leaves). :class:`LocalRigCommand` runs the script here with ``file://`` URLs and this Python in
place of the server image's, the load sent straight to the server (not through a forward). Both return the load
generator's result lines (:mod:`agent.bench.parts.load_generator`).
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from kit import processes
from kit.waiting import WaitTimeout, poll_until
from rigs import aws
from rigs.userdata import load_generator

logger = logging.getLogger(__name__)

PREFIX = "load"
"""The key prefix of jobs and results in the base stack's bucket (its lifecycle rule expires it)."""
SEND_TIMEOUT_S = 120
"""How long Run Command may wait for the instance's SSM agent to pick the command up."""
LOCAL_WHERE = "this machine, in place of the rig's Run Command (offline stand-in)"
SLACK_S = 120.0
"""What a job may take beyond its requests' own timeout: the fetches, unpacking, starting the image's Python."""


class RunCommandError(RuntimeError):
    """A load job that did not come back: what the instance said, and what to check."""


class RigCommand(Protocol):
    """Runs one load job where the rig's server is; returns the load generator's result lines."""

    where: str
    """Where the load comes from, for the report (``i-0abc on g6.xlarge via SSM Run Command``)."""

    def run(self, job: dict[str, Any]) -> list[dict[str, Any]]: ...

    def stop(self) -> None:
        """End a :meth:`run` in progress (from another thread): the job is cancelled, nothing of it left running."""
        ...


POLL_S = 1.0
"""How often a job's end is looked for (and a stop noticed)."""
TERMINAL = frozenset({"Success", "Failed", "Cancelled", "TimedOut", "Cancelling"})
"""Run Command invocation statuses after which nothing more happens on the instance."""


def _lines(text: str) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise RunCommandError(f"the load generator's results are not JSON lines ({exc})") from None


def job_seconds(job: dict[str, Any]) -> float:
    """The longest a job may take: a closed job of N requests with c in flight runs ceil(N / c) rounds, each at most
    one request's timeout; an open job, its last offset and one timeout; either with :data:`SLACK_S` more."""
    bodies, width = len(job["bodies"]), max(1, int(job.get("concurrency") or 1))
    rounds = 1 if job["mode"] == "open" else math.ceil(bodies / width)
    return float(job["timeout_s"]) * rounds + max(job.get("offsets_s") or [0.0]) + SLACK_S


@dataclass
class LocalRigCommand:
    """The offline stand-in of Run Command: ``run_load.sh`` and the load generator's zip, run on this machine."""

    where: str = LOCAL_WHERE
    stopping: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        self.stopping.set()

    def run(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory(prefix="load-") as folder:
            here = Path(folder)
            (here / "load_generator.zip").write_bytes(load_generator.bundle())
            (here / "job.json").write_text(json.dumps(job), encoding="utf-8")
            text = load_generator.command({
                "LOAD_GENERATOR_URL": (here / "load_generator.zip").as_uri(),
                "LOAD_GENERATOR_SHA256": load_generator.sha256(), "LOAD_JOB_URL": (here / "job.json").as_uri(),
                "LOAD_RESULT_URL": (here / "out.jsonl").as_uri(), "LOAD_CONTAINER": "stand-in",
                "LOAD_PYTHON": sys.executable})
            script = here / "run_load.sh"
            script.write_text(text, encoding="utf-8")
            process = processes.spawn(["bash", str(script)], log=subprocess.PIPE, stdout=subprocess.DEVNULL)
            try:
                poll_until(lambda: self._ended(process), timeout_s=job_seconds(job), interval_s=POLL_S / 10,
                           what="the load job")
            except WaitTimeout as exc:
                raise RunCommandError(str(exc)) from None
            finally:
                processes.stop(process)
            err = process.stderr.read().decode() if process.stderr else ""
            if process.returncode != 0:
                raise RunCommandError(f"run_load.sh exited {process.returncode}: {err[-500:].strip()}")
            return _lines((here / "out.jsonl").read_text(encoding="utf-8"))

    def _ended(self, process: subprocess.Popen) -> int | None:
        if self.stopping.is_set():
            raise RunCommandError("the load job was stopped")
        return process.poll()


@dataclass
class SsmRigCommand:
    """Run Command on the rig's instance; the job and results in the base stack's bucket."""

    instance_id: str
    region: str
    bucket: str
    generator_url: str
    """``s3://bucket/key`` of the rig's load generator asset (a rig stack output)."""
    generator_sha256: str
    container: str
    run_id: str
    where: str = ""
    session: Any = None
    stopping: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        self.stopping.set()

    def __post_init__(self) -> None:
        self.where = self.where or f"{self.instance_id} itself, via SSM Run Command"
        self.session = self.session or aws.make_session(region=self.region)

    def run(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        s3, ssm = aws.client(self.session, "s3", self.region), aws.client(self.session, "ssm", self.region)
        seconds = job_seconds(job)
        key = f"{PREFIX}/{self.run_id}/{uuid.uuid4().hex}"
        s3.put_object(Bucket=self.bucket, Key=f"{key}/job.json", Body=json.dumps(job).encode(),
                      ContentType="application/json")
        try:
            self._send(s3, ssm, key, seconds)
            return _lines(s3.get_object(Bucket=self.bucket, Key=f"{key}/out.jsonl")["Body"].read().decode())
        finally:
            s3.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": f"{key}/job.json"},
                                                                      {"Key": f"{key}/out.jsonl"}], "Quiet": True})
            logger.debug("key=<%s> | load job objects deleted", key)

    def _send(self, s3: Any, ssm: Any, key: str, seconds: float) -> str:
        expires = int(seconds + SEND_TIMEOUT_S + SLACK_S)
        asset = urlsplit(self.generator_url)

        text = load_generator.command({
            "LOAD_GENERATOR_URL": s3.generate_presigned_url(
                "get_object", Params={"Bucket": asset.netloc, "Key": asset.path.lstrip("/")}, ExpiresIn=expires),
            "LOAD_GENERATOR_SHA256": self.generator_sha256,
            "LOAD_JOB_URL": s3.generate_presigned_url(
                "get_object", Params={"Bucket": self.bucket, "Key": f"{key}/job.json"}, ExpiresIn=expires),
            "LOAD_RESULT_URL": s3.generate_presigned_url(
                "put_object", Params={"Bucket": self.bucket, "Key": f"{key}/out.jsonl"}, ExpiresIn=expires),
            "LOAD_CONTAINER": self.container})
        sent = ssm.send_command(
            InstanceIds=[self.instance_id], DocumentName="AWS-RunShellScript", TimeoutSeconds=SEND_TIMEOUT_S,
            Comment="aws-inference --load-from rig", Parameters={
                "commands": [text], "executionTimeout": [str(math.ceil(seconds))]})
        command_id = sent["Command"]["CommandId"]
        try:
            got = poll_until(lambda: self._ended(ssm, command_id), timeout_s=seconds + SEND_TIMEOUT_S,
                             interval_s=POLL_S, what=f"Run Command {command_id} on {self.instance_id}")
        except BaseException as exc:
            self._cancel(ssm, command_id)
            if isinstance(exc, WaitTimeout):
                raise RunCommandError(f"{exc}: cancelled") from None
            raise
        if got["Status"] != "Success":
            raise RunCommandError(self._why(command_id, got))
        return command_id

    def _cancel(self, ssm: Any, command_id: str) -> None:
        """Cancel the command on the instance (a stopped or timed-out wait): best effort, said when it fails
        (CancelCommand takes no resource, so the policy grants it on ``*``)."""
        try:
            ssm.cancel_command(CommandId=command_id, InstanceIds=[self.instance_id])
        except Exception as exc:  # noqa: BLE001 - the wait's own error is what the caller sees
            logger.warning("command=<%s> | not cancelled: %s", command_id, aws.describe_error(exc, "ssm"))

    def _ended(self, ssm: Any, command_id: str) -> dict[str, Any] | None:
        """The invocation once it has ended; None while it runs (not yet known to the instance included)."""
        if self.stopping.is_set():
            raise RunCommandError(f"Run Command {command_id} on {self.instance_id} was stopped")
        try:
            got = ssm.get_command_invocation(CommandId=command_id, InstanceId=self.instance_id)
        except ssm.exceptions.InvocationDoesNotExist:
            return None
        return got if got.get("Status") in TERMINAL else None

    def _why(self, command_id: str, got: dict[str, Any]) -> str:
        said = (got.get("StandardErrorContent") or got.get("StandardOutputContent") or "").strip()[-500:]
        return (f"Run Command {command_id} on {self.instance_id} ended {got.get('Status')}: {said or 'no output'} "
                f"(aws ssm get-command-invocation --command-id {command_id} --instance-id {self.instance_id} "
                f"--region {self.region})")
