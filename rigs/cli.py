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
import sys
from typing import Any, Sequence

from rigs import aws

from kit.command import EXIT_CREDENTIALS, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, Parser
from kit.command import UsageError
from kit.options import add_command, parsed
from rigs.catalog.model import load_catalog
from rigs.catalog.pins import RefreshOptions
from rigs.cli_options import DoctorOptions, FitOptions, PreflightOptions, PricesOptions, StatusOptions, SweepOptions
from rigs.context_keys import OptionsError
from rigs.deploy.options import check_deploy_context
from rigs.deploy.up_options import UpOptions
from rigs.placement import placement
from rigs.rehearsal.options import Options as RehearseOptions
from rigs.shared_options import Global


def _console() -> Any:
    import os

    from rich.console import Console

    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
    return Console(highlight=False, soft_wrap=False, width=width)


def _session(args: Global) -> Any:
    session = aws.make_session(args.profile, args.region)
    aws.check_credentials(session, args.region or session.region_name or "us-east-1")
    return session


SUBCOMMANDS: tuple[tuple[str, type[Global], str], ...] = (
    ("doctor", DoctorOptions, "check the account before spending: read-only, one table with the fix for each failure"),
    ("preflight", PreflightOptions, "zones, quotas and prices per rig and region; records the placement"),
    ("up", UpOptions, "deploy rigs with region failover; records the timeline"),
    ("status", StatusOptions, "everything of ours in the four regions, with $/h"),
    ("sweep", SweepOptions, "find (and with --yes delete) everything tagged ours"),
    ("prices", PricesOptions, "the prices used for each rig, and where they come from"),
    ("rehearse", RehearseOptions, "from nothing to a report to nothing: doctor, estimate, up (small model), "
                                  "benchmark, --big, down, timeline and cost"),
    ("fit", FitOptions, "what a model's weights and KV cache take, and the instance sizes it fits (offline: the "
                        "catalog's figures and the model's config.json)"),
)
"""Each subcommand, its options (a model of declared options) and its one line of help, in ``--help``'s order."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m rigs", description=__doc__.split("\n\n")[0])
    Global.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, model, help in SUBCOMMANDS:
        add_command(sub, name, model, help, beside=Global)
    from rigs.catalog.pins import add_parser as add_pins_parser

    add_pins_parser(sub)
    return parser


# --- commands -------------------------------------------------------------------------


def cmd_doctor(args: DoctorOptions) -> int:
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


def cmd_preflight(args: PreflightOptions) -> int:
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


def cmd_up(args: UpOptions) -> int:
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
        allowed = sequence.doctor(rigs, ignore=ignored_checks(args.bootstrap, args.skip_checks))
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


def _deploy_context(args: DoctorOptions | PreflightOptions | UpOptions | PricesOptions, rigs: Sequence[Any]) -> tuple[dict[str, str], list[Any]]:
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
    hours = args.max_hours if isinstance(args, UpOptions) else None
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


def cmd_status(args: StatusOptions) -> int:
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


def cmd_sweep(args: SweepOptions) -> int:
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


def cmd_prices(args: PricesOptions) -> int:
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
            table.add_row(rig, region, "unpriced", "", "", escape(price))
            continue
        amount = (f"${price.usd_per_hour:.4f}/h ({price.instance_type})" if hasattr(price, "usd_per_hour")
                  else f"${price.usd_per_million_input:g}/M in, ${price.usd_per_million_output:g}/M out")
        source = price.source + ("" if price.exact_region else f" ({price.region} price)")
        table.add_row(rig, region, amount, source, price.as_of.isoformat(), escape(price.note or price.detail))
    _console().print(table)
    return EXIT_OK


def cmd_pins(args: RefreshOptions) -> int:
    from rigs.catalog.pins import NotRegionalError, run

    try:
        return run(args, lambda: _session(args))
    except NotRegionalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def cmd_rehearse(args: RehearseOptions) -> int:
    from rigs.rehearsal import flow

    return flow.main(args, console=_console())


def cmd_fit(args: FitOptions) -> int:
    from kit.command import UsageError
    from rigs.sizing import compat
    from rigs.sizing.config import read_config
    from rigs.sizing.engine import Settings
    from rigs.sizing.fit import Ask, candidates, degrees, fit, render
    from rigs.sizing.measured import load

    catalog = load_catalog()
    if args.model is not None and args.model not in catalog.models:
        raise UsageError(f"--model {args.model}: not in the catalog's models section ({', '.join(catalog.models)}); "
                         f"give its config.json with {FitOptions.model_config.usage}")
    card = catalog.models.get(args.model) if args.model else None
    arch = card.architecture if card else read_config(args.model_config)
    if args.context is not None and args.context > arch.max_context:
        raise UsageError(f"--context {args.context}: the model takes at most {arch.max_context:,} tokens "
                         "(max_position_embeddings)")
    sizes = candidates(catalog, card.name if card else None, arch)
    if args.instance_type is not None:
        sizes = [c for c in sizes if c.instance_type == args.instance_type]
        if not sizes:
            raise UsageError(f"--instance-type {args.instance_type}: not a size of the catalog's instance families "
                             f"({', '.join(catalog.instance_families)}); python -m rigs fit without it lists them")
    if args.tensor_parallel is not None and args.tensor_parallel not in degrees(arch, args.tensor_parallel):
        raise UsageError(f"--tensor-parallel {args.tensor_parallel}: does not divide the model's "
                         f"{arch.attention_heads} attention heads (or its {arch.kv_heads} KV heads, nor is a multiple "
                         f"of them); give one of {', '.join(map(str, degrees(arch, arch.attention_heads)))}")
    context = _workload_context(args.workload, arch.max_context) if args.workload is not None else args.context
    settings = Settings(args.gpu_memory_utilization, args.max_num_seqs, args.max_num_batched_tokens,
                        args.kv_cache_dtype)
    ask = Ask(context=min(context or arch.max_context, arch.max_context), sequences=args.concurrency,
              dtype=None if args.dtype == "auto" else args.dtype, settings=settings, engine=args.vllm,
              tensor_parallel=args.tensor_parallel, model_id=args.model, measured=load().of(args.model))
    result = fit(arch, sizes, ask).priced(_dated_prices([c.instance_type for c in sizes]))
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        for line in render(args.model or str(args.model_config), result):
            print(line)
    shown = {found[0] for c in sizes if (found := catalog.family_of(c.instance_type))}
    families = {name: family for name, family in catalog.instance_families.items() if name in shown}
    for note in compat.family_notes(families, arch, None if args.dtype == "auto" else args.dtype):
        print(f"note: {note}", file=sys.stderr)  # on stderr: --json stays JSON
    return EXIT_OK


def _dated_prices(instance_types: list[str]) -> dict[str, float | None]:
    """Each size's on-demand $/h in :data:`rigs.sizing.fit.PRICE_REGION` from the dated price file, offline (no
    session: the Pricing API is not asked); None where the file has none (unpriced, never $0.00)."""
    from rigs.catalog.pricing import PriceBook, PriceError
    from rigs.sizing.fit import PRICE_REGION

    book = PriceBook()
    prices: dict[str, float | None] = {}
    for instance_type in instance_types:
        try:
            prices[instance_type] = book.instance_hourly_price(instance_type, PRICE_REGION).usd_per_hour
        except PriceError:
            prices[instance_type] = None
    return prices


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
        return COMMANDS[args.command](parsed(args))
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
