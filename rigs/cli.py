"""``python -m rigs``: doctor, preflight, up, status, sweep, prices, pins, rehearse and fit.

Exit codes: 0 done; 1 the command ran but its goal was not met (a rig did not come up,
something is left after a sweep, a rig has no region to run in or cannot deploy
anywhere); 2 bad input (an unknown rig, a bad option); 3 no usable AWS credentials (one
line says how to log in); 4 AWS cannot be reached (one line names the endpoint and the
likely cause). 3 and 4 are the same for ``python -m agent.run`` and ``./scripts/cdk``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from rigs import aws

from kit.command import EXIT_CREDENTIALS, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, Parser
from kit.command import UsageError
from rigs.catalog.model import load_catalog
from rigs.context_keys import MAX_LIFETIME_HOURS, OptionsError
from rigs.contract import REGIONS
from rigs.deploy.options import check_deploy_context, lifetime_hours
from rigs.placement import placement


def _console() -> Any:
    import os

    from rich.console import Console

    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
    return Console(highlight=False, soft_wrap=False, width=width)


def _regions(value: str) -> list[str]:
    regions = [r.strip() for r in value.replace(",", " ").split() if r.strip()]
    unknown = [r for r in regions if r not in REGIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown)}: not one of the four regions {', '.join(REGIONS)}")
    return regions


def _session(args: argparse.Namespace) -> Any:
    session = aws.make_session(args.profile, args.region)
    aws.check_credentials(session, args.region or session.region_name or "us-east-1")
    return session


def _usd(value: str) -> float:
    try:
        usd = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount in USD, e.g. 20") from None
    if not usd > 0 or usd == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: give an amount above 0 in USD, e.g. 20")
    return usd


MAX_USD_HELP = ("refuse to start (exit 2, nothing deployed), before any other check, when the rigs could cost more "
                "than this: each rig's hourly price x its lifetime limit")
RIG_HELP = ("a rig of rigs/catalog.yaml: g6, g5g, inf2, trn1 (EC2) or sagemaker (an endpoint); bedrock and "
            "bedrock-mantle have nothing to deploy")


def _hours(value: str) -> float:
    """``--max-hours``: a lifetime the rigs' stacks take (rigs/deploy/options.py), checked before anything runs."""
    try:
        return lifetime_hours(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc}") from None


def _minutes(value: str, zero: bool = False) -> float:
    """A finite number of minutes above 0 (``zero``: or 0)."""
    try:
        minutes = float(value)
    except ValueError:
        minutes = math.nan
    if not (0 <= minutes if zero else 0 < minutes) or math.isinf(minutes):
        raise argparse.ArgumentTypeError(f"{value!r}: give a number of minutes {'from' if zero else 'above'} 0")
    return minutes


def _minutes_or_zero(value: str) -> float:
    return _minutes(value, zero=True)


def _type_at_region(value: str) -> str:
    instance_type, sep, region = value.partition("@")
    if not sep or not instance_type or region not in REGIONS:
        raise argparse.ArgumentTypeError(f"{value!r}: give TYPE@REGION, e.g. g6.xlarge@us-east-2, in one of "
                                         f"{', '.join(REGIONS)}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m rigs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", help="AWS profile (default: the standard SDK configuration)")
    parser.add_argument("--region", help="region for global calls (default: the SDK's)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_doctor, _add_preflight, _add_up, _add_status, _add_sweep, _add_prices, _add_rehearse, _add_fit):
        add(sub)
    from rigs.catalog.pins import add_parser as add_pins_parser

    add_pins_parser(sub, _regions)
    return parser


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check the account before spending: read-only, one table with the fix for "
                       "each failure")
    p.add_argument("rigs", nargs="*", metavar="RIG", help=f"rigs to check (default: every deployable rig); {RIG_HELP}")
    p.add_argument("--regions", type=_regions, default=None, metavar="R,R", help="only these regions (default: each "
                   "rig's catalog regions)")
    _add_context(p, "its quotas, offerings and root volume are checked for")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")


def _add_preflight(sub: Any) -> None:
    p = sub.add_parser("preflight", help="zones, quotas and prices per rig and region; records the placement")
    p.add_argument("rigs", nargs="*", metavar="RIG", help=f"rigs to check (default: every deployable rig); {RIG_HELP}")
    p.add_argument("--regions", type=_regions, default=list(REGIONS), metavar="R,R",
                   help="regions to check (default: all four)")
    p.add_argument("--no-record", action="store_true", help="do not write the placement file")
    _add_context(p, "zones, quotas and prices are those of")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")


def _add_up(sub: Any) -> None:
    from rigs.deploy.cdk_cli import DEPLOY_METHODS
    from rigs.deploy.watch import CAPACITY_GRACE_MINUTES

    p = sub.add_parser("up", help="deploy rigs with region failover; records the timeline")
    p.add_argument("rigs", nargs="+", metavar="RIG", help=f"rigs to deploy, in parallel; {RIG_HELP}")
    p.add_argument("--max-hours", type=_hours, metavar="HOURS", help="lifetime limit of each rig, above 0 and at most "
                   f"{MAX_LIFETIME_HOURS}, passed as -c max_hours=N (default: the catalog's)")
    p.add_argument("--max-usd", type=_usd, metavar="USD", help=MAX_USD_HELP)
    p.add_argument("--preflight", action="store_true", help="run preflight for these rigs first (always done "
                   "when nothing is recorded for a rig)")
    p.add_argument("--doctor", action="store_true", help="run `doctor` for these rigs first: stop before any "
                   "deploy when one cannot deploy anywhere, and skip the regions it rules out")
    p.add_argument("--no-wait", action="store_true", help="return once the instance runs; do not await SSM and "
                   "the server's /health")
    p.add_argument("--ready-timeout", type=_minutes, metavar="MIN",
                   help="minutes to wait for /health (default: the catalog's)")
    p.add_argument("--capacity-grace", type=_minutes_or_zero, default=CAPACITY_GRACE_MINUTES, metavar="MIN",
                   help="minutes a group that fails to launch for capacity gets before the next region "
                        f"(default {CAPACITY_GRACE_MINUTES:g})")
    p.add_argument("--method", choices=DEPLOY_METHODS,
                   help="cdk deploy --method (default: direct when AWS_ENDPOINT_URL is set, else the CLI's)")
    p.add_argument("--bootstrap", action="store_true", help="run `cdk bootstrap` in candidate regions that lack it")
    _add_skip_check(p, "with --doctor, ")
    p.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE",
                   help="extra CDK context, passed on (the per-deploy options of docs/rigs.md, e.g. -c "
                        "inf2_variant=tp2; checked before anything runs); with -c model.<rig>=ID (or -c model=ID) the "
                        "doctor, preflight and --max-usd check and price the size the model is served on")
    p.add_argument("--evidence", type=Path, metavar="DIR", help="evidence directory (default: .rigs/runs/<time>-up)")


def _add_skip_check(p: Any, when: str = "") -> None:
    from rigs.account.doctor import SKIPPABLE

    p.add_argument("--skip-check", action="append", default=[], choices=sorted(SKIPPABLE), metavar="CHECK",
                   help=f"{when}the doctor's rows of this check stop no rig (as --bootstrap does for the bootstrap): "
                        f"{', '.join(f'{name} ({check!r})' for name, check in sorted(SKIPPABLE.items()))}")


def _add_status(sub: Any) -> None:
    p = sub.add_parser("status", help="everything of ours in the four regions, with $/h")
    p.add_argument("--regions", type=_regions, default=list(REGIONS), metavar="R,R",
                   help="only these regions (default: all four)")
    p.add_argument("--all-resources", action="store_true",
                   help="list every resource (default: stacks, what bills, and what no stack manages)")
    p.add_argument("--json", action="store_true")


def _add_sweep(sub: Any) -> None:
    from rigs.estate.sweep import MAX_WAIT_MINUTES

    p = sub.add_parser("sweep", help="find (and with --yes delete) everything tagged ours")
    p.add_argument("--regions", type=_regions, default=list(REGIONS), metavar="R,R",
                   help="only these regions (default: all four)")
    p.add_argument("--yes", action="store_true", help="delete; without it, only list")
    p.add_argument("--all", action="store_true", dest="everything",
                   help="also the base stacks, security groups, network, IAM role and instance profile")
    p.add_argument("--max-wait", type=_minutes_or_zero, default=MAX_WAIT_MINUTES, metavar="MIN",
                   help="minutes to wait for an endpoint still Creating, and for each deletion "
                        f"(default {MAX_WAIT_MINUTES:g})")
    p.add_argument("--all-resources", action="store_true", help="list every resource, not only stacks, what "
                   "bills and what no stack manages")


def _add_prices(sub: Any) -> None:
    p = sub.add_parser("prices", help="the prices used for each rig, and where they come from")
    p.add_argument("rigs", nargs="*", metavar="RIG", help=f"rigs to price (default: every one); {RIG_HELP}")
    p.add_argument("--regions", type=_regions, default=None, metavar="R,R",
                   help="only these regions (default: each rig's catalog regions)")
    p.add_argument("--live", action="store_true", help="ask the Pricing API (needs credentials)")
    _add_context(p, "the price is that of")
    p.add_argument("--json", action="store_true")


def _add_rehearse(sub: Any) -> None:
    from rigs.deploy.watch import CAPACITY_GRACE_MINUTES
    from rigs.rehearsal.estimate import BENCHMARK_ALLOWANCE_MINUTES, DESTROY_ALLOWANCE_MINUTES
    from rigs.rehearsal.bring_up import OFFLINE_CAPACITY_GRACE_MINUTES

    p = sub.add_parser("rehearse", help="from nothing to a report to nothing: doctor, estimate, up (small model), "
                       "benchmark, --big, down, timeline and cost")
    p.add_argument("rigs", nargs="*", metavar="RIG", help="rigs to rehearse (default: every one, Bedrock included); "
                   + RIG_HELP.replace("have nothing to deploy", "are only benchmarked"))
    p.add_argument("--yes", action="store_true", help="go on without asking after the plan and its estimate")
    p.add_argument("--offline", action="store_true", help="rehearse the flow against moto's server on loopback, with "
                   "the local rig playing every rig's server: no AWS account, nothing billed")
    p.add_argument("--big", action="store_true", help="then move the rigs with a 'big' catalog variant to that "
                   "bigger model and benchmark again")
    p.add_argument("--bootstrap", action="store_true", help="run `cdk bootstrap` in the regions that lack it")
    _add_skip_check(p)
    p.add_argument("--model", metavar="ID", help="rehearse this model (a Hugging Face id of the catalog's models "
                   "section, e.g. Qwen/Qwen3-8B) on every rig that can serve it, each on the size it fits (-c "
                   "model.<rig>=ID); the others are left out with why, in the plan")
    p.add_argument("--model-config", type=Path, metavar="FILE", help="with --model, the config.json of a model the "
                   "catalog does not list (read here, never fetched; -c model_config.<rig>=FILE)")
    p.add_argument("--hf-token-parameter", metavar="NAME", help="with --model, the SSM SecureString parameter holding "
                   "a Hugging Face token, for a gated model (-c hf_token_parameter=NAME; the EC2 rigs read it at boot)")
    p.add_argument("--workload", metavar="FILE|KEY=VALUE", help="your traffic, passed to the benchmark as its "
                   "--workload (checked by it before anything is created); the vLLM rigs are served and sized at its "
                   "context, its longest request (-c max_model_len.<rig>=N)")
    p.add_argument("--bench-options", default="", metavar="'OPTIONS'",
                   help="options passed to python -m agent.run, e.g. --bench-options='--runs 1 --demos chat' "
                        "(default: its own defaults)")
    p.add_argument("--evidence", type=Path, metavar="DIR", help="evidence folder (default: "
                   "results/rehearsal-<UTC time>)")
    p.add_argument("--max-hours", type=_hours, metavar="HOURS", help="lifetime limit of each rig, the backstop, above 0 "
                   f"and at most {MAX_LIFETIME_HOURS} (default: the catalog's)")
    p.add_argument("--max-usd", type=_usd, metavar="USD", help=MAX_USD_HELP)
    p.add_argument("--capacity-grace", type=_minutes_or_zero, metavar="MIN", help="minutes a group that cannot launch "
                   f"for capacity gets before the next region (default {CAPACITY_GRACE_MINUTES:g}; offline "
                   f"{OFFLINE_CAPACITY_GRACE_MINUTES:g})")
    p.add_argument("--inject-capacity", action="append", default=[], type=_type_at_region, metavar="TYPE@REGION",
                   help="--offline only: no capacity for that instance type in that region (shows a failover)")
    p.add_argument("--bench-minutes", type=_minutes_or_zero, default=BENCHMARK_ALLOWANCE_MINUTES, metavar="MIN",
                   help=f"the benchmark's time allowance in the estimate (default {BENCHMARK_ALLOWANCE_MINUTES:g})")
    p.add_argument("--destroy-minutes", type=_minutes_or_zero, default=DESTROY_ALLOWANCE_MINUTES, metavar="MIN",
                   help=f"the destroy's time allowance in the estimate (default {DESTROY_ALLOWANCE_MINUTES:g})")


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a whole number above 0")
    return number


def _add_fit(sub: Any) -> None:
    p = sub.add_parser("fit", help="what a model's weights and KV cache take, and the instance sizes it fits "
                       "(offline: the catalog's figures and the model's config.json)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", metavar="ID", help="a model of the catalog's models section, e.g. Qwen/Qwen3-8B")
    which.add_argument("--config", type=Path, metavar="FILE", help="a model's config.json (read, never fetched)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--context", type=_positive, metavar="N", help="tokens of one sequence (default: the model's "
                        "longest, max_position_embeddings)")
    length.add_argument("--workload", metavar="SPEC|FILE", help="your traffic (the benchmark's --workload): the "
                        "context is its longest request, prompt and output, as the benchmark counts it")
    p.add_argument("--concurrency", type=_positive, default=1, metavar="C",
                   help="sequences of --context tokens that must fit at once (default 1)")
    p.add_argument("--dtype", choices=("auto", "bfloat16", "float16", "float32"), default="auto",
                   help="the weights' and KV cache's dtype (default auto: the model's; a quantized model's weights "
                        "stay as published)")
    p.add_argument("--json", action="store_true", help="print JSON: weights_bytes, kv_bytes_per_token, "
                   "kv_bytes_per_sequence, instances")


# --- commands -------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace) -> int:
    from rigs.account.doctor import render, run_doctor
    from rigs.account.preflight import select_rigs

    rigs, nothing = select_rigs(args.rigs)
    _, rigs = _deploy_context(args, rigs)
    report = run_doctor(rigs, lambda: aws.make_session(args.profile, args.region), args.regions)
    if args.json:
        print(json.dumps({"account": report.account, "seconds": round(report.seconds, 2),
                          "findings": [{"check": f.check, "subject": f.subject, "region": f.region,
                                        "status": f.status, "detail": f.detail, "fix": f.fix,
                                        "blocks": list(f.blocks), "denied": f.denied or None}
                                       for f in report.findings],
                          "deployable": {rig: report.deployable(rig) for rig in report.rig_regions}}, indent=2))
    else:
        console = _console()
        console.print(render(report))
        for name in nothing:
            console.print(f"{name}: Bedrock, nothing to deploy")
    if isinstance(report.stopped, aws.CredentialsError):
        return EXIT_CREDENTIALS
    if isinstance(report.stopped, aws.UnreachableError):
        return EXIT_UNREACHABLE
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_preflight(args: argparse.Namespace) -> int:
    from rigs.account.preflight import render, render_placement, run_preflight, select_rigs

    rigs, nothing = select_rigs(args.rigs)
    _, rigs = _deploy_context(args, rigs)
    session = _session(args)
    report = run_preflight(rigs, session, args.regions, record=not args.no_record)
    if args.json:
        print(json.dumps({"checks": [c.as_dict() for c in report.checks],
                          "placement": {r: [c.model_dump(mode="json") for c in cs]
                                        for r, cs in report.placements.items()}},
                         indent=2))
    else:
        console = _console()
        console.print(render(report))
        for line in render_placement(report):
            console.print(line, markup=False)
        for name in nothing:
            console.print(f"{name}: Bedrock, nothing to deploy")
        if not args.no_record:
            console.print(f"placement recorded in {placement.placement_path()}")
    return EXIT_FAILED if report.unplaceable else EXIT_OK


def cmd_up(args: argparse.Namespace) -> int:
    from rigs.account.checks.bootstrap import BOOTSTRAP_NOT_IN_POLICY
    from rigs.account.doctor import ignored_checks
    from rigs.deploy.cdk_cli import CdkCli, default_method
    from rigs.deploy.sequence import DeploySequence
    from rigs.deploy.up import Up, UpSettings
    from rigs.deploy.watch import WatchSettings, default_poll_s
    from rigs.account.preflight import select_rigs
    from rigs.catalog.pricing import PriceBook
    from rigs.rehearsal.estimate import cost_refusal

    rigs, nothing = select_rigs(args.rigs)
    for name in nothing:
        print(f"{name}: Bedrock, nothing to deploy")
    if not rigs:
        return EXIT_OK
    context, rigs = _deploy_context(args, rigs)
    session = aws.make_session(args.profile, args.region)
    if args.max_usd is not None:  # before the credentials: the Pricing API, else the dated file
        refusal = cost_refusal(PriceBook(session), args.max_usd, args.max_hours, rigs)
        if refusal:
            raise UsageError(refusal)
    aws.check_credentials(session, args.region or session.region_name or "us-east-1")
    sequence = DeploySequence(session, _console().print)
    if args.doctor:
        allowed = sequence.doctor(rigs, ignore=ignored_checks(args.bootstrap, args.skip_check))
        stuck = [name for name, regions in allowed.items() if not regions]
        if stuck:
            print(f"doctor: {', '.join(stuck)} cannot deploy anywhere (see the FAIL rows); nothing deployed",
                  file=sys.stderr)
            return EXIT_FAILED
    plans = sequence.plans(rigs, fresh=args.preflight, announce=lambda need: print(
        "preflight first (--preflight)" if args.preflight
        else f"preflight for {', '.join(f'{r.name} ({r.instance_type})' for r in need)} (nothing recorded yet "
             "for that size)"))
    settings = UpSettings(
        max_hours=args.max_hours, context=context, evidence_dir=args.evidence,
        watch=WatchSettings(capacity_grace=args.capacity_grace * 60, wait_ready=not args.no_wait,
                            ready_timeout=args.ready_timeout * 60 if args.ready_timeout else None,
                            poll=default_poll_s()))
    up = Up(session, CdkCli(method=args.method or default_method()), settings)
    regions = sorted({c.region for _, candidates in plans.values() for c in candidates})
    missing = up.missing_bootstrap(regions)
    if missing:
        if not args.bootstrap:
            account = aws.check_credentials(session)
            print(f"not bootstrapped for the CDK: {', '.join(missing)}; an administrator runs "
                  f"`./scripts/cdk bootstrap {' '.join(f'aws://{account}/{r}' for r in missing)}` "
                  f"({BOOTSTRAP_NOT_IN_POLICY}), or passes --bootstrap", file=sys.stderr)
            return EXIT_FAILED
        failure = up.bootstrap(aws.check_credentials(session), missing)
        if failure is not None:
            print(f"error: {failure.message}", file=sys.stderr)
            return EXIT_FAILED
    print(f"evidence: {up.evidence.directory}")
    results = up.run(plans)
    for result in results:
        where = f"up in {result.region}" if result.ok else f"NOT up: {result.reason}"
        print(f"{result.rig}: {where}")
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _deploy_context(args: argparse.Namespace, rigs: Sequence[Any]) -> tuple[dict[str, str], list[Any]]:
    """The ``-c KEY=VALUE`` of ``up``, ``preflight``, ``doctor`` and ``prices`` as context, every key and value
    checked as the app checks them at synth (with ``up``'s ``--max-hours`` as ``max_hours``), before anything runs;
    and each rig as it will be served under them (:func:`rigs.deploy.model_options.served_rig`: another model may
    move it to a bigger size, whose quotas, zones and price are then the ones checked). Raises UsageError naming
    every problem."""
    from rigs.deploy.cdk_cli import cdk_json_keys
    from rigs.deploy.model_options import ModelOptionsError, served_rig

    context = {}
    for item in args.context:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-c {item!r}: give KEY=VALUE")
        context[key] = value
    hours = getattr(args, "max_hours", None)
    given = {**context, "max_hours": f"{hours:g}"} if hours is not None else context
    catalog = load_catalog()
    try:
        check_deploy_context(rigs, given, [r.name for r in catalog.deployable()], cdk_json_keys())
        served = [served_rig(rig, catalog, given.get) for rig in rigs]
    except (OptionsError, ModelOptionsError) as exc:
        raise UsageError(str(exc)) from None
    for one in served:  # on stderr: --json output stays JSON
        if one.said:
            print(one.said, file=sys.stderr)
    return context, [one.rig for one in served]


def _add_context(p: Any, what: str) -> None:
    p.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE",
                   help=f"the per-deploy options of `up` (docs/rigs.md), checked before anything runs: with -c "
                        f"model.<rig>=ID (or -c model=ID) {what} the size the model is served on")


def cmd_status(args: argparse.Namespace) -> int:
    from rigs.estate.inventory import discover, render, render_outlasting
    from rigs.catalog.pricing import PriceBook

    session = _session(args)
    inventory = discover(session, args.regions, PriceBook(session), outlasting=True)
    if args.json:
        print(json.dumps({"resources": [r.as_dict() for r in inventory.resources],
                          "hourly_usd": round(inventory.hourly_usd, 6), "problems": list(inventory.problems),
                          "outlasting": [o.as_dict() for o in inventory.outlasting]}, indent=2))
        return EXIT_OK
    console = _console()
    table = render(inventory, f"Ours (ManagedBy=aws-inference) in {', '.join(args.regions)}",
                   everything=args.all_resources)
    if table.row_count:
        console.print(table)
    elif inventory.resources:
        console.print(f"no stack of ours and nothing billing in {', '.join(args.regions)}; {table.caption}")
    else:
        console.print(f"nothing of ours in {', '.join(args.regions)}")
    billing = [r for r in inventory.resources if r.billing]
    console.print(f"total: ${inventory.hourly_usd:.4f}/h ({len(billing)} billing of {len(inventory.resources)} "
                  "resources)")
    if inventory.outlasting:
        console.print(render_outlasting(inventory))
    for problem in inventory.problems:
        console.print(f"not checked: {problem}", markup=False)
    for note in inventory.notes:
        console.print(f"note: {note}", markup=False)
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from rigs.estate.inventory import render
    from rigs.estate.sweep import Sweeper, default_poll_s

    session = _session(args)
    console = _console()
    sweeper = Sweeper(session, args.regions, everything=args.everything, max_wait=args.max_wait * 60,
                      say=lambda line: console.print(line, markup=False),
                      poll=default_poll_s())
    if not args.yes:
        inventory = sweeper.inventory()
        to_delete = [r for r in inventory.resources if inventory.swept(r, args.everything)]
        kept = [r for r in inventory.resources if r not in to_delete]
        if inventory.resources:
            console.print(render(inventory, f"Ours (ManagedBy=aws-inference) in {', '.join(args.regions)}",
                                 everything=args.everything or args.all_resources))
        billing = [r for r in inventory.resources if r.billing]
        console.print(f"still billing: {len(billing)} resource(s), ${inventory.hourly_usd:.4f}/h")
        console.print(f"would delete {len(to_delete)} resource(s)" + (
            f"; would keep {len(kept)} (security groups, network, instance profile: pass --all)" if kept else ""))
        for problem in inventory.problems:
            console.print(f"not checked: {problem}", markup=False)
        for note in inventory.notes:
            console.print(f"note: {note}", markup=False)
        console.print("nothing deleted: pass --yes to delete" if to_delete else "nothing to delete")
        return EXIT_OK
    result = sweeper.run()
    stacks = {rig.name: rig.stack_name for rig in load_catalog().deployable()}
    for rig in result.forget_swept(args.regions, stacks):
        console.print(f"placement: {rig} is gone; its record in {placement.placement_path()} is cleared")
    leftovers = result.leftovers(args.everything)
    kept = [r for r in result.after.resources if r not in leftovers]
    console.print(f"deleted or confirmed gone: {len(result.deleted)}")
    if leftovers:
        console.print(render(type(result.after)(tuple(leftovers), ()), "Left after the sweep", everything=True))
        for failure in result.failed:
            console.print(f"why: {failure}", markup=False)
        for deferred in result.deferred:
            console.print(f"rerun: {deferred}", markup=False)
    else:
        console.print(f"left: nothing of ours in {', '.join(args.regions)}"
                      + (f" (kept without --all: {len(kept)} network/IAM resource(s))" if kept else ""))
    for problem in result.after.problems:
        console.print(f"not checked: {problem}", markup=False)
    for note in result.after.notes:
        console.print(f"note: {note}", markup=False)
    return EXIT_OK if result.clean(args.everything) else EXIT_FAILED


def cmd_prices(args: argparse.Namespace) -> int:
    from rich.table import Table

    from rigs.account.preflight import select_rigs
    from rigs.catalog.pricing import PriceBook, PriceError

    catalog = load_catalog()
    names = args.rigs or list(catalog.rigs)
    deployable, _ = select_rigs(names, catalog)
    served = {rig.name: rig for rig in _deploy_context(args, deployable)[1]}
    rigs = [served.get(name) or catalog.get(name) for name in names]
    session = _session(args) if args.live else None
    book = PriceBook(session)
    rows = []
    for rig in rigs:
        for region in args.regions or rig.regions:
            try:
                price = rig.price(book, region)
                rows.append((rig.name, region, price))
            except PriceError as exc:
                rows.append((rig.name, region, str(exc)))
    if args.json:
        print(json.dumps([{"rig": r, "region": g,
                           **(p.model_dump(mode="json") if not isinstance(p, str) else {"error": p})}
                          for r, g, p in rows], indent=2))
        return EXIT_OK
    table = Table(title="Prices", header_style="bold")
    for column in ("Rig", "Region", "Price", "Source", "As of", "Note"):
        table.add_column(column, overflow="fold")
    from rich.markup import escape

    for rig, region, price in rows:
        if isinstance(price, str):
            table.add_row(rig, region, "?", "", "", escape(price))
            continue
        amount = (f"${price.usd_per_hour:.4f}/h ({price.instance_type})" if hasattr(price, "usd_per_hour")
                  else f"${price.usd_per_million_input:g}/M in, ${price.usd_per_million_output:g}/M out")
        source = price.source + ("" if price.exact_region else f" ({price.region} price)")
        table.add_row(rig, region, amount, source, price.as_of.isoformat(), escape(price.note or price.detail))
    _console().print(table)
    return EXIT_OK


def cmd_pins(args: argparse.Namespace) -> int:
    from rigs.catalog.pins import NotRegionalError, run

    try:
        return run(args, lambda: _session(args))
    except NotRegionalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def cmd_rehearse(args: argparse.Namespace) -> int:
    from rigs.rehearsal import flow

    options = flow.Options(
        rigs=args.rigs, big=args.big, yes=args.yes, offline=args.offline, bootstrap=args.bootstrap,
        skip_checks=tuple(args.skip_check),
        evidence=args.evidence, max_hours=args.max_hours, max_usd=args.max_usd,
        capacity_grace_minutes=args.capacity_grace,
        inject_capacity=args.inject_capacity, bench_options=args.bench_options, bench_minutes=args.bench_minutes,
        destroy_minutes=args.destroy_minutes, profile=args.profile, region=args.region, model=args.model,
        model_config=args.model_config, hf_token_parameter=args.hf_token_parameter, workload=args.workload)
    return flow.main(options, console=_console())


def cmd_fit(args: argparse.Namespace) -> int:
    from kit.command import UsageError
    from rigs.sizing.config import read_config
    from rigs.sizing.fit import candidates, fit, render

    catalog = load_catalog()
    if args.model is not None and args.model not in catalog.models:
        raise UsageError(f"--model {args.model}: not in the catalog's models section ({', '.join(catalog.models)}); "
                         "give its config.json with --config FILE")
    card = catalog.models.get(args.model) if args.model else None
    arch = card.architecture if card else read_config(args.config)
    if args.context is not None and args.context > arch.max_context:
        raise UsageError(f"--context {args.context}: the model takes at most {arch.max_context:,} tokens "
                         "(max_position_embeddings)")
    context = _workload_context(args.workload, arch.max_context) if args.workload is not None else args.context
    result = fit(arch, candidates(catalog, card.name if card else None, arch), context=context,
                 sequences=args.concurrency, dtype=None if args.dtype == "auto" else args.dtype)
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        for line in render(args.model or str(args.config), result):
            print(line)
    return EXIT_OK


def _workload_context(workload: str, longest: int) -> int:
    """``rigs fit --workload``'s context, the benchmark's answer (the agent is asked, never imported), said on
    stderr; the model's longest where the workload asks more, said so."""
    from kit.command import UsageError
    from rigs.rehearsal.bench_options import workload_context

    tokens = workload_context(workload)
    if tokens is None:
        raise UsageError(f"--workload {workload}: the reference's one prompt has no context of its own (the rigs keep "
                         "the catalog's); give --context N")
    over = f", over the model's {longest:,}: fitted at the model's" if tokens > longest else ""
    print(f"--workload {workload}: its longest request, prompt and output, rounded up: {tokens:,} tokens{over}",
          file=sys.stderr)
    return min(tokens, longest)


COMMANDS = {"doctor": cmd_doctor, "preflight": cmd_preflight, "up": cmd_up, "status": cmd_status,
            "sweep": cmd_sweep, "prices": cmd_prices, "pins": cmd_pins, "rehearse": cmd_rehearse, "fit": cmd_fit}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        hint = {"up": "`python -m rigs status` shows what is up; `python -m rigs up` again resumes, "
                      "`python -m rigs sweep --yes` removes it",
                "sweep": "running the same sweep again finishes it"}.get(args.command, "safe to run again")
        print(f"interrupted: {hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - one line for what the kit knows, classified by type and code
        ended = aws.outcome(exc)
        if ended is None:
            raise
        print(f"error: {ended.line}", file=sys.stderr)
        return ended.code
