"""The model a rig serves and the size it runs on, from ``-c`` context: any open model on the vLLM rigs.

Context keys (all optional; declared with the app's others, :data:`rigs.deploy.options.MODEL_KEYS`;
:func:`model_request` reads them):

=========================  ========================================================================
``model.<rig>``            a Hugging Face model id for g6, g5g or sagemaker (the catalog's models section
                           names its architecture, tool-call parser and licence)
``model``                  the same for every rig (a Neuron rig keeps its own where neither of its images serves it)
``model_config.<rig>``     a local ``config.json`` of a model the catalog does not list (read, never fetched)
``instance_type.<rig>``    the instance type to run on instead of the one sized to fit
``hf_token_parameter``     an SSM SecureString parameter holding a Hugging Face token, for gated models
                           (EC2 rigs: the boot script reads it and hands it to the server)
``max_model_len.<rig>``    the tokens one sequence may hold: the rig serves this or the model's longest
                           context, whichever is shorter (``--max-model-len``; SageMaker's
                           ``SM_VLLM_MAX_MODEL_LEN``), and is sized at it (``rigs rehearse --workload``
                           sets it to the workload's context)
``max_model_len``          the same for every rig that serves any model (the Neuron rigs keep theirs)
=========================  ========================================================================

A model that does not fit the rig's instance type (``rigs/sizing/fit.py``, at the context it serves: ``max_model_len``,
else the rig's own ``--max-model-len``, never above the model's longest) goes
to the smallest size that fits of the families the rig deploys on (its own first, then the catalog's ``also_on``:
g6 also on g6e and g5), with vLLM's tensor parallelism across its GPUs and every GPU serving (replicas of that degree
over the rest, vLLM's ``--data-parallel-size``); the choice is said in one line. One that fits no size is refused in
one line naming the largest size and the bytes it lacks; one whose weights vLLM cannot run on any of those GPUs
(``rigs/sizing/compat.py``: MXFP4 or FP8 below compute capability 8.0) in one line naming the rule. A key given empty,
and ``model_config.<rig>`` with no model named, are refused too. A Neuron rig (inf2, trn1) serves another model with
AWS's vLLM Neuron image where NxD Inference serves its class (``rigs/deploy/neuron_vllm.py``), sized the same way over
NeuronCores for the sequences it is compiled for; for any other model it says why not, in one line. Nothing changes
for a rig none of these keys name.
:func:`served_rig` is the rig as the ``-c`` values serve it, the one answer the commands that check, price or bound
a rig before it deploys ask (``rigs up``, ``preflight``, ``doctor``, ``prices``, ``rehearse --model``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rigs.catalog.catalog import SAGEMAKER_PREFIX
from rigs.catalog.model import Catalog, DeployableRig, Weights
from rigs.catalog.runtimes import runtime
from rigs.catalog.served import Architecture, ModelCard, weights_of
from rigs.context_keys import (HF_TOKEN_PARAMETER, INSTANCE_TYPE, MAX_MODEL_LEN, MODEL, MODEL_CONFIG, RIG_MAX_MODEL_LEN,
                               RIG_MODEL, ContextKey)
from rigs.deploy.neuron_vllm import on_neuron_vllm
from rigs.deploy.options import parse_rig_options, rig_values
from rigs.sizing import compat
from rigs.sizing.config import ConfigError, read_config
from rigs.sizing.fit import GIB, Ask, InstanceFit, candidates, fit_one, weights_bytes
from rigs.sizing.measured import MeasuredError, load as measurements
from rigs.sizing.readiness import served_minutes

_PARAMETER = re.compile(r"^/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


class ModelOptionsError(ValueError):
    """A model the rig cannot serve as asked: one line naming the context key, the problem and the fix."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """The raw context values for one rig (None where not given)."""

    model: str | None = None
    for_all: bool = False
    """The model came from ``-c model=ID`` (every rig), not ``-c model.<rig>=ID``."""
    config: str | None = None
    instance_type: str | None = None
    hf_token_parameter: str | None = None
    max_model_len: str | None = None
    """As given (checked by :func:`serve`)."""
    max_model_len_for_all: bool = False
    """It came from ``-c max_model_len=N`` (every rig), not ``-c max_model_len.<rig>=N``."""

    @property
    def given(self) -> bool:
        """Whether anything asks the rig to serve another model, run on another size or hold another context."""
        return bool(self.model or self.config or self.instance_type or self.max_model_len)

    @property
    def for_all_only(self) -> bool:
        """Whether only keys for every rig ask it anything (a rig that serves its own model only then keeps it)."""
        return (self.for_all or not self.model) and not (self.config or self.instance_type) and \
            (self.max_model_len_for_all or not self.max_model_len)

    @property
    def key(self) -> str:
        """The ``-c`` key a refusal names: the model's, else the size's, else the context's."""
        if self.model:
            return "-c model" if self.for_all else "-c model.{rig}"
        if self.instance_type:
            return "-c instance_type.{rig}"
        return "-c max_model_len" if self.max_model_len_for_all else "-c max_model_len.{rig}"


_EMPTY_FIX = {RIG_MODEL: "a Hugging Face model id", MODEL: "a Hugging Face model id", MODEL_CONFIG: "the path of a "
              "config.json", INSTANCE_TYPE: "an instance type", HF_TOKEN_PARAMETER: "an SSM parameter name",
              RIG_MAX_MODEL_LEN: "a number of tokens", MAX_MODEL_LEN: "a number of tokens"}
"""What each key of :data:`rigs.context_keys.MODEL_KEYS` takes, for the refusal of an empty value."""


def _value(context: Callable[[str], Any], key: ContextKey, rig_name: str) -> str | None:
    """The key's value for ``rig_name`` (None: not given); ModelOptionsError for one given empty (``-c model.g6=``),
    which would otherwise pass as not given."""
    name = key.key(rig=rig_name)
    value = context(name)
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise ModelOptionsError(f"-c {name}= is empty: give {_EMPTY_FIX[key]}, or leave the key out")
    return text


def model_request(context: Callable[[str], Any], rig_name: str) -> ModelRequest:
    """The keys of :data:`rigs.deploy.options.MODEL_KEYS` for ``rig_name``, read with ``context`` (the app's context
    getter).

    Raises:
        ModelOptionsError: a key given empty; a ``model_config.<rig>`` with no model named for the rig (the rig
            would keep its own model, sized from another's config).
    """
    own, shared = _value(context, RIG_MODEL, rig_name), _value(context, MODEL, rig_name)
    own_length, shared_length = _value(context, RIG_MAX_MODEL_LEN, rig_name), _value(context, MAX_MODEL_LEN, rig_name)
    config = _value(context, MODEL_CONFIG, rig_name)
    if config is not None and own is None and shared is None:
        raise ModelOptionsError(f"-c {MODEL_CONFIG.key(rig=rig_name)}={config}: names no model: give the id it is "
                                f"the config of with -c {RIG_MODEL.key(rig=rig_name)}=ID")
    return ModelRequest(model=own or shared, for_all=own is None and shared is not None, config=config,
                        instance_type=_value(context, INSTANCE_TYPE, rig_name),
                        hf_token_parameter=_value(context, HF_TOKEN_PARAMETER, rig_name),
                        max_model_len=own_length or shared_length,
                        max_model_len_for_all=own_length is None and shared_length is not None)


@dataclass(frozen=True, slots=True)
class Served:
    """What a rig serves once the request is applied: the rig, the token's parameter, the line that says so."""

    rig: DeployableRig
    hf_token_parameter: str | None
    said: str | None


def serve(rig: DeployableRig, catalog: Catalog, request: ModelRequest) -> Served:
    """``rig`` serving the requested model (its own where none is asked) on the size it fits at the context it
    serves; ``rig`` unchanged when nothing is asked.

    Raises:
        ModelOptionsError: the rig cannot serve it (a Neuron rig; a model the catalog does not know and no config;
            a gated model without a token; one whose weights vLLM cannot run on the rig's GPUs,
            :mod:`rigs.sizing.compat`; one that fits no size, or not the size asked for; a ``max_model_len`` that is
            not a positive whole number).
    """
    token = _token_parameter(rig, request.hf_token_parameter)
    if not request.given:
        return Served(rig, token, None)
    key = request.key.format(rig=rig.name)
    asked_length = _max_model_len(request, rig.name)
    if not runtime(rig.runtime).serves_any_model:
        return _on_neuron(rig, catalog, request, key, token, asked_length)
    model_id = request.model or rig.model_id
    card = catalog.models.get(model_id)
    arch = _architecture(rig, model_id, card, request.config, key)
    _check_gated(rig, model_id, card, token, key)
    context = min(asked_length or rig.serve_context or arch.max_context, arch.max_context)
    asked = f"{key}={model_id}" if request.model or request.instance_type else f"{key}={request.max_model_len}"
    refusals = [compat.refusal(arch, catalog.instance_families[name]) for name in rig.families]
    if all(refusals):
        raise ModelOptionsError(f"{asked}: {rig.name} cannot serve it: {refusals[0]}")
    chosen = _size(rig, catalog, arch, card, context, request.instance_type, asked, model_id=model_id)
    served = _served_as(rig, model_id, card, arch, chosen, context)
    family = catalog.family_of(served.instance_type)
    notes = "".join(f"; {line}" for line in compat.notes(arch, family[1])) if family else ""
    replicas = f" x {chosen.data_parallel} replicas" if chosen.data_parallel > 1 else ""
    parallel = "" if chosen.accelerators == 1 else f" (tensor parallel {chosen.tensor_parallel}{replicas})"
    longest = (f" (the model's longest: {_length_key(request, rig.name)}={asked_length} asks more)"
               if asked_length is not None and asked_length > arch.max_context else "")
    why = (f"-c instance_type.{rig.name}" if request.instance_type else "it fits the rig's own size"
           if served.instance_type == rig.instance_type else f"{rig.instance_type} is too small for it")
    said = (f"{rig.stack_name}: {model_id} on {served.instance_type}{parallel} at {context:,} tokens{longest}, "
            f"{chosen.kv_tokens:,} tokens of KV cache a replica"
            f"{f' ({chosen.measured})' if chosen.measured else ''} ({chosen.max_sequences} sequences in all): {why}"
            f"{notes}")
    return Served(served, token, said)


def _on_neuron(rig: DeployableRig, catalog: Catalog, request: ModelRequest, key: str, token: str | None,
               asked_length: int | None) -> Served:
    """A rig whose own server has its model compiled in: that model (at its compiled shapes), or another on AWS's
    vLLM Neuron image where NxD Inference serves it (sized over NeuronCores for the sequences it is compiled for, at
    ``max_model_len`` where it is shorter than the image's), or the reason why not."""
    section = catalog.neuron_vllm if runtime(rig.runtime).other_models_runtime else None
    own = request.model in (None, rig.model_id)
    reason = getattr(rig, "other_models", "its server serves its own model only")
    if own and not (request.config or request.instance_type):
        if request.max_model_len is None:
            return Served(rig, token, None)
        if request.for_all_only:
            return Served(rig, token, f"{rig.stack_name}: keeps {rig.weights.model}: {reason} (at its compiled shapes)")
        raise ModelOptionsError(f"{key}: {rig.name} cannot be given another context: {reason}")
    if section is None or own:
        raise ModelOptionsError(f"{key}: {rig.name} cannot be given another model or size: {reason}")
    model_id = str(request.model)
    card = catalog.models.get(model_id)
    if card is not None and card.name == rig.weights.model and not (request.config or request.instance_type):
        return Served(rig, token, f"{rig.stack_name}: keeps its hand-ported {rig.weights.model} ({model_id} is the "
                                  "same model in another checkpoint)")
    arch = _architecture(rig, model_id, card, request.config, key)
    why = catalog.neuron_why_not(rig, card.name if card else model_id, arch)
    if why is not None:
        if request.for_all_only:
            return Served(rig, token, f"{rig.stack_name}: keeps {rig.weights.model}: {why}")
        raise ModelOptionsError(f"{key}={model_id}: {rig.name} cannot serve it: {why}")
    _check_gated(rig, model_id, card, token, key)
    compile_minutes = section.compile_allowance_minutes(arch)
    if compile_minutes is None:
        raise ModelOptionsError(f"{key}={model_id}: larger than every compile allowance of the catalog's "
                                "neuron_vllm.compile_minutes; add a step for its size (minutes, with its source)")
    context = min(asked_length or section.max_model_len, section.max_model_len, arch.max_context)
    chosen = _size(rig, catalog, arch, card, context, request.instance_type, f"{key}={model_id}",
                   sequences=section.max_num_seqs)
    served = on_neuron_vllm(rig, catalog, model_id, card, arch, chosen, context, compile_minutes)
    why_size = (f"-c instance_type.{rig.name}" if request.instance_type else "it fits the rig's own size"
                if served.instance_type == rig.instance_type else f"{rig.instance_type} is too small for it")
    said = (f"{rig.stack_name}: {model_id} on {served.instance_type} with AWS's vLLM Neuron image, tensor parallel "
            f"{chosen.tensor_parallel} over NeuronCores, compiled at boot for {section.max_num_seqs} x {context:,} "
            f"tokens (allowed {compile_minutes} min, ready timeout {served.ready_timeout_minutes} min): {why_size}")
    return Served(served, token, said)


def as_deployed(rig: DeployableRig, catalog: Catalog, runtime_name: str, model_id: str,
                instance_type: str) -> DeployableRig:
    """``rig`` as its stack serves it, from the stack's outputs (its runtime, model and instance type): a Neuron rig
    whose stack runs AWS's vLLM Neuron image is rebuilt as the deploy made it (for a model the catalog does not list,
    whose config the deploy read, with the image and what the outputs say); any other rig unchanged."""
    section = catalog.neuron_vllm
    if rig.runtime == runtime_name or runtime(rig.runtime).other_models_runtime != runtime_name or section is None:
        return rig
    card = catalog.models.get(model_id)
    if card is not None:
        context = min(section.max_model_len, card.architecture.max_context)
        try:
            chosen = _size(rig, catalog, card.architecture, card, context, instance_type, f"={model_id}",
                           sequences=section.max_num_seqs)
            compile_minutes = section.compile_allowance_minutes(card.architecture) or 0
            return on_neuron_vllm(rig, catalog, model_id, card, card.architecture, chosen, context, compile_minutes)
        except (ModelOptionsError, ValueError):
            pass  # the catalog changed since the deploy: what the outputs say
    weights = Weights(model=model_id, precision="not stated here (the deploy read its config)", engine=section.engine,
                      source=f"https://huggingface.co/{model_id}")
    return rig.model_copy(update={"runtime": runtime_name, "model_id": model_id, "instance_type": instance_type,
                                  "weights": weights, "image_reference": section.image_reference,
                                  "image_digest": section.image_digest, "port": section.port, "serve_flags": (),
                                  "max_prompt_tokens": None, "max_total_tokens": None, "tool_calls": False})


def _length_key(request: ModelRequest, rig_name: str) -> str:
    return f"-c {MAX_MODEL_LEN.key()}" if request.max_model_len_for_all else f"-c {RIG_MAX_MODEL_LEN.key(rig=rig_name)}"


def _max_model_len(request: ModelRequest, rig_name: str) -> int | None:
    """``max_model_len`` as a number of tokens (None: not given); ModelOptionsError for anything but a positive
    whole number."""
    text = request.max_model_len
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ModelOptionsError(f"{_length_key(request, rig_name)}={text}: give the tokens one sequence may hold "
                                "(prompt and output), a positive whole number, e.g. 8192")
    return int(text)


def _token_parameter(rig: DeployableRig, name: str | None) -> str | None:
    if name is None:
        return None
    if not _PARAMETER.match(name) or len(name) > 2048:
        raise ModelOptionsError(f"-c hf_token_parameter={name}: give an SSM parameter name (letters, digits, "
                                "_ . - and / between levels), e.g. /aws-inference/hf-token")
    return name if rig.hf_token_refusal is None else None


def _architecture(rig: DeployableRig, model_id: str, card: ModelCard | None, config: str | None,
                  key: str) -> Architecture:
    if config is not None:
        try:
            return read_config(Path(config))
        except ConfigError as exc:
            raise ModelOptionsError(f"-c model_config.{rig.name}: {exc}") from None
    if card is None:
        raise ModelOptionsError(f"{key}={model_id}: the catalog's models section does not list it; give its "
                                f"config.json with -c model_config.{rig.name}=PATH (read here, never fetched)")
    return card.architecture


def _check_gated(rig: DeployableRig, model_id: str, card: ModelCard | None, token: str | None, key: str) -> None:
    if card is None or not card.gated:
        return
    if rig.hf_token_refusal is not None:
        raise ModelOptionsError(f"{key}={model_id}: gated on the Hugging Face Hub, and {rig.hf_token_refusal}")
    if token is None:
        raise ModelOptionsError(f"{key}={model_id}: gated on the Hugging Face Hub: give -c hf_token_parameter=NAME, "
                                "an SSM SecureString parameter holding your token (the rig reads it at boot)")


def _size(rig: DeployableRig, catalog: Catalog, arch: Architecture, card: ModelCard | None, context: int,
          instance_type: str | None, asked: str, sequences: int = 1, model_id: str | None = None) -> InstanceFit:
    """The rig's own size where the model fits it (``sequences`` of ``context`` at once), else the smallest of its
    families (:attr:`~rigs.catalog.kinds.base.DeployedRig.families`, its own first) that does; or the one asked. The
    KV cache vLLM logged for ``model_id`` on a deployed rig at the same settings is used in place of the prediction
    (:mod:`rigs.sizing.measured`)."""
    try:
        measured = measurements().of(model_id) if model_id else ()
    except MeasuredError as exc:  # synth and the commands say it as they say a bad -c value: one line, exit 2
        raise ModelOptionsError(str(exc)) from None
    ask = Ask(context=context, sequences=sequences, model_id=model_id, measured=measured)
    twin = rig.instance_type.startswith(SAGEMAKER_PREFIX)
    families = rig.families
    own = sorted((c for c in candidates(catalog, card.name if card else None, arch)
                  if c.instance_type.startswith(SAGEMAKER_PREFIX) == twin and _family(c.instance_type) in families),
                 key=lambda c: families.index(_family(c.instance_type)))
    if instance_type is not None:
        chosen = next((c for c in own if c.instance_type == instance_type), None)
        if chosen is None:
            raise ModelOptionsError(f"-c instance_type.{rig.name}={instance_type}: not a size {rig.name} runs on "
                                    f"({', '.join(c.instance_type for c in own)})")
        if chosen.why_not is not None:
            raise ModelOptionsError(f"-c instance_type.{rig.name}={instance_type}: {asked.split('=', 1)[1]} cannot "
                                    f"run there: {chosen.why_not}")
        result = fit_one(arch, chosen, ask)
        if not result.fits:
            raise ModelOptionsError(f"-c instance_type.{rig.name}={instance_type}: {asked.split('=', 1)[1]} does not "
                                    f"fit it at {context:,} tokens: {result.why}")
        return result
    runnable = [c for c in own if c.why_not is None]
    ordered = sorted(runnable, key=lambda c: c.instance_type != rig.instance_type)
    results = [fit_one(arch, c, ask) for c in ordered]
    fitting = next((r for r in results if r.fits), None)
    if fitting is not None:
        return fitting
    largest = max(results, key=lambda r: (r.accelerators, -results.index(r)))
    accelerator = next(c for c in own if c.instance_type == largest.instance_type).accelerator
    raise ModelOptionsError(
        f"{asked}: fits no {_either(families)} size at {context:,} tokens: the largest, {largest.instance_type} "
        f"({largest.accelerators} x {accelerator}), is {largest.short_bytes:,} bytes short "
        f"(weights {weights_bytes(arch) / GIB:.1f} GiB); python -m rigs fit shows every family")


def _either(names: tuple[str, ...]) -> str:
    """``g6``, ``g6 or g5``, ``g6, g6e or g5``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _family(instance_type: str) -> str:
    """The instance family of an EC2 type or its ``ml.`` twin (``g6e`` of ``ml.g6e.xlarge``)."""
    return instance_type.removeprefix(SAGEMAKER_PREFIX).split(".", 1)[0]


def _weights(rig: DeployableRig, model_id: str, card: ModelCard | None, arch: Architecture) -> Weights:
    """What the rig serves now, as the report shows it: the catalog's for its own model, else sized here."""
    if model_id == rig.model_id:
        return rig.weights
    if card is not None:
        return card.weights(rig.weights.engine)
    return weights_of(model_id, arch, rig.weights.engine, f"https://huggingface.co/{model_id}")


def _served_as(rig: DeployableRig, model_id: str, card: ModelCard | None, arch: Architecture, chosen: InstanceFit,
               context: int) -> DeployableRig:
    parser = card.tool_call_parser if card else None
    weights = _weights(rig, model_id, card, arch)
    update: dict[str, Any] = {"model_id": model_id, "tool_calls": parser is not None, "weights": weights,
                              "instance_type": chosen.instance_type,
                              "ready_timeout_minutes": served_minutes(rig, weights.memory_gib or 0.0)}
    update.update(rig.serving(context, chosen.tensor_parallel, parser, weights_bytes(arch),
                              data_parallel=chosen.data_parallel,
                              reasoning_parser=card.reasoning_parser if card else None))
    return rig.model_copy(update=update)



def served_rig(rig: DeployableRig, catalog: Catalog, context: Callable[[str], Any]) -> Served:
    """``rig`` as it will be served under the ``-c`` values ``context`` gives (a key's value, None when absent): its
    variant (``-c <rig>_variant``) applied, then the model and the size it fits (:func:`serve`); ``rig`` as the
    catalog has it when no key names it.

    The one answer ``python -m rigs up``, ``preflight``, ``doctor``, ``prices`` and ``rehearse`` ask, so that the
    quotas, zones, prices and cost bounds they give are for the size that will launch, as ``app.py`` synthesizes it.

    Raises:
        OptionsError: a variant, lifetime, image or AMI the rig does not take.
        ModelOptionsError: the rig cannot serve the model asked (:func:`serve`).
    """
    options = parse_rig_options(rig, **rig_values(rig.name, context))
    return serve(options.rig, catalog, model_request(context, rig.name))
