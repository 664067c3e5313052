"""``python -m agent.run``: find every backend that is up, reach it, and run the benchmark.

With AWS credentials it finds this app's deployed rigs (CloudFormation, our tags),
opens an SSM port forward to each EC2 rig and adds Bedrock; on a machine without AWS it
starts the local rig (a small real model on llama.cpp) instead. ``--list`` only shows
what would run, how each backend is reached, and why anything is left out.

Everything this command starts (the local rig, port forwards) is stopped when it ends,
fails or is interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence

from kit.command import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Parser, UsageError
from kit.options import Option, Options
from rigs import aws
from rigs.catalog.model import CatalogError, load_catalog
from rigs.catalog.pricing import STANDARD_TIER, offline_tiers
from rigs.contract import REGIONS

from .backends import KNOWN, MANTLE, Backend, EnvConfig, UnknownBackendError, from_env, parse_names, sort_key
from .backends.local import serve_flags
from .bench.analysis.slo import DEFAULT_MAX_CONCURRENCY
from .bench.command import declared, evidence
from .kinds import descriptor
from .reach.custom_server import identify, shadow_note
from .reach.discovery import AwsClients, Discoverer, Discovery
from .reach.forwarding import ForwardError, ForwardSet, ForwardToolsMissing, PortForward, \
    PortTaken, ProcessPortForward, RelayPortForward, SsmPortForward, check_ssm_tools, preferred_port
from .reach.pool import describe_tunnel, relays, spread
from .reach.provenance import read_all, route_refusal
from .reach.relay import Shaping
from .reach.tunnel import BYTE_SOURCE_PORT, LocalByteSource
from .local_rig import MODEL_ID, LocalRigConfig, LocalRigError, find_installation, local_rig_process
from .plan import ForwardTarget, BackendPlan, make_plan, needs_aws
from .reach.stand_in import StandIn, StandInError, parse_stand_in
from .ui import Ui

logger = logging.getLogger("agent")

RUNNER_MODULE = "agent.bench.command.runner"
class HiddenOptions(Options):
    """The command's option ``--help`` does not show."""

    parsed_options = Option(("--parsed-options",), argparse.SUPPRESS, default=False, switch=True)
    """Print the options as parsed (JSON, :func:`parsed_options`) and exit 0, before the check of the options that
    must fit together (the rehearsal adds its own, then has them checked by ``--list``)."""
AWS_ALTERNATIVE = " (without AWS: `--backends local`, or the backends' *_URL variables)"


def _runner() -> ModuleType:
    """The benchmark runner (``agent.bench.command.runner``), looked up when the command starts: the tests put
    a runner of their own in its place (``sys.modules``)."""
    return importlib.import_module(RUNNER_MODULE)


def build_parser(runner: ModuleType) -> argparse.ArgumentParser:
    """The command's parser; the benchmark adds its own options through ``add_arguments``."""
    parser = Parser(
        prog="python -m agent.run",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
        epilog="Environment variables (the reference's, unchanged): BEDROCK_MODEL, BEDROCK_REGION, "
               "G6_URL, G6_MODEL, G5G_URL, G5G_MODEL, SM_ENDPOINT, SM_REGION, SM_MODEL, INF2_URL, "
               "INF2_MODEL, TRN1_URL, TRN1_MODEL, BACKENDS=a,b. A backend given by URL needs no AWS. "
               "See docs/agent.md.",
    )
    declared.add_arguments(parser, declared.COMMAND_GROUPS)
    HiddenOptions.add_arguments(parser)
    runner.add_arguments(parser)
    return parser


def parsed_options(parser: argparse.ArgumentParser, args: argparse.Namespace,
                   argv: Sequence[str] | None) -> dict[str, Any]:
    """The answer to ``--parsed-options`` (:class:`HiddenOptions`): the options given (by their long name), those the run would use, and
    the context a server needs for them (:mod:`agent.bench.tasks.traffic.context`): ``workload_context_tokens``, the
    workload's longest request, and ``server_context_tokens``, that with room for the agent parts that run (both
    None for the reference's one prompt).

    The rehearsal (``python -m rigs rehearse``) runs the agent as a command and never imports it: it asks this
    parser what ``--bench-options`` say instead of reading them by hand (an abbreviation, ``--opt=value``, a
    default: the parser's own answer), and serves the vLLM rigs at ``server_context_tokens``.
    """
    from .bench.command.options import BenchOptions
    from .bench.tasks.traffic.context import server_context_tokens, workload_context_tokens

    for action in parser._actions:  # parsed again with no defaults: only what was given is in the answer
        action.default = argparse.SUPPRESS
    given = vars(parser.parse_args(argv))
    flags = [max(action.option_strings, key=len) for action in parser._actions
             if action.dest in given and action.option_strings and action.dest != "parsed_options"]
    options = BenchOptions.from_namespace(args)
    shape = options.workload.shape()
    return {"given": flags, "options": options.as_json(), "workload_context_tokens": workload_context_tokens(shape),
            "server_context_tokens": server_context_tokens(shape, options.demos)}


# --- AWS --------------------------------------------------------------------------


def _session(profile: str | None, region: str | None) -> Any:
    """The boto3 session (``AWS_REGION`` honoured as the CDK CLI does); ProfileNotFoundError names the profile."""
    return aws.make_session(profile, region)


def _credentials(session: Any) -> None:
    """Raise CredentialsError when the session has no credentials or they cannot be loaded."""
    from botocore.exceptions import BotoCoreError

    try:
        credentials = session.get_credentials()
    except BotoCoreError as exc:
        failure = aws.classify(exc)
        raise aws.CredentialsError(failure.code, f"AWS credentials could not be loaded ({exc})") from None
    if credentials is None:
        raise aws.CredentialsError(aws.NO_CREDENTIALS)


def _signing_session(args: argparse.Namespace, env: EnvConfig, selection: tuple[str, ...] | None
                     ) -> tuple[Any, str]:
    """For ``--backends`` naming Bedrock's OpenAI-compatible endpoint without a Bedrock API key: the session whose
    credentials sign its requests, read locally with no AWS endpoint asked (None when not needed, or when there
    are none), and why there are none."""
    if selection is None or MANTLE not in selection or env.mantle.auth_mode != aws.SIGNED:
        return None, ""
    try:
        session = _session(args.profile, args.region or env.mantle.region)
        _credentials(session)
    except aws.CredentialsError as exc:
        return None, exc.cause
    return session, ""


def check_identity(session: Any, region: str) -> str:
    """The account id from ``sts get_caller_identity`` (short timeouts); CredentialsError or UnreachableError else."""
    return aws.check_credentials(session, region)


# --- the command ------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    runner = _runner()
    parser = build_parser(runner)
    args = parser.parse_args(argv)
    if args.parsed_options:
        print(json.dumps(parsed_options(parser, args, argv), default=str))
        return EXIT_OK
    try:
        runner.check_options(args)
    except ValueError as exc:  # the runner's OptionError: options that do not fit together
        parser.error(str(exc))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    previous = signal.signal(signal.SIGTERM, _interrupt)
    ui = Ui()
    try:
        return _main(args, os.environ if env is None else env, runner, ui)
    except (UsageError, aws.CredentialsError, aws.UnreachableError) as exc:
        ended = aws.outcome(exc)
        assert ended is not None  # the kit maps each of the three
        ui.error(ended.line + ("" if isinstance(exc, UsageError) else AWS_ALTERNATIVE))
        return ended.code
    except KeyboardInterrupt:
        ui.error("interrupted; everything this command started has been stopped")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _main(args: argparse.Namespace, env: Mapping[str, str], runner: ModuleType, ui: Ui) -> int:
    try:
        catalog = load_catalog()
        env_config = from_env(env, catalog, region=args.region)
        selection = parse_names(args.backends) if args.backends else env_config.only
    except (UnknownBackendError, CatalogError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    tier = args.bedrock_tier
    priced = offline_tiers(env_config.bedrock_model)
    if tier != STANDARD_TIER and tier not in priced:
        raise UsageError(f"--bedrock-tier {tier}: rigs/prices.yaml has no {tier} tier price for "
                         f"{env_config.bedrock_model} (it has: {', '.join(priced) or 'none'}); add one with its "
                         "source, or leave --bedrock-tier out")
    args.backends = ",".join(selection) if selection else None  # the user's choice, BACKENDS included: run.json keeps it
    if args.region and args.region not in REGIONS:
        raise UsageError(f"--region {args.region}: this app deploys only to {', '.join(REGIONS)}")
    stand_in = _stand_in(args)

    session, aws_ok, aws_reason, discovery, account = None, False, "", None, None
    required = needs_aws(selection, env_config)
    if selection is None or required:
        try:
            session = _session(args.profile, args.region)
            _credentials(session)
        except aws.CredentialsError as exc:
            if (required or args.profile) and not args.list:
                raise
            aws_reason, session = exc.cause, None
        else:
            with ui.step("checking the AWS session"):
                account = check_identity(session, args.region or env_config.bedrock_region)
            aws_ok = True
            # A rig given by *_URL is looked for too: if it is deployed and running, it bills unmeasured.
            names = [n for n in (selection or KNOWN) if n not in {b.name for b in env_config.backends if not b.custom}]
            with ui.step("looking for deployed rigs"):
                discovery = Discoverer(AwsClients(session), catalog).discover(
                    (args.region,) if args.region else REGIONS, names)

    signer, unsigned = (None, "") if aws_ok else _signing_session(args, env_config, selection)
    overrides = {key: env[key] for key in ("G6_MODEL", "G5G_MODEL", "INF2_MODEL", "TRN1_MODEL", "SM_MODEL")
                 if env.get(key, "").strip()}
    plan = make_plan(catalog=catalog, env=env_config, selection=selection, local=args.local, aws_ok=aws_ok,
                     aws_reason=aws_reason or unsigned, discovery=discovery, model_overrides=overrides,
                     bedrock_tier=tier, can_sign=signer is not None)
    plan.ready = [identify(b) for b in plan.ready]
    if stand_in is not None:
        plan.ready = [stand_in.plays(b) if descriptor(b.kind).played_by_stand_in and not b.custom else b
                      for b in plan.ready]
    shadows = {b.name: shadow_note(b, found, catalog) for b, found in plan.shadowed}

    if args.list:
        print_list(plan, account, args.profile, discovery, shadows=shadows, stand_in=stand_in)
        return EXIT_OK

    _report_skips(plan, selection, ui)
    for name, note in shadows.items():
        ui.note(f"warning: {note}")
    plan.ready = [replace(b, metadata={**b.metadata, "shadows": shadows[b.name]}) if b.name in shadows else b
                  for b in plan.ready]
    if plan.forwards and stand_in is None:
        try:
            check_ssm_tools()
        except ForwardToolsMissing as exc:
            raise UsageError(str(exc)) from None
    if plan.empty:
        ui.error("nothing to run: " + ("; ".join(map(str, plan.skipped)) or "no backend selected"))
        return EXIT_FAILED
    out_dir = _evidence_folder(args.out)
    run_session = session if aws_ok else None
    if signer is not None and not env_config.mantle.replaced:
        run_session = signer  # Bedrock's endpoint named alone: priced through the Pricing API too, as Bedrock is
    try:
        return _run(args, plan, runner, ui, out_dir, run_session, stand_in)
    finally:
        evidence.release_if_unused(out_dir)


def _evidence_folder(out: Path | None) -> Path:
    """This run's evidence folder, claimed before anything starts (UsageError when it cannot be)."""
    try:
        return evidence.claim_folder(out) if out else evidence.fresh_results_dir(Path("results"))
    except evidence.FolderInUse as exc:
        raise UsageError(f"--out: {exc}") from None
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create the evidence folder ({exc.strerror or exc})") from None


def _run(args: argparse.Namespace, plan: BackendPlan, runner: ModuleType, ui: Ui, out_dir: Path, session: Any,
         stand_in: StandIn | None = None) -> int:
    failed = list(plan.missing)
    with _cleanup_shielded() as stack:
        backends = list(plan.ready)
        if plan.local:
            backends.append(_start_local(stack, out_dir, ui))
        backends += _open_forwards(stack, plan, args, out_dir, ui, failed, stand_in)
        backends.sort(key=lambda b: sort_key(b.name))
        if not backends:
            ui.error("no backend could be reached")
            return EXIT_FAILED
        with ui.step("reading what serves each backend (engine, model, instance, image)"):
            backends = read_all(backends, session)
        from .reach.measured_kv import record_all  # the sizing's pydantic records: loaded when a run starts

        for line in record_all(backends, out_dir.name):
            ui.note(line)
        backends = _confirmed(backends, ui, failed)
        if not backends:
            ui.error("no backend could be reached")
            return EXIT_FAILED
        here = [b.name for b in backends if "rig_load" not in b.metadata]
        if getattr(args, declared.Declared.load_from.name, None) == "rig" and here:
            ui.note(f"--load-from rig: {', '.join(here)} {'is' if len(here) == 1 else 'are'} not reached through a "
                    f"port forward to a rig of ours, so {'its' if len(here) == 1 else 'their'} load is sent from here")
        ui.note("running on " + ", ".join(b.name for b in backends) + f"; evidence in {out_dir}")
        code = runner.run(backends, args, out_dir=out_dir, session=session)
    if failed:
        ui.error("not run: " + ", ".join(sorted(set(failed), key=sort_key)))
        return code or EXIT_FAILED
    return code


def _confirmed(backends: list[Backend], ui: Ui, failed: list[str]) -> list[Backend]:
    """``backends`` less those whose endpoint said, as what served them was read, that it does not serve their model
    where they call it (Bedrock's OpenAI-compatible endpoint under another route): one line each, and not run."""
    kept = []
    for backend in backends:
        refusal = route_refusal(backend)
        if refusal:
            ui.error(f"{backend.name}: {refusal}")
            failed.append(backend.name)
        else:
            kept.append(backend)
    return kept


def _stand_in(args: argparse.Namespace) -> StandIn | None:
    """``--stand-in``'s server (None: not given), and ``--tunnel-limit`` only with it (UsageError)."""
    try:
        stand_in = parse_stand_in(args.stand_in).identified() if args.stand_in else None
    except StandInError as exc:
        raise UsageError(str(exc)) from None
    if args.tunnel_limit and stand_in is None:
        raise UsageError("--tunnel-limit shapes the relays of an offline rehearsal: give it with --stand-in (a real "
                         "SSM forward is measured, not shaped)")
    return stand_in


def _report_skips(plan: BackendPlan, selection: tuple[str, ...] | None, ui: Ui) -> None:
    """One line for what is simply not set up; one line each for real problems."""
    unconfigured = [s.name for s in plan.skipped
                    if (selection is None or s.name not in selection)
                    and s.reason.startswith(("no deployed stack found", "not discovered:", "no AWS credentials"))]
    if unconfigured:
        ui.note(f"not configured: {', '.join(dict.fromkeys(unconfigured))} (--list says why)")
    for skip in plan.skipped:
        if skip.name not in unconfigured:
            ui.note(f"skipped {skip}")
    if plan.local and plan.local_reason.startswith("nothing else"):
        ui.note(f"using the local rig: {plan.local_reason}")


def _start_local(stack: ExitStack, out_dir: Path, ui: Ui) -> Backend:
    config = LocalRigConfig()
    with ui.step("starting the local rig (llama-server)"):
        try:
            rig = stack.enter_context(local_rig_process(config, log_dir=out_dir / "logs"))
        except LocalRigError as exc:
            raise UsageError(str(exc)) from None
    ui.note(f"local rig: {rig.base_url} ({rig.ready.describe()})")
    return rig.backend()


def _open_forwards(stack: ExitStack, plan: BackendPlan, args: argparse.Namespace, out_dir: Path, ui: Ui,
                   failed: list[str], stand_in: StandIn | None = None) -> list[Backend]:
    if not plan.forwards:
        return []
    forwards = stack.enter_context(ForwardSet())
    taken: set[int] = set()

    def started(target: ForwardTarget, preferred: int | None) -> PortForward:
        port = preferred_port(preferred, taken)
        taken.add(port)
        if stand_in is not None:  # the stand-in plays the rig: a relay to it instead of an SSM session
            forward = forwards.add(RelayPortForward(target.name, target_port=stand_in.port, local_port=port,
                                                    target_host=stand_in.host, log_dir=out_dir / "logs",
                                                    shaping=Shaping(args.tunnel_limit) if args.tunnel_limit else None))
        else:
            forward = forwards.add(SsmPortForward(
                target.name, instance_id=target.found.instance_id or "",
                remote_port=target.found.outputs.remote_port or 0, region=target.found.region, local_port=port,
                profile=args.profile, log_dir=out_dir / "logs"))
        forward.start()  # from the main thread (see processes.spawn)
        return forward

    pending = [(target, started(target, target.local_port)) for target in plan.forwards]
    backends: list[Backend] = []
    opened: list[tuple[ForwardTarget, PortForward, Any]] = []
    # The waits run in threads; on Ctrl-C the caller closes the forwards, which ends them
    # at once (so the pool is not waited for here).
    pool = ThreadPoolExecutor(max_workers=len(pending), thread_name_prefix="forward-open")
    try:
        kind = "relay(s) to the stand-in" if stand_in is not None else "SSM port forward(s)"
        with ui.step(f"opening {len(pending)} {kind}, waiting for an answer through each"):
            models = {t.name: (stand_in and stand_in.model) or t.model_id for t, _ in pending}
            futures = [(t, f, pool.submit(f.open, models[t.name], args.ready_timeout)) for t, f in pending]
            for target, forward, future in futures:
                try:
                    try:
                        ready = future.result()
                    except PortTaken as exc:  # taken since it looked free (another run): once more, elsewhere
                        logger.warning("backend=<%s> | %s", target.name, exc)
                        taken_port, forward = forward.local_port, started(target, None)
                        ui.note(f"{target.name}: port {taken_port} was taken by another program after it looked "
                                f"free; trying port {forward.local_port} instead")
                        ready = pool.submit(forward.open, models[target.name], args.ready_timeout).result()
                except ForwardError as exc:
                    ui.error(f"{target.name} not reachable: {exc}")
                    failed.append(target.name)
                    continue
                ui.note(f"{target.name}: {forward.describe()} ({ready.describe()})")
                opened.append((target, forward, ready))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    for target, forward, ready in opened:
        tunnel = _spread(forwards, target, forward, args, ui, models[target.name], stand_in, out_dir)
        rig_load = _rig_load(target, stand_in)
        backend = target.backend(forward.base_url, forward.describe(), {"readiness_probe": ready.describe(), **tunnel,
                                                                        **({"rig_load": rig_load} if rig_load else {})})
        if getattr(args, declared.Declared.load_from.name, None) == "rig" and not rig_load:
            ui.note(f"{target.name}: its stack has no load generator outputs (deployed before --load-from rig): its "
                    "levels are sent from here, through the tunnel; deploy it again to load it from the rig")
        backends.append(stand_in.plays(backend) if stand_in is not None else backend)
    return backends


def _rig_load(target: ForwardTarget, stand_in: StandIn | None) -> dict[str, Any] | None:
    """How ``--load-from rig`` reaches ``target``'s instance (``rig_load`` metadata, :mod:`agent.reach.run_command`):
    Run Command with the stack's load generator and bucket (offline, moto's server runs it, loading the stand-in);
    None where the stack lacks the outputs (offline: the load generator run here)."""
    from rigs.catalog.runtimes import runtime

    from .reach.run_command import LOCAL_WHERE

    outputs, boot = target.found.outputs, runtime(target.found.outputs.runtime).boot
    url = f"{stand_in.base_url.rstrip('/')}/chat/completions" if stand_in is not None else \
        f"http://127.0.0.1:{outputs.remote_port}/v1/chat/completions"
    if not (outputs.load_generator_url and outputs.load_generator_sha256 and outputs.load_results_bucket) \
            or boot is None or not target.found.instance_id:
        return {"command": "local", "url": url, "where": LOCAL_WHERE} if stand_in is not None else None
    return {"command": "ssm", "instance_id": target.found.instance_id, "region": target.found.region,
            "bucket": outputs.load_results_bucket, "generator_url": outputs.load_generator_url,
            "generator_sha256": outputs.load_generator_sha256, "container": boot.container_name, "url": url,
            "where": f"{target.found.instance_id} itself, via SSM Run Command"
            + (" (offline: moto's server ran it here, loading the stand-in)" if stand_in is not None else "")}


def _ssm_forwards(target: ForwardTarget, args: argparse.Namespace, out_dir: Path, taken: set[int]
                  ) -> Callable[[str, int], ProcessPortForward]:
    """SSM port forwards to ``target``'s instance, each on a free local port."""
    def make(name: str, remote_port: int) -> ProcessPortForward:
        port = preferred_port(None, taken)
        taken.add(port)
        return SsmPortForward(name, instance_id=target.found.instance_id or "", remote_port=remote_port,
                              region=target.found.region, local_port=port, profile=args.profile,
                              log_dir=out_dir / "logs")
    return make


def _spread(forwards: ForwardSet, target: ForwardTarget, first: PortForward, args: argparse.Namespace, ui: Ui,
            model: str, stand_in: StandIn | None, out_dir: Path) -> dict[str, Any]:
    """One forward's capacity and the pool of forwards to ``target`` (:mod:`agent.reach.pool`): its metadata."""
    assert isinstance(first, ProcessPortForward)
    with ExitStack() as local:
        source = local.enter_context(LocalByteSource()) if stand_in is not None else None
        taken = {f.local_port for f in forwards}
        make = relays(host=stand_in.host, source_port=source.port, log_dir=out_dir / "logs", taken=taken,
                      shaping=Shaping(args.tunnel_limit) if args.tunnel_limit else None) \
            if stand_in is not None and source is not None else _ssm_forwards(target, args, out_dir, taken)
        kind = "ssm" if source is None else ("relay, shaped" if args.tunnel_limit else "relay")
        serving = stand_in.port if stand_in is not None else (target.found.outputs.remote_port or 0)
        # the runner's options (a test's runner declares none)
        levels = getattr(args, declared.Declared.concurrency.name, None) or (1,)
        width = (getattr(args, declared.Declared.max_concurrency.name, None) or DEFAULT_MAX_CONCURRENCY) \
            if levels == declared.AUTO else max(levels)
        with ui.step(f"{target.name}: measuring one forward's capacity, opening the pool"):
            found = spread(forwards=forwards, first=first, make=make, serving_port=serving,
                           source_port=source.port if source else BYTE_SOURCE_PORT, kind=kind, model=model,
                           width=width, wanted=args.forwards, ready_timeout_s=args.ready_timeout)
    ui.note(f"{target.name}: {describe_tunnel(found['tunnel'])}")
    return found


@contextmanager
def _cleanup_shielded() -> Iterator[ExitStack]:
    """An ExitStack whose cleanup is not cut short by a second Ctrl-C or a SIGTERM."""
    stack = ExitStack()
    try:
        yield stack
    finally:
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            stack.close()
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)


# --- --list -------------------------------------------------------------------------


def print_list(plan: BackendPlan, account: str | None, profile: str | None, discovery: Discovery | None,
               out: Any = None, shadows: Mapping[str, str] | None = None, stand_in: StandIn | None = None) -> None:
    """``--list``: what would run, how each is reached, and why anything is skipped."""
    out = out or sys.stdout
    write = lambda line="": print(line, file=out)  # noqa: E731
    if account:
        regions = ", ".join(discovery.regions) if discovery else "-"
        write(f"AWS: account {account}" + (f", profile {profile}" if profile else "") + f"; searched {regions}")
    else:
        write("AWS: not used")
    write()
    rows: list[tuple[str, str, str]] = []
    for backend in plan.ready:
        how = backend.metadata.get("reached_via", "")
        if backend.custom:
            how = f"{backend.label}: {how}" + ("; not priced (no instance type stated)"
                                               if backend.metadata.get("unpriced") else "")
        rows.append((backend.name, backend.model_id, how))
    for target in plan.forwards:
        rows.append((target.name, target.model_id,
                     f"{target.found.describe()} to 127.0.0.1:{target.local_port} (another port if taken)"))
    if plan.local:
        rows.append(("local", MODEL_ID, _local_reach(plan.local_reason)))
    rows.sort(key=lambda row: sort_key(row[0]))
    if rows:
        write("Would run:")
        width = max(len(r[0]) for r in rows)
        model_width = max(len(r[1]) for r in rows)
        for name, model, how in rows:
            write(f"  {name:<{width}}  {model:<{model_width}}  {how}")
    else:
        write("Would run: nothing")
    notes = one_model_notes(plan)
    if notes:
        write()
        write("Serving their own model only (the others serve another):")
        for note in notes:
            write(f"  {note}")
    if plan.skipped:
        write()
        write("Skipped:")
        for skip in plan.skipped:
            write(f"  {skip}")
    if shadows:
        write()
        write("Deployed but not measured (a *_URL variable replaces them, and they bill meanwhile):")
        for name, note in shadows.items():
            write(f"  {name}: {note}")
    if plan.missing:
        write()
        write("Selected but not available: " + ", ".join(plan.missing))
    if plan.forwards and stand_in is None:
        try:
            check_ssm_tools()
        except ForwardToolsMissing as exc:
            write()
            write(f"Warning: {exc}")


def one_model_notes(plan: BackendPlan) -> list[str]:
    """For each rig whose server has its model compiled in (the Neuron rigs, ``other_models`` in the catalog) beside
    rigs that serve another model: one line per other model saying which it serves, and how it could serve that one
    (AWS's vLLM Neuron image, ``-c model.<rig>=ID``) or why not."""
    def rig(target: Any) -> Any:
        return getattr(target, "rig", None)

    fixed = [(t.name, rig(t)) for t in plan.forwards if getattr(rig(t), "other_models", None)]
    if not fixed:
        return []
    from rigs.catalog.model import load_catalog

    catalog = load_catalog()
    asked = [t.model_id for t in plan.forwards if not getattr(rig(t), "other_models", None)] + \
        [b.model_id for b in plan.ready if b.endpoint_name]
    others = {(catalog.models[m].name if m in catalog.models else m): m for m in asked}
    lines = []
    for name, own in fixed:
        for family, model_id in sorted(others.items()):
            if family == own.weights.model:
                continue
            card = catalog.models.get(model_id)
            why = catalog.neuron_why_not(own, family, card.architecture if card else None)
            lines.append(f"{name}: serves {own.weights.model}, not {family}: " + (
                why or f"deploy it with -c model.{name}={model_id} to serve it with AWS's vLLM Neuron image"))
    return lines


def _local_reach(reason: str) -> str:
    try:
        install = find_installation()
    except LocalRigError as exc:
        return f"{reason}; but NOT INSTALLED: {exc}"
    return (f"llama-server ({install.version}) on 127.0.0.1, started by this command "
            f"({serve_flags(LocalRigConfig())}); {reason}")


if __name__ == "__main__":
    sys.exit(main())
