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
from rigs.catalog import DeployableRig, Ec2Rig, SageMakerRig  # noqa: E402
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, base_stack_name  # noqa: E402
from rigs.deploy_options import RigOptions, parse_region_zones, parse_rig_options  # noqa: E402
from rigs import placement  # noqa: E402
from stacks.base_stack import InferenceBaseStack  # noqa: E402
from stacks.endpoint_stack import InferenceEndpointStack  # noqa: E402
from stacks.g5g_image_stack import InferenceG5gImageStack  # noqa: E402
from stacks.rig_stack import InferenceRigStack  # noqa: E402
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


def base_zones(app: cdk.App, catalog: Catalog, region: str) -> tuple[int, tuple[str, ...]]:
    """The base network's zone count and named zones: ``-c zones.<region>=a,b``, else ``az_count`` slots."""
    named = parse_region_zones(region, app.node.try_get_context(f"zones.{region}"),
                               az_count_given=app.node.try_get_context(f"az_count.{region}") is not None)
    return (len(named), named) if named else (az_count(app, catalog, region), ())


def rig_options(app: cdk.App, rig: DeployableRig) -> RigOptions:
    """The validated per-deploy choices for one rig, from ``-c`` context (see rigs/deploy_options.py)."""
    context = app.node.try_get_context
    max_hours = context(f"max_hours.{rig.name}")
    # `-c region.<rig>` wins; else the region `python -m rigs up` recorded (see recorded_placement),
    # with its zones only when the region is that same one.
    recorded = context(f"recorded_region.{rig.name}")
    region = context(f"region.{rig.name}") or recorded
    zones = context(f"zones.{rig.name}")
    if zones is None and region is not None and region == recorded:
        zones = context(f"recorded_zones.{rig.name}")
    return parse_rig_options(
        rig,
        region=region,
        zones=zones,
        variant=context(f"{rig.name}_variant"),
        max_hours=max_hours if max_hours is not None else context("max_hours"),
        image=context(f"image.{rig.name}"),
        ami=context(f"ami.{rig.name}"),
    )


def add_rig_stacks(app: cdk.App, catalog: Catalog, bases: Mapping[str, InferenceBaseStack]) -> None:
    """One stack per deployable rig, in its chosen region, plus the g5g image build stack."""
    for rig in catalog.deployable():
        options = rig_options(app, rig)
        env = cdk.Environment(region=options.region)
        if isinstance(rig, Ec2Rig):
            InferenceRigStack(app, rig.stack_name, options=options, base=bases[options.region], env=env,
                              description=f"aws-inference rig {rig.name}: {rig.label} ({rig.instance_type})")
            if rig.name == "g5g":
                InferenceG5gImageStack(app, f"{rig.stack_name}Image", rig=options.rig, env=env,
                                       description="aws-inference g5g image build: vLLM for sm_75 on arm64 "
                                                   "with the Turing shared-memory patch")
        elif isinstance(rig, SageMakerRig):
            InferenceEndpointStack(app, rig.stack_name, options=options, env=env,
                                   description=f"aws-inference rig {rig.name}: {rig.label} ({rig.instance_type})")


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
    bases: dict[str, InferenceBaseStack] = {}
    for region in catalog.rig_regions():
        slots, named = base_zones(app, catalog, region)
        bases[region] = InferenceBaseStack(
            app,
            base_stack_name(region),
            zone_slots=slots,
            named_zones=named,
            instance_types=sorted({rig.instance_type for rig in catalog.ec2_rigs() if region in rig.regions}),
            env=cdk.Environment(region=region),
            description=f"aws-inference base for {region}: rig network, SSM-only security group, rig instance profile",
        )
    add_rig_stacks(app, catalog, bases)
    add_nag_checks(app)
    return app


def recorded_placement() -> dict[str, str]:
    """Where `python -m rigs up` last brought each rig up (.rigs/placement.json), as default context.

    The CDK CLI runs this file, so a fresh `cdk deploy` or `cdk destroy --all` reaches a rig that
    `up` moved to another region. CLI context has precedence over the App's own context, so an
    explicit `-c region.<rig>=…` still wins. Tests call build_app() without it: local state never
    changes what they synthesize.
    """
    return placement.recorded_context({rig.name: rig.regions for rig in load_catalog().deployable()})


if __name__ == "__main__":
    build_app(context=recorded_placement()).synth()
