"""Which backends a run uses and how each is reached: pure decisions, no I/O.

Inputs are the environment variables (:func:`agent.backends.from_env`), the selection
(``--backends`` / ``BACKENDS``, ``--local``), whether AWS credentials are usable, and
what discovery found. The output says which backends are ready to call, which EC2 rigs
need a port forward, whether the local rig is started, and why anything is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from rigs import aws
from rigs.catalog.model import weights_for
from rigs.catalog.pricing import STANDARD_TIER

from .backends import LOCAL, MANTLE, ORDER, Backend, EnvConfig, bedrock_backend, bedrock_card, endpoint_backend, \
    forwarded_backend, mantle_backend, sort_key
from .bench.results.constants import WEIGHTS_METADATA_PREFIX
from .kinds import descriptor
from .reach.discovery import Discovery, FoundRig, Skipped
from .reach.provenance import instance_facts

if TYPE_CHECKING:
    from rigs.catalog.model import Catalog, Ec2Rig, SageMakerRig

_MODEL_VARS = {"g6": "G6_MODEL", "g5g": "G5G_MODEL", "inf2": "INF2_MODEL", "trn1": "TRN1_MODEL",
               "sagemaker": "SM_MODEL"}


@dataclass(frozen=True, slots=True)
class ForwardTarget:
    """An EC2 rig that is reached through a port forward once it is opened."""

    found: FoundRig
    rig: Ec2Rig
    model_id: str
    local_port: int | None
    """The catalog's preferred local port (the reference's 8001-8004), used when free."""

    @property
    def name(self) -> str:
        return self.found.name

    def backend(self, base_url: str, reached_via: str, extra: Mapping[str, str] | None = None) -> Backend:
        """The Backend once the forward answers at ``base_url``."""
        outputs = self.found.outputs
        return forwarded_backend(self.rig, self.model_id, self.found.region, base_url,
                                 metadata={**self.found.metadata, "reached_via": reached_via, **(extra or {})},
                                 read=instance_facts(self.found.metadata), instance_type=outputs.instance_type,
                                 context_tokens=outputs.context_tokens)


@dataclass(slots=True)
class BackendPlan:
    """The outcome of :func:`make_plan`."""

    ready: list[Backend] = field(default_factory=list)
    forwards: list[ForwardTarget] = field(default_factory=list)
    local: bool = False
    local_reason: str = ""
    skipped: list[Skipped] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Backends named in the selection that cannot be run (the exit code is then not 0)."""
    shadowed: list[tuple[Backend, FoundRig]] = field(default_factory=list)
    """Deployed, running rigs that a ``*_URL`` variable of the same name replaces in this run."""

    @property
    def names(self) -> list[str]:
        names = [b.name for b in self.ready] + [t.name for t in self.forwards] + ([LOCAL] if self.local else [])
        return sorted(names, key=sort_key)

    @property
    def empty(self) -> bool:
        return not (self.ready or self.forwards or self.local)


def needs_aws(selection: tuple[str, ...] | None, env: EnvConfig) -> bool:
    """Whether the selection needs AWS: Bedrock, SageMaker, or an EC2 rig not given by URL. Bedrock's
    OpenAI-compatible endpoint does not: its requests go over HTTP, signed with the credentials of the chain as
    they are found locally (or carrying a Bedrock API key), with no AWS API asked first.

    With no selection AWS is used when credentials exist, but it is not *needed*.
    """
    if selection is None:
        return False
    by_url = {b.name for b in env.backends if not b.needs_aws} | {MANTLE}
    return any(name != LOCAL and name not in by_url for name in selection)


def make_plan(*, catalog: Catalog, env: EnvConfig, selection: tuple[str, ...] | None, local: bool,
              aws_ok: bool, aws_reason: str = "", discovery: Discovery | None = None,
              model_overrides: Mapping[str, str] = MappingProxyType({}), bedrock_tier: str = STANDARD_TIER,
              can_sign: bool = False) -> BackendPlan:
    """Decide the run's backends.

    Args:
        catalog: the rig catalog.
        env: the environment's backends and Bedrock settings.
        selection: ``--backends``/``BACKENDS`` names, or None for everything available.
        local: ``--local`` was given (the local rig runs beside the others).
        aws_ok: AWS credentials were found and accepted (``sts get_caller_identity``).
        aws_reason: why AWS is not used, when ``aws_ok`` is False.
        discovery: what discovery found (None when it did not run).
        model_overrides: ``*_MODEL`` variables, applied to discovered rigs too.
        bedrock_tier: Bedrock's service tier (``--bedrock-tier``).
        can_sign: AWS credentials were found to sign requests with, though not checked with STS (``--backends
            bedrock-mantle`` asks no other AWS endpoint); ``aws_ok`` implies it.
    """
    plan = BackendPlan()
    wanted = set(selection) if selection is not None else None

    def selected(name: str) -> bool:
        return wanted is None or name in wanted

    given = {b.name: b for b in env.backends}
    for name in ORDER:
        if not selected(name):
            continue
        if name in given:
            backend = given[name]
            found = discovery.get(name) if discovery is not None else None
            if found is not None and backend.custom:
                plan.shadowed.append((backend, found))
            if backend.needs_aws and not aws_ok:
                plan.skipped.append(Skipped(name, f"{backend.metadata.get('reached_via')}, but {aws_reason}"))
                plan.missing.append(name)
            else:
                plan.ready.append(backend)
            continue
        if name == MANTLE:
            _plan_mantle(plan, catalog, env, aws_ok or can_sign, aws_reason, wanted is not None)
            continue
        if name == "bedrock":
            if aws_ok:
                plan.ready.append(bedrock_backend(catalog, env.bedrock_model, env.bedrock_region, bedrock_tier))
            else:
                plan.skipped.append(Skipped(name, aws_reason or "no AWS credentials"))
                if wanted is not None:
                    plan.missing.append(name)
            continue
        found = discovery.get(name) if discovery is not None else None
        if found is None:
            if discovery is None:
                plan.skipped.append(Skipped(name, f"not discovered: {aws_reason or 'no AWS credentials'}; "
                                                  f"or give its URL ({_url_hint(name)})"))
            if wanted is not None:
                plan.missing.append(name)
            continue
        rig = _as_deployed(catalog, catalog.get(name), found)
        model_id = model_overrides.get(_MODEL_VARS.get(name, "")) or found.outputs.model_id
        if rig.on_instances:
            plan.forwards.append(ForwardTarget(found=found, rig=rig, model_id=model_id, local_port=rig.local_port))
        elif rig.on_endpoint:
            plan.ready.append(_endpoint_backend(rig, found, model_id))
    if not env.mantle.model_given:
        _follow_the_rigs(plan, catalog, env, wanted is not None)
    if discovery is not None:
        chosen = set(plan.names)
        plan.skipped.extend(s for s in discovery.skipped
                            if (selected(s.name) or s.name not in catalog.rigs) and s.name not in given)
        plan.skipped.sort(key=lambda s: (s.name in chosen, sort_key(s.name)))

    _choose_local(plan, local, wanted, aws_reason)
    return plan


def _as_deployed(catalog: Catalog, rig: Any, found: FoundRig) -> Any:
    """The catalog's rig as its stack serves it (a Neuron rig on AWS's vLLM Neuron image: another runtime, image,
    flags and weights), from the stack's outputs."""
    from rigs.deploy.model_options import as_deployed

    return as_deployed(rig, catalog, found.outputs.runtime, found.outputs.model_id, found.outputs.instance_type)


def _endpoint_backend(rig: SageMakerRig, found: FoundRig, model_id: str) -> Backend:
    """A discovered SageMaker endpoint, reached through the SageMaker runtime API."""
    outputs = found.outputs
    return endpoint_backend(rig, model_id, found.region, outputs.endpoint_name, metadata={
        **found.metadata, "reached_via": f"SageMaker runtime API, endpoint {outputs.endpoint_name} in {found.region}"},
        image_digest=outputs.image_digest, instance_type=outputs.instance_type, context_tokens=outputs.context_tokens)


def _choose_local(plan: BackendPlan, local: bool, wanted: set[str] | None, aws_reason: str) -> None:
    """The local rig: when asked for, and when nothing else is configured and nothing was named."""
    if local or (wanted is not None and LOCAL in wanted):
        plan.local = True
        plan.local_reason = "selected with --local" if local else "selected by name"
    elif wanted is None and plan.empty:
        plan.local = True
        plan.local_reason = ("nothing else is configured (" + (aws_reason or "no AWS backends found")
                             + ", no *_URL variables)")


def _plan_mantle(plan: BackendPlan, catalog: Catalog, env: EnvConfig, can_sign: bool, aws_reason: str, named: bool) -> None:
    """Bedrock's OpenAI-compatible endpoint: ready with a Bedrock API key, or with credentials to sign with."""
    if env.mantle.auth_mode == aws.BEARER or can_sign:
        plan.ready.append(mantle_backend(catalog, env.mantle))
        return
    plan.skipped.append(Skipped(MANTLE, f"{aws_reason or 'no AWS credentials'}, so nothing to sign its requests with, "
                                        f"and no {aws.MANTLE_TOKEN_VAR}"))
    if named:
        plan.missing.append(MANTLE)


def _served_models(plan: BackendPlan, catalog: Catalog) -> set[str]:
    """The models (``weights.model``) the plan's rigs serve, as the catalog states them."""
    models = {w.model for t in plan.forwards if (w := weights_for(t.rig, t.model_id, catalog)) is not None}
    return models | {b.metadata[f"{WEIGHTS_METADATA_PREFIX}model"] for b in plan.ready
                     if not descriptor(b.kind).managed and f"{WEIGHTS_METADATA_PREFIX}model" in b.metadata}


def _follow_the_rigs(plan: BackendPlan, catalog: Catalog, env: EnvConfig, named: bool) -> None:
    """Bedrock's OpenAI-compatible endpoint serves the model the rigs serve (when they all serve one), by the id
    Bedrock gives it; where Bedrock serves no such model it is left out, and says why."""
    mantle = next((b for b in plan.ready if b.name == MANTLE), None)
    served = _served_models(plan, catalog)
    if mantle is None or len(served) != 1 or served == {mantle.metadata.get(f"{WEIGHTS_METADATA_PREFIX}model")}:
        return
    model = served.pop()
    plan.ready.remove(mantle)
    card = bedrock_card(catalog, model)
    if card is not None and card.bedrock_id:
        plan.ready.append(mantle_backend(catalog, env.mantle, model))
        plan.ready.sort(key=lambda b: sort_key(b.name))
        return
    note = f" ({card.bedrock_note})" if card is not None else ""
    plan.skipped.append(Skipped(MANTLE, f"the rigs serve {model}, which Bedrock's OpenAI-compatible endpoint does not "
                                        f"serve{note} (the catalog's models, bedrock_id); BEDROCK_MANTLE_MODEL names "
                                        "another"))
    if named:
        plan.missing.append(MANTLE)


def _url_hint(name: str) -> str:
    return "SM_ENDPOINT" if name == "sagemaker" else f"{name.upper()}_URL"
