"""The rehearsal's first step: the plan and its estimate, before anything is created.

The rigs already deployed are left out (a rehearsal never touches a stack it did not create);
``doctor`` checks the account and rules out what cannot deploy; ``preflight`` records where each rig
goes first, from the doctor's own checks (:mod:`rigs.deploy.sequence`); the estimate (:mod:`.estimate`)
says what it may cost and how long it may take; the plan is said and written (:mod:`.plan`). Then the
user says yes (or ``--yes``).
"""

from __future__ import annotations

import shlex
from typing import Any, Sequence

from rigs import aws, local_tools
from rigs.account.doctor import SKIPPABLE, ignored_checks
from rigs.catalog.model import BIG_VARIANT, BedrockBackend, DeployableRig, Ec2Rig
from rigs.catalog.pricing import PriceError
from rigs.contract import REGIONS
from rigs.deploy import placement
from rigs.deploy.sequence import DeploySequence
from rigs.estate import whereabouts
from rigs.rehearsal import estimate as estimating
from rigs.rehearsal import plan as planning
from rigs.rehearsal.bring_up import bootstrap
from rigs.rehearsal.state import Phase, State

NO_OFFLINE_BEDROCK = "no offline stand-in for Bedrock (moto has no Bedrock runtime): left out of an offline rehearsal"


def plan(state: State, selected: Sequence[Any]) -> estimating.Estimate | None:
    """The phases and the estimate, said and written as ``plan.json``; None when there is nothing to rehearse or
    the account cannot be read (said)."""
    state.session = state.make_session()
    region = state.options.region or state.session.region_name or "us-east-1"
    account = aws.check_credentials(state.session, region)
    state.say(f"account {account}" + (f" (moto's, at {state.offline.endpoint_url})" if state.offline else ""))
    rigs = _deployable(state, selected)
    if rigs is None:
        return None
    if rigs and state.options.offline:
        regions = [r for r in REGIONS if any(r in rig.regions for rig in rigs)]
        state.say(f"offline: bootstrapping moto's account for the CDK in {', '.join(regions)}")
        bootstrap(state, regions)
    candidates = regions_to_try(state, rigs) if rigs else {}
    if candidates is None:
        return None
    rigs = [rig for rig in rigs if rig.name in candidates]
    state.phases.append(Phase(estimating.SMALL, {r.name: (r, candidates[r.name]) for r in rigs}))
    if state.options.big:
        big = Phase(estimating.BIG)
        for rig in rigs:
            if BIG_VARIANT in rig.variants:
                big.plans[rig.name] = (rig.with_variant(BIG_VARIANT), candidates[rig.name])
            else:
                state.big_skipped[rig.name] = rig.no_big_variant or f"no {BIG_VARIANT!r} variant in the catalog"
        state.phases.append(big)
    result = estimate(state)
    write_plan(state, result, account)
    if not rigs and not state.with_bedrock():
        state.say("nothing to rehearse: " + ("; ".join(f"{n}: {r}" for n, r in state.skipped.items()) or "no rig"))
        return None
    return result


def _deployable(state: State, selected: Sequence[Any]) -> list[DeployableRig] | None:
    """The selected rigs to deploy: Bedrock and the rigs already deployed left out (with why); None when the
    regions could not all be asked where the app's stacks are."""
    rigs: list[DeployableRig] = []
    for rig in selected:
        if not isinstance(rig, BedrockBackend):
            rigs.append(rig)
        elif state.options.offline:
            state.skipped[rig.name] = NO_OFFLINE_BEDROCK
    state.before = whereabouts.locate(whereabouts.app_stacks(), session=state.session)
    if not state.before.complete:
        state.say(f"error: {state.before.summary()}; without every region's answer the rehearsal cannot tell its own "
                  "stacks from yours: nothing created")
        return None
    for rig in list(rigs):
        regions = state.before.regions_of(rig.stack_name)
        if regions:
            state.skipped[rig.name] = (f"{rig.stack_name} is already deployed in {', '.join(regions)}: not created "
                                       "by this rehearsal, so left alone (leave the rig out, or remove it first)")
            rigs.remove(rig)
    return rigs


def regions_to_try(state: State, rigs: list[DeployableRig]) -> dict[str, list[placement.Candidate]] | None:
    """Doctor, then preflight (once: :mod:`rigs.deploy.sequence`): the regions each rig may try; a rig with
    none is left out, with why. None when the benchmark could not reach the EC2 rigs (nothing created)."""
    from rigs.account.preflight import render_placement

    sequence = DeploySequence(state.session, state.show, state.placement_file)
    allowed = sequence.doctor(rigs, ignored_checks(state.options.bootstrap, state.options.skip_checks))
    if state.options.bootstrap:
        state.say("--bootstrap: a region without the CDK bootstrap is bootstrapped once you say yes")
    for name in state.options.skip_checks:
        state.say(f"--skip-check {name}: the doctor's {SKIPPABLE[name]!r} rows stop no rig")
    for rig in list(rigs):
        if not allowed[rig.name]:
            state.skipped[rig.name] = (f"doctor: cannot deploy anywhere: {', '.join(sequence.blockers(rig.name))} "
                                       "(see its table)")
            rigs.remove(rig)
    if rigs and not state.options.offline and any(isinstance(r, Ec2Rig) for r in rigs):
        missing = [t for t in local_tools.ssm_tools() if not t.ok]
        if missing:
            state.say("error: the benchmark reaches the EC2 rigs through SSM port forwards, which need "
                      + "; ".join(f"{t.name} ({t.problem}; {t.fix})" for t in missing)
                      + ": install them, or leave the EC2 rigs out; nothing created")
            return None
    if not rigs:
        return {}
    plans = sequence.plans(rigs, fresh=True)
    for line in render_placement(sequence.preflight_report):
        state.say(line)
    for name, (_, found) in plans.items():
        if not found:
            state.skipped[name] = "no region where preflight and doctor both allow it"
    return {name: found for name, (_, found) in plans.items() if found}


def estimate(state: State) -> estimating.Estimate:
    """What the phases may cost and take, each rig priced in the first region it tries."""
    book = state.prices()
    items = state.bench.lane_items
    plans = []
    for phase in state.phases:
        for name, (rig, candidates) in phase.plans.items():
            region = candidates[0].region
            try:
                price = book.hourly_price(rig, region)
                usd, where = price.usd_per_hour, price.describe()
            except PriceError as exc:
                usd, where = None, str(exc)
            plans.append(estimating.PhasePlan(
                rig=name, phase=phase.name, region=region, instance_type=rig.instance_type, model_id=rig.model_id,
                ready_timeout_minutes=rig.ready_timeout_minutes,
                max_hours=state.options.max_hours or rig.max_hours, usd_per_hour=usd, price=where,
                lane_minutes=estimating.lane_minutes(rig.runtime, items) if items else 0.0))
    state.price_plans = plans
    bedrock = estimating.lane_minutes("bedrock", items) if items and state.with_bedrock() else 0.0
    return estimating.estimate(plans, state.options.bench_minutes, state.options.destroy_minutes, bedrock)


def write_plan(state: State, result: estimating.Estimate, account: str) -> None:
    """The plan on the terminal and as ``plan.json`` (:mod:`.plan`)."""
    then = {(name, phase.name): [c.region for c in candidates[1:]]
            for phase in state.phases for name, (_, candidates) in phase.plans.items()}
    bedrock_price = None
    if state.with_bedrock():
        bedrock = state.catalog.get("bedrock")
        try:
            bedrock_price = state.prices().bedrock_token_prices(bedrock.model_id, bedrock.regions[0]).describe()
        except PriceError as exc:
            bedrock_price = str(exc)
    benchmark = "python -m agent.run " + (shlex.join(state.bench.words) or "(its default options)")
    for line in planning.lines(state.price_plans, then, result, offline=state.options.offline,
                               bedrock_price=bedrock_price, skipped=state.skipped, no_big_model=state.big_skipped,
                               benchmark=benchmark):
        state.say(line)
    planning.write(state.folder, planning.record(
        state.price_plans, result, account=account, offline=state.options.offline, big=state.options.big,
        skipped=state.skipped, no_big_model=state.big_skipped, benchmark=benchmark))


def consent(state: State, stdin: Any) -> bool:
    """Yes with ``--yes``, else the user's answer on the terminal."""
    if state.options.yes:
        return True
    print("Go on and create these rigs? [y/N] ", end="", file=state.output.out, flush=True)
    try:
        answer = stdin.readline().strip().lower()
    except KeyboardInterrupt:
        answer = ""
    return answer in ("y", "yes")
