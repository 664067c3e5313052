"""The rehearsal's first step: the plan and its estimate, before anything is created.

With ``--model`` (or ``--workload``: the vLLM rigs at its context, ``-c max_model_len.<rig>=N``), before anything
else (:func:`choose`): each rig asked, as ``python -m rigs up -c model.<rig>=ID`` would serve it
(:func:`rigs.deploy.model_options.served_rig`: the size it fits, or why it cannot serve it), so that the cost bound,
the doctor, preflight and the estimate are for the sizes that will launch; a rig that cannot serve it is left out
with its one line. The rigs already deployed are left out (a rehearsal never touches a stack it did
not create); ``doctor`` checks the account and rules out what cannot deploy; ``preflight`` records where each rig
goes first, from the doctor's own checks (:mod:`rigs.deploy.sequence`); the estimate (:mod:`.estimate`) says what
it may cost and how long it may take; the plan is said and written (:mod:`.plan`). Then the user says yes (or
``--yes``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Sequence

from kit.command import UsageError
from rigs import aws, local_tools
from rigs.account.doctor import SKIPPABLE, ignored_checks
from rigs.catalog.model import BIG_VARIANT, BedrockBackend, Catalog, DeployableRig
from rigs.catalog.pricing import PriceError
from rigs.catalog.runtimes import BEDROCK_MANTLE, runtime
from rigs.catalog.served import ModelCard
from rigs.context_keys import HF_TOKEN_PARAMETER, MODEL_CONFIG, OptionsError, RIG_MAX_MODEL_LEN, RIG_MODEL
from rigs.contract import REGIONS
from rigs.deploy.model_options import ModelOptionsError, ModelRequest, serve, served_rig
from rigs.deploy.sequence import DeploySequence
from rigs.estate import whereabouts
from rigs.placement import placement
from rigs.rehearsal import estimate as estimating
from rigs.rehearsal import plan as planning
from rigs.rehearsal.bring_up import bootstrap
from rigs.rehearsal.state import Options, Phase, State
from rigs.sizing import readiness
from rigs.sizing.config import ConfigError, read_config

NO_OFFLINE_BEDROCK = "no offline stand-in for Bedrock (moto has no Bedrock runtime): left out of an offline rehearsal"
_KEY_PREFIX = re.compile(r"^-c (model|instance_type|max_model_len)\.[\w-]+(=\S+)?: ")
"""The ``-c`` key ``serve``'s one line starts with: the rehearsal's user gave ``--model`` or ``--workload``, not the
key."""


@dataclass(frozen=True)
class Chosen:
    """What ``--model`` leaves to rehearse: the rigs as they will serve it and the Bedrock backends, the others and
    why, what each serves it on, and the ``-c`` values of every ``up``."""

    rigs: list[Any]
    left_out: dict[str, str] = field(default_factory=dict)
    sized: list[str] = field(default_factory=list)
    context: dict[str, str] = field(default_factory=dict)


def choose(options: Options, catalog: Catalog, selected: Sequence[Any], context_tokens: int | None = None) -> Chosen:
    """The rigs ``options.model`` is rehearsed on (all of ``selected`` without it), each as it will be served;
    with ``context_tokens`` (the workload's, :func:`.bench_options.server_context`), every rig that serves any
    model served at that context (``-c max_model_len.<rig>=N``: sized at it, never above the model's longest).

    Raises UsageError, before anything runs: a model the catalog does not list and no ``--model-config``, a config it
    cannot read, a bad token parameter, ``--big`` with it, or a model option without ``--model``.
    """
    if options.model is None:
        given = [flag for flag, value in (("--model-config", options.model_config),
                                          ("--hf-token-parameter", options.hf_token_parameter)) if value]
        if given:
            raise UsageError(f"{', '.join(given)}: for --model ID (the Hugging Face id the rigs serve); give it too")
        if context_tokens is None:
            return Chosen(list(selected))
    card = _card(options, catalog) if options.model is not None else None
    context = {HF_TOKEN_PARAMETER.key(): options.hf_token_parameter} if options.hf_token_parameter else {}
    chosen = Chosen([], context=context)
    for rig in selected:
        if not rig.deployed:
            reason = _bedrock_left_out(rig, card, options) if options.model is not None else None
            if reason is None:
                chosen.rigs.append(rig)
            else:
                chosen.left_out[rig.name] = reason
            continue
        _choose_rig(chosen, rig, catalog, card, options, _own_keys(rig, options, card, context_tokens))
    return chosen


def _own_keys(rig: DeployableRig, options: Options, card: ModelCard | None,
              context_tokens: int | None) -> dict[str, str]:
    """The ``-c`` values of ``rig``'s own up: ``--model`` (and its config), the workload's context where its runtime
    serves any model."""
    own = {RIG_MODEL.key(rig=rig.name): options.model} if options.model is not None else {}
    if options.model_config is not None:
        own[MODEL_CONFIG.key(rig=rig.name)] = str(options.model_config)
    if context_tokens is not None and (runtime(rig.runtime).serves_any_model or _another_model(rig, options, card)):
        own[RIG_MAX_MODEL_LEN.key(rig=rig.name)] = str(context_tokens)
    return own


def _another_model(rig: DeployableRig, options: Options, card: ModelCard | None) -> bool:
    """Whether ``--model`` asks a rig whose server has its own model compiled in (a Neuron rig) for another one: it
    then serves it on AWS's vLLM Neuron image, at the workload's context, or is left out with why."""
    return options.model is not None and (card is None or card.name != rig.weights.model)


def _choose_rig(chosen: Chosen, rig: DeployableRig, catalog: Catalog, card: ModelCard | None, options: Options,
                own: dict[str, str]) -> None:
    """``rig`` as ``own`` serves it, into ``chosen``: its size and why, or left out with why."""
    if not own:
        chosen.rigs.append(rig)  # nothing asked of it: the Neuron rigs without --model keep theirs
        return
    asked = options.model or rig.model_id
    try:
        served = served_rig(rig, catalog, {**chosen.context, **own}.get)
    except (ModelOptionsError, OptionsError) as exc:
        chosen.left_out[rig.name] = f"cannot serve {asked}: {_for_rehearse(str(exc))}"
        return
    chosen.rigs.append(served.rig)
    chosen.context.update(own)
    chosen.sized.append(f"{rig.name}: {served.said.split(': ', 1)[1]}" if served.said else
                        f"{rig.name}: {asked} on {served.rig.instance_type}")


def _card(options: Options, catalog: Catalog) -> ModelCard | None:
    """``--model``'s entry of the catalog's models section (None: one ``--model-config`` describes); UsageError for
    what cannot be rehearsed."""
    card = catalog.models.get(options.model or "")
    if card is None and options.model_config is None:
        raise UsageError(f"--model {options.model}: not in the catalog's models section ({', '.join(catalog.models)}); "
                         "give its config.json with --model-config FILE (read here, never fetched)")
    if options.model_config is not None:
        try:
            read_config(options.model_config)
        except ConfigError as exc:
            raise UsageError(f"--model-config {exc}") from None
    if options.big:
        raise UsageError(f"--big moves the rigs to the catalog's bigger Gemma 4, and --model {options.model} to yours: "
                         "give one of them")
    if options.hf_token_parameter is not None:
        try:
            serve(catalog.deployable()[0], catalog, ModelRequest(hf_token_parameter=options.hf_token_parameter))
        except ModelOptionsError as exc:
            raise UsageError(_for_rehearse(str(exc))) from None
    return card


def _bedrock_left_out(rig: BedrockBackend, card: ModelCard | None, options: Options) -> str | None:
    """Why a Bedrock backend is not benchmarked with ``--model`` (None: it is): Bedrock's OpenAI-compatible endpoint
    where the catalog names the model's Bedrock id; the Converse backend (another model) only when named."""
    if runtime(rig.runtime) is BEDROCK_MANTLE:
        if card is not None and card.bedrock_id:
            return None
        known = f" ({card.bedrock_note})" if card is not None and card.bedrock_note else ""
        return (f"Bedrock's OpenAI-compatible endpoint serves {options.model} under no id the catalog's models "
                f"section names (bedrock_id){known}")
    if rig.name in options.rigs:
        return None
    return (f"serves {rig.weights.model}, not {options.model} (another model: name {rig.name} to benchmark it "
            "beside)")


def _for_rehearse(line: str) -> str:
    """``serve``'s one line as the rehearsal's options name things."""
    return (_KEY_PREFIX.sub("", line).replace("-c hf_token_parameter=NAME", "--hf-token-parameter NAME")
            .replace("-c hf_token_parameter=", "--hf-token-parameter "))


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
        if rig.deployed:
            rigs.append(rig)
        elif state.options.offline:
            state.skipped[rig.name] = NO_OFFLINE_BEDROCK
        else:
            state.bedrock += (rig.name,)
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
    if rigs and not state.options.offline and any(r.on_instances for r in rigs):
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
                ready_timeout_minutes=rig.ready_timeout_minutes, ready_basis=readiness.describe(rig),
                max_hours=state.options.max_hours or rig.max_hours, usd_per_hour=usd, price=where,
                lane_minutes=estimating.lane_minutes(rig.runtime, items) if items else 0.0))
    state.price_plans = plans
    bedrock = sum(estimating.lane_minutes(state.catalog.get(name).runtime, items) for name in state.bedrock) \
        if items and state.with_bedrock() else 0.0
    return estimating.estimate(plans, state.options.bench_minutes, state.options.destroy_minutes, bedrock)


def write_plan(state: State, result: estimating.Estimate, account: str) -> None:
    """The plan on the terminal and as ``plan.json`` (:mod:`.plan`)."""
    then = {(name, phase.name): [c.region for c in candidates[1:]]
            for phase in state.phases for name, (_, candidates) in phase.plans.items()}
    bedrock_prices = {name: _token_price(state, name) for name in state.bedrock} if state.with_bedrock() else {}
    benchmark = "python -m agent.run " + (shlex.join(state.bench.words) or "(its default options)")
    for line in planning.lines(state.price_plans, then, result, offline=state.options.offline,
                               bedrock_prices=bedrock_prices, skipped=state.skipped, no_big_model=state.big_skipped,
                               benchmark=benchmark, model=state.options.model, sized=state.sized,
                               context_tokens=state.context_tokens):
        state.say(line)
    planning.write(state.folder, planning.record(
        state.price_plans, result, account=account, offline=state.options.offline, big=state.options.big,
        skipped=state.skipped, no_big_model=state.big_skipped, benchmark=benchmark, model=state.options.model,
        sized=state.sized, context_tokens=state.context_tokens))


def _token_price(state: State, name: str) -> str:
    """A Bedrock backend's token prices in its first region, for the model it will serve (``--model``'s Bedrock id
    on the OpenAI-compatible endpoint), or why there is none."""
    rig = state.catalog.get(name)
    card = state.catalog.models.get(state.options.model or "")
    model_id = card.bedrock_id if card is not None and card.bedrock_id and runtime(rig.runtime) is BEDROCK_MANTLE \
        else rig.model_id
    try:
        return state.prices().bedrock_token_prices(model_id, rig.regions[0]).describe()
    except PriceError as exc:
        return str(exc)


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
