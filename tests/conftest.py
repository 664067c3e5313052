"""Shared fixtures. Templates are synthesized once per test session (jsii start-up dominates)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

# No test may reach AWS: dummy credentials, no instance-metadata probing.
for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}.items():
    os.environ.setdefault(key, value)
os.environ.pop("AWS_PROFILE", None)
# The CLIs are read as a user piping them would see them: pytest-xdist's workers set COLUMNS=80
# and LINES=24, which would wrap rich's tables at a width no plain run uses.
for key in ("COLUMNS", "LINES"):
    os.environ.pop(key, None)


def synth(outdir: Path, context: dict | None = None) -> Path:
    """Synthesize the whole app into ``outdir`` and return it."""
    from app import build_app

    build_app(context=context, outdir=str(outdir)).synth()
    return outdir


@pytest.fixture(scope="session")
def assembly_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def manifest(assembly_dir: Path) -> dict:
    return json.loads((assembly_dir / "manifest.json").read_text())


@pytest.fixture(scope="session")
def stack_regions(manifest: dict) -> dict[str, str]:
    """Stack name -> the region it deploys to, from the cloud assembly manifest."""
    regions = {}
    for name, artifact in manifest["artifacts"].items():
        if artifact["type"] == "aws:cloudformation:stack":
            regions[name] = artifact["environment"].rsplit("/", 1)[-1]
    return regions


@pytest.fixture(scope="session")
def templates(assembly_dir: Path, stack_regions: dict[str, str]) -> dict[str, dict]:
    """Stack name -> synthesized template."""
    return {name: json.loads((assembly_dir / f"{name}.template.json").read_text()) for name in stack_regions}
