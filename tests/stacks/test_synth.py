"""Synth is offline and deterministic; the CLI is configured not to reach the internet."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
from pathlib import Path

from tests.conftest import PROJECT_DIR

from tests.conftest import synth


def test_synth_twice_gives_byte_identical_output(assembly_dir: Path, tmp_path: Path):
    second = synth(tmp_path / "again")
    first_files = sorted(p.relative_to(assembly_dir) for p in assembly_dir.rglob("*") if p.is_file())
    second_files = sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert first_files == second_files
    _, mismatch, errors = filecmp.cmpfiles(assembly_dir, second, [str(p) for p in first_files], shallow=False)
    assert mismatch == [] and errors == []


def test_synth_records_no_missing_context(manifest: dict):
    """A context lookup would leave 'missing' entries (and dummy values) in the manifest."""
    assert "missing" not in manifest


def test_templates_carry_no_dummy_zone_or_lookup_placeholder(assembly_dir: Path):
    text = "".join(p.read_text() for p in assembly_dir.glob("*.template.json"))
    for placeholder in ("dummy1a", "vpc-12345", "s-12345", "ami-1234"):
        assert placeholder not in text


def test_cli_is_configured_not_to_reach_the_internet():
    config = json.loads((PROJECT_DIR / "cdk.json").read_text())
    assert config["notices"] is False
    assert config["context"]["cli-telemetry"] is False
    env_script = (PROJECT_DIR / "scripts" / "env.sh").read_text()
    assert "CDK_DISABLE_VERSION_CHECK=1" in env_script


def test_cdk_list_prints_every_stack_offline(stack_regions, tmp_path):
    env = {**os.environ, "CDK_DISABLE_VERSION_CHECK": "1", "CDK_DISABLE_CLI_TELEMETRY": "true"}
    env.pop("AWS_ENDPOINT_URL", None)
    # its own --output: the CLI refuses to synthesize into a folder another test's CLI is synthesizing into
    result = subprocess.run([str(PROJECT_DIR / "scripts" / "cdk"), "list", "--output", str(tmp_path / "cdk.out")],
                            cwd=PROJECT_DIR, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(result.stdout.split()) == sorted(stack_regions)
