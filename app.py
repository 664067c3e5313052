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
from typing import Any, Callable, Mapping

# jsii prints a banner on Node 20 (end of life); the CLI works on it unchanged.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk  # noqa: E402

from rigs import context_keys as keys  # noqa: E402
from rigs.catalog.images import catalog_image  # noqa: E402
from rigs.catalog.model import Catalog, load_catalog  # noqa: E402
from rigs.catalog.model import DeployableRig  # noqa: E402
from rigs.context_keys import OptionsError  # noqa: E402
from rigs.context_keys import unknown_keys  # noqa: E402
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, base_stack_name  # noqa: E402
from rigs.deploy.model_options import ModelOptionsError, model_request, serve  # noqa: E402
from rigs.deploy.options import RigOptions, parse_az_count  # noqa: E402
from rigs.deploy.options import parse_region_zones  # noqa: E402
from rigs.deploy.options import parse_rig_options, rig_values  # noqa: E402
from rigs.placement import placement  # noqa: E402
from rigs.userdata import UserDataError  # noqa: E402
from stacks.base_stack import InferenceBaseStack  # noqa: E402
from stacks.g5g_image_stack import InferenceG5gImageStack  # noqa: E402
from stacks.kinds import stack_for  # noqa: E402
from stacks.parts.checks import add_nag_checks  # noqa: E402

PROJECT_DIR = Path(__file__).resolve().parent


def project_context() -> dict[str, Any]:
    """The feature flags and settings in cdk.json, for apps built outside the CLI (tests)."""
    return json.loads((PROJECT_DIR / "cdk.json").read_text(encoding="utf-8"))["context"]


def az_count(app: cdk.App, catalog: Catalog, region: str) -> int:
    """Zones the base network spans: the catalog's count, or ``-c az_count.<region>=N``."""
    count = parse_az_count(region, app.node.try_get_context(keys.AZ_COUNT.key(region=region)))
    return catalog.regions[region].availability_zones if count is None else count


def base_zones(app: cdk.App, catalog: Catalog, region: str) -> tuple[int, tuple[str, ...]]:
    """The base network's zone count and named zones: ``-c zones.<region>=a,b``, else ``az_count`` slots."""
    named = parse_region_zones(region, app.node.try_get_context(keys.REGION_ZONES.key(region=region)),
                               az_count_given=app.node.try_get_context(keys.AZ_COUNT.key(region=region)) is not None)
    return (len(named), named) if named else (az_count(app, catalog, region), ())


def not_deployed(app: cdk.App, stack_name: str) -> bool:
    """True when this synth is for a destroy (``./scripts/cdk destroy``), every region was asked, and the stack is
    in none: then it is left out of the app, so the CLI reports "destroyed" only for stacks that existed."""
    context = app.node.try_get_context
    return bool(context(keys.DESTROYING.key())) and bool(context(keys.LOOKED_UP.key())) and not _regions_in(
        context(keys.DEPLOYED_REGIONS.key(stack=stack_name)))


def _regions_in(value: Any) -> tuple[str, ...]:
    return tuple(r.strip() for r in str(value or "").split(",") if r.strip())


def region_choice(app: cdk.App, rig: DeployableRig) -> placement.RegionChoice:
    """Where the rig's stack goes: ``-c region.<rig>``, else where CloudFormation says it is,
    else where ``python -m rigs up`` recorded it, else the catalog's first region."""
    context = app.node.try_get_context
    return placement.choose_region(
        rig.name,
        rig.regions,
        explicit=context(keys.REGION.key(rig=rig.name)),
        deployed=_regions_in(context(keys.DEPLOYED_REGIONS.key(stack=rig.stack_name))),
        looked_up=bool(context(keys.LOOKED_UP.key())),
        recorded=context(keys.RECORDED_REGION.key(rig=rig.name)),
    )


def rig_options(app: cdk.App, rig: DeployableRig, region: str,
                say: Callable[[str], None] = lambda _line: None) -> RigOptions:
    """The validated per-deploy choices for one rig stack in ``region``, from ``-c`` context
    (see rigs/deploy/options.py); the recorded zones apply only in the recorded region. The model it serves
    and the size it runs on (rigs/deploy/model_options.py) are said with ``say``."""
    context = app.node.try_get_context
    zones = context(keys.ZONES.key(rig=rig.name))
    if zones is None and region == context(keys.RECORDED_REGION.key(rig=rig.name)):
        zones = context(keys.RECORDED_ZONES.key(rig=rig.name))
    options = parse_rig_options(rig, region=region, zones=zones, **rig_values(rig.name, context))
    request = model_request(context, rig.name)
    if not (request.given or request.hf_token_parameter):
        return options
    served = serve(options.rig, load_catalog(), request)
    if served.said:
        say(served.said)
    update: dict[str, Any] = {"rig": served.rig, "hf_token_parameter": served.hf_token_parameter}
    if served.rig.on_instances and served.rig.runtime != options.rig.runtime and \
            context(keys.IMAGE.key(rig=rig.name)) is None:
        update["image"] = catalog_image(served.rig)  # a Neuron rig on AWS's vLLM Neuron image
    return options.model_copy(update=update)


def add_rig_stacks(app: cdk.App, catalog: Catalog, bases: Callable[[str], InferenceBaseStack | None],
                   say: Callable[[str], None]) -> None:
    """One stack per deployable rig in its chosen region (its kind's, ``stacks/kinds.py``), plus the image build stack
    of a rig that builds its own (g5g).

    A stack that CloudFormation shows in further regions is synthesized there too, under the
    same stack name (construct id ``<stack>-<region>``), so that ``cdk destroy --all`` removes
    every copy instead of reporting one destroyed while another keeps billing.
    """
    for rig in catalog.deployable():
        if not_deployed(app, rig.stack_name):
            say(f"{rig.stack_name}: not deployed in any region; nothing to destroy")
            if rig.builds_own_image and not not_deployed(app, f"{rig.stack_name}Image"):
                add_image_stacks(app, rig, region_choice(app, rig).region)
            continue
        choice = region_choice(app, rig)
        say(f"{rig.stack_name} -> {choice.region} ({choice.why})")
        copies = [(rig.stack_name, choice.region)] + [(f"{rig.stack_name}-{r}", r) for r in choice.also_deployed]
        for id_, region in copies:
            base = bases(region) if rig.on_instances else None
            if region not in rig.regions or (rig.on_instances and base is None):
                say(f"{rig.stack_name} also exists in {region}, outside the catalog's regions for {rig.name}: "
                    "remove it with `python -m rigs sweep --yes`")
                continue
            if id_ != rig.stack_name:
                say(f"{rig.stack_name} also exists in {region}: synthesized there as {id_}, so that "
                    "`cdk destroy --all` removes it too")
            options = rig_options(app, rig, region, say)
            env = cdk.Environment(region=region)
            description = f"aws-inference rig {rig.name}: {rig.label} ({rig.instance_type})"
            stack_for(rig)(app, id_, options=options, base=base, env=env, stack_name=rig.stack_name,
                           description=description)
        if rig.builds_own_image and not not_deployed(app, f"{rig.stack_name}Image"):
            add_image_stacks(app, rig, choice.region)


def add_image_stacks(app: cdk.App, rig: DeployableRig, region: str) -> None:
    """The g5g image build stack in the rig's region, and wherever else it exists."""
    name = f"{rig.stack_name}Image"
    deployed = _regions_in(app.node.try_get_context(keys.DEPLOYED_REGIONS.key(stack=name)))
    for id_, where in [(name, region)] + [(f"{name}-{r}", r) for r in deployed if r != region]:
        InferenceG5gImageStack(app, id_, rig=rig_options(app, rig, region).rig, env=cdk.Environment(region=where),
                               stack_name=name,
                               description="aws-inference g5g image build: vLLM for sm_75 on arm64 "
                                           "with the Turing shared-memory patch")


def build_app(context: Mapping[str, Any] | None = None, outdir: str | None = None,
              say: Callable[[str], None] = lambda _line: None) -> cdk.App:
    """Build every stack of the app. ``context`` adds to (and overrides) cdk.json's context;
    ``say`` receives one line per rig stack: the region it is synthesized in and why."""
    app = cdk.App(
        context={**project_context(), **(context or {})},
        outdir=outdir,
        # cfn-lint checks every template per region in the test suite; the built-in
        # validation repeats that work and triples synth time.
        builtin_cloud_formation_validation=False,
    )
    catalog = load_catalog()
    unknown = unknown_keys(app.node.get_all_context(), [r.name for r in catalog.deployable()], project_context())
    if unknown is not None:
        raise unknown
    cdk.Tags.of(app).add(TAG_MANAGED_BY, MANAGED_BY)
    bases: dict[str, InferenceBaseStack] = {}

    def base(region: str) -> InferenceBaseStack | None:
        """The region's base stack, made on first use; None for a region no rig runs in."""
        if region not in bases and region in catalog.rig_regions():
            slots, named = base_zones(app, catalog, region)
            bases[region] = InferenceBaseStack(
                app,
                base_stack_name(region),
                zone_slots=slots,
                named_zones=named,
                instance_types=sorted({rig.instance_type for rig in catalog.ec2_rigs() if region in rig.regions}),
                env=cdk.Environment(region=region),
                description=f"aws-inference base for {region}: rig network, SSM-only security group, "
                            "rig instance profile",
            )
        return bases.get(region)

    for region in catalog.rig_regions():
        if not not_deployed(app, base_stack_name(region)):
            base(region)
    add_rig_stacks(app, catalog, base, say)
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


class WrongAccountError(Exception):
    """The app's own AWS credentials are another account's than the one the CDK CLI works in."""


def lookup_account_fix(cli_account: str, found: str) -> str:
    """The one-line error, with its fix, for credentials of account ``found`` under a CLI in ``cli_account``."""
    profile = os.environ.get("AWS_PROFILE")
    credentials = f"AWS_PROFILE={profile}" if profile else "the default credentials"
    return (f"the CDK CLI works in account {cli_account}, but this app's AWS credentials ({credentials}) are account "
            f"{found}: the CLI passes the app its account, not its --profile. Run it through ./scripts/cdk (it "
            "hands --profile to the app), or set AWS_PROFILE to the profile you gave the CLI")


def deployed_context(catalog: Catalog, say: Callable[[str], None]) -> dict[str, Any]:
    """Where CloudFormation says each of the app's stacks is, as context (rigs/estate/whereabouts.py).

    Asked only when the CDK CLI has resolved an account: it passes ``CDK_DEFAULT_ACCOUNT`` to the
    app only then, so offline synths (tests, CI, no credentials) make no call and stay as fast.
    Asked only with credentials of that account (the CLI does not pass ``--profile``; raises
    :class:`WrongAccountError` otherwise), in the regions the app deploys to. When every region
    answered, the recorded placement is corrected to match.
    """
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    if not account:
        say("no AWS account resolved by the CDK CLI: CloudFormation not asked; stacks go where the "
            "placement file or the catalog says")
        return {}
    from rigs.estate import whereabouts

    if os.environ.get(whereabouts.SKIP_LOOKUP_ENV):
        say("CloudFormation not asked: python -m rigs up chose each rig's region and records it")
        return {}
    try:
        found = whereabouts.caller_account()
    except whereabouts.AccountUnknown as exc:
        say(f"could not ask which account this app's credentials are in ({exc}): "
            "CloudFormation not asked; stacks go where the placement file or the catalog says")
        return {}
    if found != account:
        raise WrongAccountError(lookup_account_fix(account, found))
    names = whereabouts.app_stacks()
    where = whereabouts.locate(names)
    say(f"account {account}: {where.summary()}")
    context: dict[str, Any] = {keys.DEPLOYED_REGIONS.key(stack=n): ",".join(where.regions_of(n))
                               for n in names if where.regions_of(n)}
    if where.complete:
        context[keys.LOOKED_UP.key()] = True
        for line in placement.reconcile({r.name: where.regions_of(r.stack_name) for r in catalog.deployable()}):
            say(f"placement: {line}")
    return context


def main() -> None:
    """Run by the CDK CLI (``cdk.json``): synthesize, saying on stderr where each rig goes and why."""
    import sys

    def say(line: str) -> None:
        print(f"app: {line}", file=sys.stderr)

    try:
        context = {**recorded_placement(), **deployed_context(load_catalog(), say)}
    except placement.PlacementError as exc:
        say(str(exc))
        raise SystemExit(1) from None
    except WrongAccountError as exc:
        say(str(exc))
        raise SystemExit(2) from None
    try:
        app = build_app(context=context, say=say)
    except (OptionsError, ModelOptionsError, UserDataError) as exc:  # a bad -c key or value: its one line
        say(f"error: {exc}")
        raise SystemExit(2) from None
    app.synth()


if __name__ == "__main__":
    main()
