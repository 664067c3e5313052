"""What a model takes, and on which instance sizes it fits: ``python -m rigs fit`` and ``-c model.<rig>=ID``.

For one model (its :class:`Architecture`), a context of N tokens (vLLM's ``--max-model-len``) and C sequences at once:

- **weights**: ``weight_bytes`` where published (a quantized checkpoint, or what an engine logged), else the
  parameter count x the dtype's bytes (``--dtype`` changes the dtype of an unquantized model); each GPU of a
  tensor-parallel replica holds its share.
- **per GPU** (vLLM): the budget vLLM computes at start-up, for the engine version the rig that deploys on the size
  pins and that rig's serve flags, each unset flag at vLLM's default for the card (``rigs/sizing/engine.py``):
  ``--gpu-memory-utilization`` x the memory CUDA shows, less the weights' share and the engine's own terms; the rest
  is KV cache, laid out in blocks as vLLM lays it (``rigs/sizing/kv.py``: sliding-window layers, KV dtype).
  ``kv_tokens`` is vLLM's "GPU KV cache size" of one replica; ``max_sequences`` the sequences of N tokens all
  replicas hold at once (vLLM's "Maximum concurrency", at most ``--max-num-seqs`` each).
- **replicas**: every accelerator serves. The tensor-parallel degree is the smallest that divides the instance's
  accelerators and the model's attention heads (its KV heads divided by it, or it a multiple of them: vLLM and NxD
  Inference replicate KV heads) and leaves room for the sequences; the rest of the accelerators run more replicas of
  it (``data_parallel``: vLLM's ``--data-parallel-size``). A KV dtype asked does not change the split where the
  model's own fits (:func:`_split`).
- **Neuron** (Inferentia2, Trainium1): any degree up to the NeuronCores, one replica: the vLLM Neuron plugin's data
  parallelism is for Trn2 and Trn3 only ("relevant for: Trn2, Trn3",
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/vllm-neuron/docs/design/parallelism/data_parallelism.html)
  and the rigs pin the legacy image for Inf2 and Trn1. NxD Inference compiles a static KV cache; each NeuronCore
  gives :data:`NEURON_FRACTION` of its memory less :data:`NEURON_OVERHEAD_BYTES` (allowances).
- **host memory** (Inferentia2 and Trainium1, where the catalog gives it): the checkpoint once, as the load path the
  boot gives AWS's vLLM Neuron image takes (the checkpoint downloaded first, the server given its local path,
  ``rigs/userdata/neuron_vllm.sh``): NxD Inference reads the checkpoint's safetensors whole into host memory
  (``load_state_dict``, aws-neuron/neuronx-distributed-inference ``modules/checkpoint.py``) and cuts each rank's
  shard from it, mostly as views (``shard_checkpoint``, aws-neuron/neuronx-distributed
  ``trace/model_builder.py``), so the weights must fit the host's memory less :data:`HOST_RESERVED_BYTES`. Given a
  Hub id instead, vLLM's Neuron plugin would first load the model with transformers' default dtype (fp32 under the
  transformers 4.5x NxD Inference pins) and save that copy (vllm-project/vllm-neuron,
  ``vllm_neuron/worker/neuronx_distributed_model_loader.py``): twice the bf16 checkpoint on the host, which this
  term does not allow for and the boot avoids.

On a Neuron size, a model AWS's vLLM Neuron image does not serve (its class, ``neuron_vllm.model_classes``) has the
one-line reason why not (:meth:`rigs.catalog.catalog.Catalog.neuron_why_not`); their SageMaker twins keep the Neuron
rig's own reason for any model but its own (the project's endpoint runs vLLM on GPUs).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from rigs.catalog.served import DTYPE_BYTES, Architecture
from rigs.sizing import compat
from rigs.sizing.engine import Budget, Resolved, Settings, Shape, budget, resolve, version, visible_bytes
from rigs.sizing.kv import BLOCK, Layout, in_flight, kv_dtype_bytes, layout
from rigs.sizing.measured import Measurement, load, matching
from rigs.sizing.measured import Settings as Measured

if TYPE_CHECKING:
    from rigs.catalog.catalog import Catalog

GIB = 1024 ** 3
NEWEST_ENGINE = (0, 30)
"""The vLLM version a size no rig of the catalog deploys on is sized for (the g6 rig's)."""
NEURON_FRACTION = 0.9
NEURON_OVERHEAD_BYTES = round(1.5 * GIB)
"""Per NeuronCore, what NxD Inference holds beside weights and KV cache (an allowance)."""
HOST_RESERVED_BYTES = 4 * GIB
"""Host memory the system, docker and the server process hold beside the checkpoint NxD Inference shards (an
allowance)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One instance size a model may be sized on.

    Attributes:
        instance_type: ``g6.xlarge``, ``ml.g6.xlarge``.
        accelerators: its GPUs (on Inferentia2 and Trainium its NeuronCores).
        accelerator_memory_bytes: each accelerator's memory, as EC2 reports it.
        accelerator: what one is (``NVIDIA L4``).
        why_not: why no rig of this project serves this model there, whatever its memory (a Neuron size and a
            model neither its hand-ported image nor AWS's vLLM Neuron image serves); None where memory decides.
        host_memory_bytes: the host's memory where it limits the weights (Neuron sizes); None elsewhere.
        engine: the vLLM version that serves there ((0, 30)); None on a Neuron size.
        settings: the serve flags of the rig that deploys there.
        visible_memory_bytes: what CUDA shows of each GPU where it is known (a start-up log's); None: the card's
            figure (:func:`rigs.sizing.engine.visible_bytes`).
    """

    instance_type: str
    accelerators: int
    accelerator_memory_bytes: int
    accelerator: str
    why_not: str | None = None
    host_memory_bytes: int | None = None
    engine: tuple[int, int] | None = NEWEST_ENGINE
    settings: Settings = field(default_factory=Settings)
    visible_memory_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    """What the user asks of every size (``python -m rigs fit``'s flags; a deploy's context)."""

    context: int
    sequences: int = 1
    dtype: str | None = None
    settings: Settings = field(default_factory=Settings)
    engine: tuple[int, int] | None = None
    """``--vllm``: this version on every GPU size instead of the rig's."""
    tensor_parallel: int | None = None
    quantization: str | None = None
    """vLLM's ``--quantization fp8``: an unquantized checkpoint's layers cast to FP8 as it loads them."""
    model_id: str | None = None
    """The model's id, where it has one (a model known only by its config has none)."""
    measured: tuple[Measurement, ...] = ()
    """The KV caches vLLM logged for it on deployed rigs (:mod:`rigs.sizing.measured`): one whose settings are all
    this fit's own is used in place of the prediction, the checkpoint served as it is (no ``dtype`` or
    ``quantization`` asked)."""


PRICE_REGION = "us-east-1"
"""The region ``python -m rigs fit`` prices each size in (the dated price file's; the Pricing API's own region)."""


@dataclass(frozen=True, slots=True)
class InstanceFit:
    """How a model fits one instance size (the fields of ``rigs fit --json``'s ``instances``)."""

    instance_type: str
    accelerators: int
    accelerator_memory_bytes: int
    tensor_parallel: int
    data_parallel: int
    fits: bool
    kv_tokens: int
    max_sequences: int
    weights_bytes_per_accelerator: int
    overhead_bytes_per_accelerator: int
    kv_bytes_per_token: float
    why: str | None
    short_bytes: int = 0
    """The bytes its accelerators lack for the weights, the engine and the sequences asked (not in the JSON)."""
    available_kv_bytes: int = 0
    """"Available KV cache memory" on one accelerator (not in the JSON)."""
    concurrency: float = 0.0
    """vLLM's "Maximum concurrency" of one replica (not in the JSON)."""
    usd_per_hour: float | None = None
    """The size's on-demand price an hour (:func:`priced`); None: unpriced."""
    kv_tokens_source: str = "predicted"
    """``measured``: ``kv_tokens`` is what vLLM logged on a deployed rig at these settings; ``predicted``: this fit's."""
    measured: str | None = None
    """When and where it was measured (:meth:`~rigs.sizing.measured.Measurement.label`); None: predicted."""
    smaller: str | None = None
    """Where a KV dtype asked also fits at a smaller degree than the one chosen, that fit in one line (not in the
    JSON): ``fp8 KV also fits at --tensor-parallel 1 (4 replicas of 45,680 tokens)``."""

    JSON = ("instance_type", "accelerators", "accelerator_memory_bytes", "tensor_parallel", "data_parallel", "fits",
            "kv_tokens", "kv_tokens_source", "measured", "max_sequences", "weights_bytes_per_accelerator",
            "overhead_bytes_per_accelerator", "kv_bytes_per_token", "why", "usd_per_hour")


@dataclass(frozen=True, slots=True)
class ModelFit:
    """A model's fit on every candidate size (``python -m rigs fit``)."""

    weights_bytes: int
    kv_bytes_per_token: float
    kv_bytes_per_sequence: int
    context: int
    sequences: int
    instances: tuple[InstanceFit, ...]

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` form: exactly these keys, in this order."""
        return {"weights_bytes": self.weights_bytes, "kv_bytes_per_token": self.kv_bytes_per_token,
                "kv_bytes_per_sequence": self.kv_bytes_per_sequence,
                "instances": [{k: asdict(i)[k] for k in InstanceFit.JSON} for i in self.instances]}

    def of(self, instance_type: str) -> InstanceFit:
        return next(i for i in self.instances if i.instance_type == instance_type)

    def priced(self, prices: Mapping[str, float | None]) -> "ModelFit":
        """This fit with each size's price an hour from ``prices`` (a size it lacks: unpriced)."""
        return replace(self, instances=tuple(replace(i, usd_per_hour=prices.get(i.instance_type))
                                             for i in self.instances))


def _serving_rig(catalog: "Catalog", instance_type: str) -> Any:
    """The vLLM rig that deploys on ``instance_type``: the SageMaker rig on an ``ml.`` size, else the EC2 rig of its
    family, else one of its CPU architecture (the g6 rig's image runs on every x86_64 GPU family); None for none."""
    from rigs.catalog.kinds.ec2 import architecture_of

    vllm = [r for r in catalog.rigs.values() if r.runtime in ("vllm", "sagemaker-vllm")]
    if instance_type.startswith("ml."):
        return next((r for r in vllm if r.instance_type.startswith("ml.")), None)
    family = instance_type.split(".", 1)[0]
    ec2 = [r for r in vllm if not r.instance_type.startswith("ml.")]
    return next((r for r in ec2 if r.instance_type.split(".", 1)[0] == family), None) or next(
        (r for r in ec2 if architecture_of(r.instance_type) == architecture_of(instance_type)), None)


def rig_settings(rig: Any) -> Settings:
    """The serve flags sizing reads from a rig's ``serve_flags`` or its container's ``SM_VLLM_*`` environment (each
    :class:`Settings` field is the vLLM flag of its name: ``max_num_seqs``, ``--max-num-seqs``)."""
    flags = list(getattr(rig, "serve_flags", ()))
    values = {flags[i].removeprefix("--").replace("-", "_"): flags[i + 1] for i in range(len(flags) - 1)
              if flags[i].startswith("--")}
    values.update({key.removeprefix("SM_VLLM_").lower(): value for key, value in
                   getattr(rig, "container_env", {}).items() if key.startswith("SM_VLLM_")})
    return Settings.read(values, {f.removeprefix("--").replace("-", "_") for f in flags})


def candidates(catalog: "Catalog", model: str | None, arch: Architecture | None = None) -> list[Candidate]:
    """Every size of the catalog's instance families, each EC2 size then its SageMaker twin, for the model named
    ``model`` (a :class:`~rigs.catalog.served.ModelCard` name; None for a model known only by its config) of ``arch``
    (its card's when None), each with the vLLM version and serve flags of the rig that deploys there: on a family
    whose rigs serve one compiled-in model (the Neuron rigs), a model AWS's vLLM Neuron image does not serve either
    has their reason why not; on a GPU family whose compute capability vLLM has no kernels for the model's weights
    at, the rule's line (:func:`rigs.sizing.compat.refusal`)."""
    from rigs.catalog.catalog import SAGEMAKER_PREFIX

    if arch is None:
        arch = next((c.architecture for c in catalog.models.values() if c.name == model), None)
    out: list[Candidate] = []
    for name, family in catalog.instance_families.items():
        owner = next((r for r in catalog.rigs.values() if r.model_compiled_in and r.instance_family == name), None)
        own = owner is None or owner.weights.model == model
        why_ec2 = None if owner is None else catalog.neuron_why_not(owner, model or "a model known by its config",
                                                                    arch)
        unrunnable = compat.refusal(arch, family)
        for size, accelerators in family.sizes.items():
            host = family.host_memory_gib.get(size)
            for twin in ((False, True) if family.sagemaker else (False,)):
                instance_type = SAGEMAKER_PREFIX + size if twin else size
                rig = None if owner is not None else _serving_rig(catalog, instance_type)
                engine = None if owner is not None else version(rig.weights.engine) if rig else NEWEST_ENGINE
                why = ((None if own else getattr(owner, "other_models", None)) if twin else why_ec2) or unrunnable
                out.append(Candidate(instance_type, accelerators, family.memory_bytes, family.accelerator, why,
                                     None if twin or not host else host * GIB, engine,
                                     rig_settings(rig) if rig else Settings()))
    return out


def weights_bytes(arch: Architecture, dtype: str | None = None, quantization: str | None = None) -> int:
    """The weights' bytes in ``dtype`` (:meth:`Architecture.weights_bytes`); with ``quantization`` ``fp8`` an
    unquantized model's layers at one byte a weight, its embeddings and output head as they are."""
    if quantization != "fp8" or arch.quantization or arch.vocab is None or arch.hidden is None:
        return arch.weights_bytes(dtype)
    head = 2 * arch.vocab * arch.hidden * DTYPE_BYTES[dtype or arch.dtype]
    return head + round((arch.weights_bytes(dtype) - head) / DTYPE_BYTES[dtype or arch.dtype])


def kv_bytes_per_sequence(arch: Architecture, context: int, dtype: str | None = None, kv_cache_dtype: str = "auto",
                          batched: int = 2048) -> int:
    """One sequence of ``context`` tokens' KV cache on one GPU, as vLLM 0.30 allocates its blocks (``batched``:
    ``--max-num-batched-tokens``, whose tokens in flight a sliding-window layer keeps beside its window)."""
    lay = layout(arch, 1, kv_dtype_bytes(arch, kv_cache_dtype, dtype), NEWEST_ENGINE)
    return lay.bytes_per_sequence(context, in_flight(batched, NEWEST_ENGINE))


def degrees(arch: Architecture, accelerators: int, whole: bool = True) -> list[int]:
    """The tensor-parallel degrees up to ``accelerators`` that divide the attention heads, and divide or are a
    multiple of every KV head count (vLLM replicates KV heads over more GPUs than heads; so does NxD Inference);
    ``whole``: only those that divide ``accelerators`` too, so that replicas of it use every one."""
    kv = [arch.kv_heads] + ([arch.full_attention.kv_heads] if arch.full_attention else [])
    return [d for d in range(1, accelerators + 1) if (accelerators % d == 0 or not whole)
            and arch.attention_heads % d == 0 and all(k % d == 0 or d % k == 0 for k in kv)]


def rotary_cache_bytes(arch: Architecture, dtype: str | None = None) -> int:
    """vLLM's rotary-embedding table on every GPU, whole: not a weight of the checkpoint, nor sharded, but a buffer
    the model builds on the GPU as it loads (so in "Model loading took"): cos and sin for every position up to
    ``max_position_embeddings``, rotary-dim wide, in the model's dtype, one table for each head width (``get_rope``
    keeps one per its arguments). vllm-project/vllm ``vllm/model_executor/layers/rotary_embedding/base.py``
    (``RotaryEmbedding.__init__``: ``_compute_cos_sin_cache`` over ``max_position_embeddings``, ``cache.to(dtype)``,
    ``register_buffer``) and, for one model, ``vllm/model_executor/models/llama4.py`` (``get_rope(...,
    max_position=max_position_embeddings)``): a few MiB for most models, 2.5 GiB for a 10M-position one."""
    widths = {arch.geometry(kind).head_dim for kind in set(arch.layer_kinds())}
    return arch.max_context * sum(widths) * DTYPE_BYTES[dtype or arch.dtype]


def shape(arch: Architecture, tensor_parallel: int) -> Shape:
    """The sizes vLLM's own terms depend on, on one of ``tensor_parallel`` GPUs."""
    hidden = arch.hidden or arch.attention_heads * arch.head_dim
    width = arch.intermediate or 4 * hidden
    return Shape(vocab=arch.vocab or 128_256, hidden=hidden, width=-(-width // tensor_parallel),
                 routed=(arch.experts_per_token or 1) if arch.experts else 0)


def _gpu(arch: Architecture, candidate: Candidate, degree: int, ask: Ask) -> InstanceFit:
    engine = ask.engine or candidate.engine or NEWEST_ENGINE
    card, basis = (candidate.visible_memory_bytes, "the memory CUDA showed") if candidate.visible_memory_bytes \
        else visible_bytes(candidate.accelerator, candidate.accelerator_memory_bytes)
    settings = resolve(ask.settings.over(candidate.settings), engine, candidate.accelerator, card)
    weights = -(-weights_bytes(arch, ask.dtype, ask.quantization) // degree) + (
        0 if arch.weight_bytes_loaded else rotary_cache_bytes(arch, ask.dtype))  # already in what vLLM logged
    held = budget(shape(arch, degree), weights, degree, settings, engine, card, basis)
    lay = layout(arch, degree, kv_dtype_bytes(arch, settings.kv_cache_dtype, ask.dtype), engine)
    replicas = candidate.accelerators // degree
    flight = in_flight(settings.max_num_batched_tokens, engine)
    tokens, kv = lay.tokens(held.kv, ask.context, flight, engine), held.kv
    measured = _measured(candidate, degree, ask, settings, engine)
    if measured is not None and tokens:  # the pool vLLM found, in place of the one predicted
        kv = round(kv * measured.kv_tokens / tokens)
    concurrency = lay.sequences(kv, ask.context, flight)
    per_replica = min(math.floor(concurrency), settings.max_num_seqs)
    fits = per_replica >= 1 and per_replica * replicas >= ask.sequences
    each = -(-ask.sequences // replicas)
    short = max(0, each * lay.bytes_per_sequence(ask.context, flight) - kv) * degree
    why = None if fits else _gpu_why(candidate, held, settings, lay, ask, degree, short, each, flight)
    if why is not None and measured is not None:
        why += f"; KV cache {measured.label()}"
    return InstanceFit(candidate.instance_type, candidate.accelerators, candidate.accelerator_memory_bytes, degree,
                       replicas, fits, measured.kv_tokens if measured else tokens,
                       per_replica * replicas, held.weights, held.overhead,
                       lay.bytes_per_token * degree, why, short, kv, concurrency,
                       kv_tokens_source="measured" if measured else "predicted",
                       measured=measured.label() if measured else None)


def _measured(candidate: Candidate, degree: int, ask: Ask, settings: Resolved,
              engine: tuple[int, int]) -> Measurement | None:
    """The KV cache vLLM logged at exactly these settings (None: none, or the checkpoint not served as it is)."""
    if not ask.measured or ask.model_id is None or ask.dtype is not None or ask.quantization is not None:
        return None
    return matching(ask.measured, Measured(
        model_id=ask.model_id, instance_type=candidate.instance_type, engine=f"{engine[0]}.{engine[1]}",
        tensor_parallel=degree, max_model_len=ask.context, kv_cache_dtype=settings.kv_cache_dtype,
        gpu_memory_utilization=settings.gpu_memory_utilization, max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens))


def _gpu_why(candidate: Candidate, held: Budget, settings: Resolved, lay: Layout, ask: Ask, degree: int, short: int,
             each: int, flight: int) -> str:
    if settings.max_num_seqs < each and short == 0:
        return (f"--max-num-seqs {settings.max_num_seqs} over {candidate.accelerators // degree} replica(s) holds "
                f"fewer than {ask.sequences} sequences")
    kv = each * lay.bytes_per_sequence(ask.context, flight)
    return (f"{short:,} bytes short: on each of {degree} x {candidate.accelerator}, weights "
            f"{held.weights / GIB:.2f} GiB, the engine {held.overhead / GIB:.2f} GiB ({held.terms()}) and KV for "
            f"{each} x {ask.context:,} tokens {kv / GIB:.2f} GiB, of the {held.requested / GIB:.2f} GiB vLLM takes "
            f"({settings.gpu_memory_utilization:g} of {held.card_basis})")


def _neuron(arch: Architecture, candidate: Candidate, degree: int, ask: Ask) -> InstanceFit:
    """NxD Inference: every layer's KV for the whole context, in a cache compiled for the sequences."""
    weights = weights_bytes(arch, ask.dtype)
    per_sequence = sum(2 * max(1, arch.geometry(kind).kv_heads // degree) * arch.geometry(kind).head_dim * ask.context
                       for kind in arch.layer_kinds()[:arch.layers - arch.kv_shared_layers]) * \
        kv_dtype_bytes(arch, ask.settings.kv_cache_dtype, ask.dtype) * degree  # a replicated head on every core
    usable = int(candidate.accelerator_memory_bytes * NEURON_FRACTION) - NEURON_OVERHEAD_BYTES
    per_core = usable - weights // degree
    cache = max(0, per_core) * degree
    replicas = 1  # the pinned vLLM Neuron image has no data parallelism on Inf2/Trn1
    count = cache // per_sequence if per_sequence else 0
    fits = per_core > 0 and count * replicas >= ask.sequences and count >= 1
    each = -(-ask.sequences // replicas)
    short = max(0, weights + each * per_sequence - degree * usable)
    why = None if fits else (
        f"{short:,} bytes short: weights {weights / GIB:.2f} GiB and KV for {each} x {ask.context:,} tokens "
        f"{each * per_sequence / GIB:.2f} GiB over {degree} x {candidate.accelerator}, each giving "
        f"{usable / GIB:.2f} GiB ({NEURON_FRACTION:.0%} of its memory less {NEURON_OVERHEAD_BYTES / GIB:g} GiB for "
        "NxD Inference)")
    return InstanceFit(candidate.instance_type, candidate.accelerators, candidate.accelerator_memory_bytes, degree,
                       replicas, fits, int(cache * ask.context // per_sequence) if per_sequence else 0,
                       int(count) * replicas, weights // degree, NEURON_OVERHEAD_BYTES,
                       per_sequence / ask.context, why, short, max(0, per_core),
                       cache / per_sequence if per_sequence else 0.0)


def _smallest(arch: Architecture, candidate: Candidate, options: Sequence[int], ask: Ask) -> InstanceFit:
    """At the smallest of ``options`` that fits, else at the largest."""
    on = _gpu if candidate.engine is not None else _neuron
    best = None
    for degree in options:
        best = on(arch, candidate, degree, ask)
        if best.fits:
            break
    assert best is not None  # degree 1 always divides
    return best


def _split(arch: Architecture, candidate: Candidate, options: Sequence[int], ask: Ask) -> InstanceFit:
    """On a GPU size, a KV dtype asked (``--kv-cache-dtype fp8``) changes how many tokens each replica holds, not
    how the instance is split: every GPU serves at any degree (replicas fill the rest), so the degree is the smallest
    that fits with the KV dtype the rig would use unasked (the model's, or the rig's own flag), and the fit at the
    asked dtype is taken at that degree (fp8: about twice the tokens a replica, the same replicas). Only where no
    degree fits that way does the smallest that fits at the asked dtype apply (fp8 lets a long context fit one L4
    where the model's dtype does not). Where the asked dtype also fits at a smaller degree, ``smaller`` says so with
    the flag that serves it there (``--tensor-parallel N``)."""
    asked = ask.settings.kv_cache_dtype
    if candidate.engine is None or ask.tensor_parallel is not None or asked == "auto":
        return _smallest(arch, candidate, options, ask)
    unasked = _smallest(arch, candidate, options, replace(ask, settings=replace(ask.settings, kv_cache_dtype="auto")))
    if not unasked.fits:
        return _smallest(arch, candidate, options, ask)
    chosen = _gpu(arch, candidate, unasked.tensor_parallel, ask)
    lower = [d for d in options if d < chosen.tensor_parallel]
    other = _smallest(arch, candidate, lower, ask) if lower else None
    if other is None or not other.fits:
        return chosen
    return replace(chosen, smaller=f"{asked} KV also fits at --tensor-parallel {other.tensor_parallel} "
                                   f"({other.data_parallel} replicas of {other.kv_tokens:,} tokens)")


def fit_one(arch: Architecture, candidate: Candidate, ask: Ask) -> InstanceFit:
    """``arch`` on ``candidate``: at the smallest degree that fits (or the one asked; :func:`_split` for a KV dtype
    asked), else at the largest."""
    options = degrees(arch, candidate.accelerators, whole=candidate.engine is not None)
    if ask.tensor_parallel is not None:
        options = [d for d in options if d == ask.tensor_parallel]
        if not options:
            return _cannot_split(arch, candidate, ask.tensor_parallel)
    best = _split(arch, candidate, options, ask)
    weights = weights_bytes(arch, ask.dtype)
    why = candidate.why_not or _host_short(candidate, weights)
    if why is not None:
        host_short = max(0, weights - (candidate.host_memory_bytes or 0) + HOST_RESERVED_BYTES) \
            if candidate.why_not is None else 0
        return InstanceFit(**{**asdict(best), "fits": False, "why": why,
                              "short_bytes": max(best.short_bytes, host_short)})
    return best


def _cannot_split(arch: Architecture, candidate: Candidate, degree: int) -> InstanceFit:
    heads = f"the model's {arch.attention_heads} attention heads and {arch.kv_heads} KV heads"
    why = f"tensor parallel {degree} does not divide " + (
        f"its {candidate.accelerators} accelerators" if candidate.accelerators % degree else heads)
    return InstanceFit(candidate.instance_type, candidate.accelerators, candidate.accelerator_memory_bytes, degree, 0,
                       False, 0, 0, 0, 0, 0.0, why)


def _host_short(candidate: Candidate, weights: int) -> str | None:
    """Why the host cannot hold the checkpoint while NxD Inference shards it; None where it can, or does not matter."""
    if candidate.host_memory_bytes is None or weights <= candidate.host_memory_bytes - HOST_RESERVED_BYTES:
        return None
    return (f"the host's {candidate.host_memory_bytes / GIB:g} GiB, less {HOST_RESERVED_BYTES / GIB:g} GiB for the "
            f"system, cannot hold the {weights / GIB:.2f} GiB checkpoint NxD Inference shards on the host")


def fit(arch: Architecture, candidates: Iterable[Candidate], ask: Ask) -> ModelFit:
    """``arch`` on every one of ``candidates`` (``ask.context`` already at most the model's longest)."""
    settings = ask.settings
    engine = ask.engine or NEWEST_ENGINE
    lay = layout(arch, 1, kv_dtype_bytes(arch, settings.kv_cache_dtype, ask.dtype), engine)
    flight = in_flight(settings.max_num_batched_tokens or 2048, engine)
    return ModelFit(weights_bytes=weights_bytes(arch, ask.dtype), kv_bytes_per_token=lay.bytes_per_token,
                    kv_bytes_per_sequence=lay.bytes_per_sequence(ask.context, flight),
                    context=ask.context, sequences=ask.sequences,
                    instances=tuple(fit_one(arch, c, ask) for c in candidates))


def render(model: str, result: ModelFit) -> list[str]:
    """The table ``python -m rigs fit`` prints (one line per size)."""
    lines = [f"{model}: weights {result.weights_bytes / GIB:.2f} GiB; KV {result.kv_bytes_per_token:,.0f} bytes a "
             f"token ({BLOCK}-token blocks), {result.kv_bytes_per_sequence / GIB:.2f} GiB a sequence of "
             f"{result.context:,}; {result.sequences} at once; each GPU as the vLLM its rig pins sizes it; $/h "
             f"on demand in {PRICE_REGION} from the dated price file (unpriced: none there; python -m rigs prices "
             "--live asks the Pricing API)", ""]
    rows: Sequence[tuple[str, ...]] = [("instance", "accel", "TP x DP", "fits", "KV tokens/replica", "sequences",
                                        "engine GiB", "$/h", "why not")] + [
        (i.instance_type, f"{i.accelerators} x {i.accelerator_memory_bytes / GIB:.1f} GiB",
         f"{i.tensor_parallel} x {i.data_parallel}", "yes" if i.fits else "no",
         f"{i.kv_tokens:,}" + (" measured" if i.measured else ""),
         f"{i.max_sequences:,}", f"{i.overhead_bytes_per_accelerator / GIB:.2f}",
         "unpriced" if i.usd_per_hour is None else f"{i.usd_per_hour:.4f}", i.why or "")
        for i in result.instances]
    widths = [max(len(r[c]) for r in rows) for c in range(8)]
    notes = [f"measured: {i.instance_type}'s KV tokens are what vLLM logged on a deployed rig at these settings, "
             f"{i.measured}" for i in result.instances if i.measured] + [
        f"{i.instance_type}: {i.smaller}" for i in result.instances if i.smaller and i.fits]
    return lines + ["  ".join(r[c].ljust(widths[c]) for c in range(8)).rstrip() + ("  " + r[8] if r[8] else "")
                    for r in rows] + ([""] + notes if notes else [])


def _as_served(model_id: str, instance_type: str, tokens: int) -> tuple[Candidate, InstanceFit] | None:
    """The size a rig serves ``model_id`` on at a context of ``tokens`` (with its rig's engine and serve flags) and
    this fit there, the measurements of it taken before in place of the prediction; None for a model the catalog's
    models section does not list or a size of no family."""
    from rigs.catalog.model import load_catalog

    catalog = load_catalog()
    card = catalog.models.get(model_id)
    candidate = next((c for c in candidates(catalog, card.name if card else None)
                      if c.instance_type == instance_type), None) if card else None
    if card is None or candidate is None:
        return None
    ask = Ask(context=tokens, model_id=model_id, measured=load().of(model_id))
    return candidate, fit_one(card.architecture, candidate, ask)


def expected_cache(model_id: str, instance_type: str, tokens: int) -> dict[str, Any]:
    """What this fit predicts vLLM logs at start-up ("GPU KV cache size", "Maximum concurrency") for ``model_id`` on
    ``instance_type`` at a context of ``tokens``, as provenance facts (a vLLM rig's expectation,
    :meth:`rigs.catalog.kinds.base.RigBase.expected`), or what a rig logged at the same settings before (measured);
    nothing for a model the catalog's models section does not list or a size of no family."""
    from rigs.catalog.facts import fact

    served = _as_served(model_id, instance_type, tokens)
    if served is None:
        return {}
    candidate, result = served
    engine = ".".join(map(str, candidate.engine or NEWEST_ENGINE))
    source = (f"python -m rigs fit's prediction: {instance_type}, tensor parallel {result.tensor_parallel}, "
              f"{tokens:,} tokens, vLLM {engine}'s budget with the rig's serve flags"
              + (f"; its KV cache {result.measured}" if result.measured else ""))
    return {"kv_cache_tokens": fact(result.kv_tokens, source),
            "max_concurrency": fact(f"{result.concurrency:.2f}", source)}


def served_settings(model_id: str, instance_type: str, tokens: int, engine_version: str) -> Measured | None:
    """The settings a rig serving ``model_id`` on ``instance_type`` at ``tokens`` runs vLLM ``engine_version`` at
    (its rig's serve flags, each unset one at vLLM's default for the card; the tensor-parallel degree the fit
    chose, as ``-c model.<rig>`` deploys it): what a KV cache it logged is recorded under; None where
    :func:`_as_served` has nothing, or on a Neuron size (NxD Inference compiles its cache; no budget sizes it)."""
    served = _as_served(model_id, instance_type, tokens)
    if served is None or served[0].engine is None:
        return None
    candidate, result = served
    engine = version(engine_version)
    card, _ = visible_bytes(candidate.accelerator, candidate.accelerator_memory_bytes)
    settings = resolve(candidate.settings, engine, candidate.accelerator, card)
    return Measured(model_id=model_id, instance_type=instance_type, engine=f"{engine[0]}.{engine[1]}",
                    tensor_parallel=result.tensor_parallel, max_model_len=tokens,
                    kv_cache_dtype=settings.kv_cache_dtype, gpu_memory_utilization=settings.gpu_memory_utilization,
                    max_num_seqs=settings.max_num_seqs, max_num_batched_tokens=settings.max_num_batched_tokens)
