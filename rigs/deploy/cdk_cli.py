"""The project-pinned CDK CLI (``./scripts/cdk``) as ``up`` and the rehearsal run it.

One log file per call; the CLI's own error read from that log (:func:`cli_failure`) when a
call fails before CloudFormation has a say; the stacks a rig stack needs deployed first
(:func:`stack_dependencies`, from the cloud assembly's manifest). Tests inject a fake runner
with the :class:`CdkRunner` shape.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from rigs import aws

from rigs.placement import placement

from rigs.estate import whereabouts

PROJECT_DIR = placement.PROJECT_DIR
CDK = str(PROJECT_DIR / "scripts" / "cdk")
DEPLOY_METHODS = ("change-set", "direct")
"""``cdk deploy --method`` values."""


def cdk_json_keys() -> frozenset[str]:
    """The context keys ``cdk.json`` sets (the CDK's feature flags and settings): they pass the app's key check."""
    return frozenset(json.loads((PROJECT_DIR / "cdk.json").read_text(encoding="utf-8"))["context"])


def default_method() -> str | None:
    """``direct`` (no change sets, as moto needs) against a custom endpoint (``AWS_ENDPOINT_URL``), else the CLI's."""
    return "direct" if aws.endpoint_url() else None


@dataclass(frozen=True, slots=True)
class CdkResult:
    returncode: int
    log: Path | None = None


class CdkRunner(Protocol):
    def synth(self, outdir: Path, context: Mapping[str, str], log: Path) -> CdkResult: ...

    def deploy(self, app: Path, stacks: Sequence[str], context: Mapping[str, str], log: Path,
               outputs_file: Path | None = None) -> CdkResult: ...

    def bootstrap(self, environments: Sequence[str], log: Path) -> CdkResult: ...


def context_arg(key: str, value: str) -> list[str]:
    """One CDK context value on the CDK CLI's command line (``-c KEY=VALUE``, as ``python -m rigs up -c`` takes it)."""
    return ["-c", f"{key}={value}"]


class CdkCli:
    """Runs the project-pinned CDK CLI (``scripts/cdk``); output goes to a log file per call.

    Its synths tell the app that this command placed the rigs (:data:`rigs.estate.whereabouts.SKIP_LOOKUP_ENV`).
    """

    ENV = {"CI": "true", whereabouts.SKIP_LOOKUP_ENV: "1"}

    def __init__(self, method: str | None = None, extra_args: Sequence[str] = (), cdk: str = CDK) -> None:
        self.method = method
        self.extra_args = tuple(extra_args)
        self.cdk = cdk

    @staticmethod
    def _context_args(context: Mapping[str, str]) -> list[str]:
        return [arg for key, value in sorted(context.items()) for arg in context_arg(key, value)]

    def _run(self, args: list[str], log: Path) -> CdkResult:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(args)}\n")
            handle.flush()
            completed = subprocess.run(args, stdout=handle, stderr=subprocess.STDOUT, cwd=PROJECT_DIR,
                                       env={**os.environ, **self.ENV}, check=False)
        return CdkResult(completed.returncode, log)

    def synth(self, outdir: Path, context: Mapping[str, str], log: Path) -> CdkResult:
        return self._run([self.cdk, "synth", "--quiet", "--output", str(outdir), *self._context_args(context),
                          *self.extra_args], log)

    def deploy(self, app: Path, stacks: Sequence[str], context: Mapping[str, str], log: Path,
               outputs_file: Path | None = None) -> CdkResult:
        args = [self.cdk, "deploy", "--app", str(app), *stacks, "--exclusively", "--require-approval", "never",
                "--progress", "events", *self._context_args(context)]
        if outputs_file is not None:
            args += ["--outputs-file", str(outputs_file)]
        if self.method:
            args.append(f"--method={self.method}")
        return self._run(args + list(self.extra_args), log)

    def bootstrap(self, environments: Sequence[str], log: Path) -> CdkResult:
        """The CLI synthesizes the app before it bootstraps; into a folder beside the log, not the project's
        ``cdk.out``, where another command of the CLI synthesizing at the same time would make it fail
        ("Another CLI ... is currently synthing to cdk.out")."""
        return self._run([self.cdk, "bootstrap", *environments, "--output", str(log.parent / "cdk.out-bootstrap")],
                         log)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ERRORISH = re.compile(r"error|failed|unable|denied|expired|not found|invalid", re.IGNORECASE)
_CAUSE = re.compile(r"^‣ (?P<name>[A-Za-z][A-Za-z0-9_.]*): ")


def cli_failure(log: Path | None, what: str) -> aws.AwsFailure:
    """The CDK CLI's own error, from its log: the line that says what failed, its error name, and the log path.

    The CLI prints its error message, then one ``‣ Name: message`` line per cause (the
    deepest is the AWS error, such as ``ExpiredToken`` or ``AccessDenied``), or a ``❌``
    line for a stack that failed. The line shown is the ``❌`` line, else the first cause,
    else the last line that reads like an error; the code is the deepest cause's name.
    """
    lines: list[str] = []
    if log is not None:
        try:
            lines = [_ANSI.sub("", line).strip() for line in log.read_text(encoding="utf-8", errors="replace")
                     .splitlines()]
        except OSError:
            lines = []
    lines = [line for line in lines if line and not line.startswith("$ ")]
    causes = [line for line in lines if _CAUSE.match(line)]
    shown = (next((line for line in lines if "❌" in line), None) or (causes[0] if causes else None)
             or next((line for line in reversed(lines) if _ERRORISH.search(line)), None)
             or (lines[-1] if lines else "no output"))
    shown = shown.replace("❌", "").removeprefix("‣ ").strip()
    code = _CAUSE.match(causes[-1]).group("name") if causes else "CdkCliFailed"
    where = f" (log: {log})" if log is not None else ""
    return aws.AwsFailure(code, aws.classify_code(code), f"{what}: {aws.readable(shown)}{where}")


def stack_dependencies(assembly: Path, stack: str) -> tuple[list[str], str]:
    """The stacks ``stack`` depends on (transitively, in deploy order) and its CloudFormation name."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    artifacts = manifest.get("artifacts", {})
    if stack not in artifacts:
        known = sorted(k for k, v in artifacts.items() if v.get("type") == "aws:cloudformation:stack")
        raise aws.RigsError(f"the app has no stack {stack!r} (stacks: {', '.join(known)})")
    order: list[str] = []

    def visit(name: str) -> None:
        for dependency in artifacts.get(name, {}).get("dependencies", []):
            if artifacts.get(dependency, {}).get("type") == "aws:cloudformation:stack" and dependency not in order:
                visit(dependency)
                order.append(dependency)

    visit(stack)
    cfn_name = artifacts[stack].get("properties", {}).get("stackName") or stack
    return order, cfn_name

