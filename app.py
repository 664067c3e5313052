#!/usr/bin/env python3
"""The CDK app. The only module that reads CLI context or the environment.

``build_app()`` turns the catalog and the context into stacks with typed properties;
everything below it is a pure function of the commit, so synth is offline and
byte-for-byte repeatable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

# jsii prints a banner on Node 20 (end of life); the CLI works on it unchanged.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk  # noqa: E402

from rigs.catalog import Catalog, load_catalog  # noqa: E402
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, base_stack_name  # noqa: E402
from stacks.base_stack import InferenceBaseStack  # noqa: E402
from stacks.parts.checks import add_nag_checks  # noqa: E402

PROJECT_DIR = Path(__file__).resolve().parent


def project_context() -> dict[str, Any]:
    """The feature flags and settings in cdk.json, for apps built outside the CLI (tests)."""
    return json.loads((PROJECT_DIR / "cdk.json").read_text(encoding="utf-8"))["context"]


def az_count(app: cdk.App, catalog: Catalog, region: str) -> int:
    """Zones the base network spans: the catalog's count, or ``-c az_count.<region>=N``."""
    override = app.node.try_get_context(f"az_count.{region}")
    if override is None:
        return catalog.regions[region].availability_zones
    try:
        count = int(override)
    except (TypeError, ValueError):
        count = 0
    if not 1 <= count <= 6:
        raise ValueError(f"-c az_count.{region}={override!r}: give a whole number of zones from 1 to 6")
    return count


def build_app(context: Mapping[str, Any] | None = None, outdir: str | None = None) -> cdk.App:
    """Build every stack of the app. ``context`` adds to (and overrides) cdk.json's context."""
    app = cdk.App(
        context={**project_context(), **(context or {})},
        outdir=outdir,
        # cfn-lint checks every template per region in the test suite; the built-in
        # validation repeats that work and triples synth time.
        builtin_cloud_formation_validation=False,
    )
    catalog = load_catalog()
    cdk.Tags.of(app).add(TAG_MANAGED_BY, MANAGED_BY)
    for region in catalog.rig_regions():
        InferenceBaseStack(
            app,
            base_stack_name(region),
            az_count=az_count(app, catalog, region),
            env=cdk.Environment(region=region),
            description=f"aws-inference base for {region}: rig network, SSM-only security group, rig instance profile",
        )
    add_nag_checks(app)
    return app


if __name__ == "__main__":
    build_app().synth()
