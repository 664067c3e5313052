"""checkov over every synthesized template, beside cdk-nag and cfn-lint.

checkov 3.3.30 pins boto3 1.35, so it lives in its own virtual environment (``.venv-checkov``,
made by ``scripts/setup`` from ``requirements-checkov.txt``). Each skip sits in the template
next to its resource (``stacks/parts/checks.py`` ``skip_checkov``) with its reason; the
negative test shows the skips are what stands between the templates and a failed scan.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

CHECKOV = PROJECT_DIR / ".venv-checkov" / "bin" / "checkov"
CHECKOV_VERSION = "3.3.30"


def checkov(directory: Path) -> dict:
    """checkov's JSON report for the CloudFormation templates in ``directory`` (offline: --skip-download)."""
    if not CHECKOV.is_file():
        pytest.fail("checkov is not installed: run ./scripts/setup (it makes .venv-checkov from "
                    "requirements-checkov.txt)")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BC_", "PRISMA_"))}
    done = subprocess.run([str(CHECKOV), "-d", str(directory), "--framework", "cloudformation", "--skip-download",
                           "--compact", "-o", "json"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["check_type"] == "cloudformation" and report["summary"]["checkov_version"] == CHECKOV_VERSION
    assert report["summary"]["parsing_errors"] == 0
    return report


def findings(report: dict, kind: str) -> set[tuple[str, str, str]]:
    return {(f["file_path"].lstrip("/"), f["resource"], f["check_id"]) for f in report["results"].get(kind, [])}


@pytest.fixture(scope="module")
def templates_dir(assembly_dir: Path, unpinned_endpoint_dirs: dict[str, Path],
                  tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Only the templates (the assembly's asset folders are not CloudFormation), with the SageMaker
    stack also as it is in each region without a pin (its image digest read at deploy time)."""
    folder = tmp_path_factory.mktemp("checkov")
    for template in assembly_dir.glob("*.template.json"):
        shutil.copy(template, folder / template.name)
    for region, outdir in unpinned_endpoint_dirs.items():
        shutil.copy(outdir / "InferenceSageMaker.template.json", folder / f"InferenceSageMaker-{region}.template.json")
    return folder


@pytest.fixture(scope="module")
def report(templates_dir: Path) -> dict:
    return checkov(templates_dir)


def test_checkov_finds_no_failed_check(report):
    failed = sorted(findings(report, "failed_checks"))
    assert failed == [], "\n".join(" ".join(f) for f in failed)
    assert report["summary"]["passed"] > 300


def test_every_checkov_skip_gives_a_specific_reason(report):
    skipped = report["results"]["skipped_checks"]
    assert {s["check_id"] for s in skipped} == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_136",
                                                "CKV_AWS_158", "CKV_AWS_370", "CKV_AWS_18", "CKV_AWS_21"}
    for skip in skipped:
        reason = skip["check_result"]["suppress_comment"]
        assert len(reason) >= 40 and not reason.lower().startswith(("suppress", "ok", "fine", "n/a")), skip


def test_without_the_skips_checkov_fails_exactly_those_checks_and_a_mutable_repository(report, templates_dir,
                                                                                          tmp_path):
    """The negative test: the same templates with the skip metadata taken out, and the g5g image
    repository's tags made mutable again, fail every skipped check and CKV_AWS_51."""
    repositories = []
    for template in templates_dir.glob("*.template.json"):
        data = json.loads(template.read_text())
        for logical_id, resource in data["Resources"].items():
            resource.get("Metadata", {}).pop("checkov", None)
            if resource["Type"] == "AWS::ECR::Repository":
                resource["Properties"]["ImageTagMutability"] = "MUTABLE"
                repositories.append((template.name, f"AWS::ECR::Repository.{logical_id}", "CKV_AWS_51"))
        (tmp_path / template.name).write_text(json.dumps(data))
    assert repositories, "the g5g image stack has an ECR repository"
    stripped = checkov(tmp_path)
    assert findings(stripped, "failed_checks") == findings(report, "skipped_checks") | set(repositories)
    assert findings(stripped, "skipped_checks") == set()
