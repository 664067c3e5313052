"""Where this app's stacks really are: CloudFormation asked in the regions the app deploys to.

The CDK app synthesizes each rig stack in one region. After ``python -m rigs up`` moved a rig
to another region, a clone without that run's ``.rigs/placement.json`` would synthesize the
stack in the catalog's default region, and ``cdk destroy --all`` would delete a stack that is
not there, print "destroyed", and leave the rig billing where it is. So ``app.py`` asks
CloudFormation which of the app's stacks exist in each region, and synthesizes every stack
where it really is (:func:`locate`).

It asks only when the CDK CLI has resolved an account (the CLI passes ``CDK_DEFAULT_ACCOUNT``
to the app only then), so tests, CI and every offline synth make no call at all, and not for
``python -m rigs up``'s own synths (:data:`SKIP_LOOKUP_ENV`). It asks the regions a rig of the
catalog can run in (:func:`app_regions`), not all four of the contract: the app never places a
stack in the others, and an organisation that denies one of them would otherwise leave every
lookup incomplete (``python -m rigs sweep`` still looks in all four). Each region costs one
``ListStacks`` page or a few, in parallel, with short timeouts and one retry: a machine that
cannot reach AWS loses seconds, not minutes, and says which region it could not ask and why.

The CDK CLI passes the app its account but not its ``--profile``, so the app's own credentials
may be another account's; :func:`caller_account` says which account they are, for the app to
compare before it trusts (and records) what the lookup found.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import boto3
import botocore.exceptions
from botocore.config import Config

from kit.options import Option, Options
from rigs.contract import REGIONS

SKIP_LOOKUP_ENV = "AWS_INFERENCE_PLACED_BY_CALLER"
"""Set (to any value) by ``python -m rigs up`` for its own synths: it chose each rig's region and
records it itself, so the app asking CloudFormation again would only add copies of stacks that
``up`` never deploys, and write the placement file from another process while ``up`` writes it."""

# Every CloudFormation stack status but DELETE_COMPLETE: a stack in any of them exists (and
# may bill), including failed creates (ROLLBACK_COMPLETE) that only a delete removes.
LIVE_STATUSES = (
    "CREATE_IN_PROGRESS", "CREATE_FAILED", "CREATE_COMPLETE", "ROLLBACK_IN_PROGRESS", "ROLLBACK_FAILED",
    "ROLLBACK_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_FAILED", "UPDATE_IN_PROGRESS",
    "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "UPDATE_COMPLETE", "UPDATE_FAILED", "UPDATE_ROLLBACK_IN_PROGRESS",
    "UPDATE_ROLLBACK_FAILED", "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", "UPDATE_ROLLBACK_COMPLETE",
    "REVIEW_IN_PROGRESS", "IMPORT_IN_PROGRESS", "IMPORT_COMPLETE", "IMPORT_ROLLBACK_IN_PROGRESS",
    "IMPORT_ROLLBACK_FAILED", "IMPORT_ROLLBACK_COMPLETE",
)  # fmt: skip

CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Whereabouts:
    """What CloudFormation said, region by region.

    Attributes:
        stacks: Region -> {stack name: status} for the app's stacks that exist there.
        failed: Region -> why it could not be asked (unreachable, no credentials, denied).
    """

    stacks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    failed: Mapping[str, str] = field(default_factory=dict)

    @property
    def asked(self) -> tuple[str, ...]:
        """The regions that answered."""
        return tuple(r for r in REGIONS if r in self.stacks)

    @property
    def complete(self) -> bool:
        """Every region answered: a stack found nowhere is deployed nowhere."""
        return not self.failed

    def regions_of(self, stack_name: str) -> tuple[str, ...]:
        """The regions a stack of that name exists in, in the contract's order of regions."""
        return tuple(r for r in REGIONS if stack_name in self.stacks.get(r, {}))

    def summary(self) -> str:
        """One line: where it asked and what it found."""
        found = [f"{name} in {region} ({status})" for region in REGIONS
                 for name, status in sorted(self.stacks.get(region, {}).items())]  # fmt: skip
        line = f"asked CloudFormation in {', '.join(self.asked) or 'no region'} for this app's stacks: "
        line += "; ".join(found) if found else "none deployed"
        if self.failed:
            line += ". Could not ask " + "; ".join(f"{r} ({why})" for r, why in self.failed.items())
        return line


def reason(exc: BaseException) -> str:
    """A short, readable reason for a failed call (never a pasted HTML page)."""
    if isinstance(exc, botocore.exceptions.NoCredentialsError):
        return "no AWS credentials"
    if isinstance(exc, botocore.exceptions.EndpointConnectionError):
        return f"cannot reach {exc.kwargs.get('endpoint_url', 'the endpoint')}"
    if isinstance(exc, (botocore.exceptions.ConnectTimeoutError, botocore.exceptions.ReadTimeoutError)):
        return f"timed out ({type(exc).__name__})"
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        message = " ".join(str(error.get("Message", "")).split())[:160]
        return f"{error.get('Code', 'error')}: {message}".rstrip(": ")
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"


def app_regions() -> tuple[str, ...]:
    """The regions the app can place a stack in (every region of a deployable rig), in the contract's order."""
    from rigs.catalog.model import load_catalog

    used = {region for rig in load_catalog().deployable() for region in rig.regions}
    return tuple(region for region in REGIONS if region in used)


class AccountUnknown(Exception):
    """STS could not say which account the credentials are in; the message says why."""


def caller_account(session: Any = None, *, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                   read_timeout_s: float = READ_TIMEOUT_S) -> str:
    """The account of the credentials a lookup with ``session`` uses (STS ``GetCallerIdentity``, which
    needs no permission). Raises :class:`AccountUnknown` when it cannot be asked."""
    session = session or boto3.Session()
    config = Config(connect_timeout=connect_timeout_s, read_timeout=read_timeout_s,
                    retries={"max_attempts": 2, "mode": "standard"})
    try:
        sts = session.client("sts", region_name=session.region_name or REGIONS[0], config=config)
        return sts.get_caller_identity()["Account"]
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise AccountUnknown(reason(exc)) from None


def _list_region(session: boto3.Session, region: str, names: frozenset[str], config: Config) -> dict[str, str]:
    cloudformation = session.client("cloudformation", region_name=region, config=config)
    found: dict[str, str] = {}
    for page in cloudformation.get_paginator("list_stacks").paginate(StackStatusFilter=list(LIVE_STATUSES)):
        for summary in page.get("StackSummaries", []):
            if summary.get("StackName") in names:
                found[summary["StackName"]] = summary.get("StackStatus", "")
    return found


def locate(
    stack_names: Iterable[str],
    *,
    regions: Sequence[str] | None = None,
    session: Any = None,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    read_timeout_s: float = READ_TIMEOUT_S,
) -> Whereabouts:
    """Ask CloudFormation in ``regions`` (default: :func:`app_regions`), in parallel, which of
    ``stack_names`` exist there.

    Never raises for an AWS failure: a region that cannot be asked is listed in ``failed``.
    """
    regions = app_regions() if regions is None else regions
    names = frozenset(stack_names)
    session = session or boto3.Session()
    config = Config(connect_timeout=connect_timeout_s, read_timeout=read_timeout_s,
                    retries={"max_attempts": 2, "mode": "standard"})
    stacks: dict[str, dict[str, str]] = {}
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=len(regions) or 1) as pool:
        futures = {region: pool.submit(_list_region, session, region, names, config) for region in regions}
        for region, future in futures.items():
            try:
                stacks[region] = future.result()
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
                failed[region] = reason(exc)
    return Whereabouts(stacks=stacks, failed=failed)


def app_stacks() -> list[str]:
    """Every stack name the CDK app can create: the base stacks, the rigs and the image build of a rig that builds its
    own (g5g)."""
    from rigs.catalog.model import load_catalog
    from rigs.contract import base_stack_name

    catalog = load_catalog()
    names = [base_stack_name(region) for region in catalog.rig_regions()]
    names += [rig.stack_name for rig in catalog.deployable()]
    names += [f"{rig.stack_name}Image" for rig in catalog.deployable() if rig.builds_own_image]
    return names


class WhereaboutsOptions(Options):
    """The options of ``python -m rigs.estate.whereabouts``."""

    expect_none = Option(("--expect-none",), "exit 1 when any stack of the app is left", default=False, switch=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rigs.estate.whereabouts [--expect-none]``: where the app's stacks are, in the regions it deploys to.

    ``./scripts/cdk`` runs it before ``destroy --all`` (nothing deployed: nothing to destroy) and
    after it (``--expect-none``), so a destroy cannot end on "destroyed" while a stack of the app is
    still there. Exit 0 when stacks were found (1 with ``--expect-none``), 3 when none is deployed,
    2 when a region could not be asked.
    """
    from kit.command import EXIT_FAILED, EXIT_NONE_DEPLOYED, EXIT_NOT_VERIFIED, EXIT_OK, Parser

    parser = Parser(prog="python -m rigs.estate.whereabouts", description=main.__doc__)
    WhereaboutsOptions.add_arguments(parser)
    args = WhereaboutsOptions.of(parser.parse_args(argv))
    where = locate(app_stacks())
    print(where.summary())
    if not where.complete:
        print("not verified: some regions could not be asked (see above)")
        return EXIT_NOT_VERIFIED
    left = [f"{name} in {region}" for region in REGIONS for name in sorted(where.stacks.get(region, {}))]
    if not left:
        return EXIT_NONE_DEPLOYED
    if args.expect_none:
        print(f"left: {', '.join(left)}; rerun the destroy, or see `python -m rigs status`")
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
