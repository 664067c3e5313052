"""What a model takes, and on which instance sizes it fits: ``python -m rigs fit`` and ``-c model.<rig>=ID``.

For one model (its :class:`Architecture`), a context of N tokens and C sequences at once:

- **weights**: ``weight_bytes`` where published (a quantized checkpoint, or what an engine logged), else the
  parameter count x the dtype's bytes (``--dtype`` changes the dtype of an unquantized model).
- **KV cache**: each layer that holds its own KV adds ``2 (K and V) x KV heads x head size x dtype bytes`` per
  token; a sliding-window layer holds at most its window of tokens, a layer that shares an earlier layer's KV
  (``num_kv_shared_layers``) holds none. ``kv_bytes_per_sequence`` is one sequence of N tokens so counted, and
  ``kv_bytes_per_token`` that over N (the bytes a token adds, averaged over the context), the unit vLLM's own
  "GPU KV cache size: N tokens" is counted in (its maximum concurrency times the context).
- **per instance**: the smallest tensor-parallel degree, up to its accelerators, that divides the attention and
  KV heads and leaves room for C sequences: each accelerator gives the engine's fraction of its memory
  (:data:`MEMORY_FRACTION`, vLLM's ``--gpu-memory-utilization``) less :data:`OVERHEAD_BYTES` (activations at the
  engine's profiling pass, the CUDA context, communication buffers: an allowance, not a measurement) less its
  share of the weights; what is left over all of them is the KV cache.

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

Not counted: vLLM's block rounding (16 tokens), the extra blocks a sliding window keeps for a batch in flight,
the accelerator memory the driver reserves (EC2 reports each accelerator's memory; the engine sees a little less).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from rigs.catalog.served import DTYPE_BYTES, Architecture

if TYPE_CHECKING:
    from rigs.catalog.catalog import Catalog

GIB = 1024 ** 3
MEMORY_FRACTION = 0.9
"""The fraction of each accelerator's memory the engine may use: vLLM's ``--gpu-memory-utilization`` default
and the rigs' own flag."""
OVERHEAD_BYTES = round(1.5 * GIB)
"""Per accelerator, what the engine holds beside weights and KV cache (an allowance)."""
HOST_RESERVED_BYTES = 4 * GIB
"""Host memory the system, docker and the server process hold beside the checkpoint NxD Inference shards (an
allowance)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One instance size a model may be sized on.

    Attributes:
        instance_type: ``g6.xlarge``, ``ml.g6.xlarge``.
        accelerators: its GPUs (on Inferentia2 and Trainium its NeuronCores).
        accelerator_memory_bytes: each accelerator's memory.
        accelerator: what one is (``NVIDIA L4``).
        why_not: why no rig of this project serves this model there, whatever its memory (a Neuron size and a
            model neither its hand-ported image nor AWS's vLLM Neuron image serves); None where memory decides.
        host_memory_bytes: the host's memory where it limits the weights (Neuron sizes); None elsewhere.
    """

    instance_type: str
    accelerators: int
    accelerator_memory_bytes: int
    accelerator: str
    why_not: str | None = None
    host_memory_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class InstanceFit:
    """How a model fits one instance size (the fields of ``rigs fit --json``'s ``instances``)."""

    instance_type: str
    accelerators: int
    accelerator_memory_bytes: int
    tensor_parallel: int
    fits: bool
    kv_tokens: int
    max_sequences: int
    why: str | None
    short_bytes: int = 0
    """The bytes its accelerators lack for the weights, the engine and the sequences asked (not in the JSON)."""


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
        fields = ("instance_type", "accelerators", "accelerator_memory_bytes", "tensor_parallel", "fits",
                  "kv_tokens", "max_sequences", "why")
        return {"weights_bytes": self.weights_bytes, "kv_bytes_per_token": self.kv_bytes_per_token,
                "kv_bytes_per_sequence": self.kv_bytes_per_sequence,
                "instances": [{k: asdict(i)[k] for k in fields} for i in self.instances]}

    def of(self, instance_type: str) -> InstanceFit:
        return next(i for i in self.instances if i.instance_type == instance_type)


def candidates(catalog: "Catalog", model: str | None, arch: Architecture | None = None) -> list[Candidate]:
    """Every size of the catalog's instance families, each EC2 size then its SageMaker twin, for the model named
    ``model`` (a :class:`~rigs.catalog.served.ModelCard` name; None for a model known only by its config) of ``arch``
    (its card's when None): on a family whose rigs serve one compiled-in model (the Neuron rigs), a model AWS's vLLM
    Neuron image does not serve either has their reason why not."""
    from rigs.catalog.catalog import SAGEMAKER_PREFIX

    if arch is None:
        arch = next((c.architecture for c in catalog.models.values() if c.name == model), None)
    out: list[Candidate] = []
    for name, family in catalog.instance_families.items():
        owner = next((r for r in catalog.rigs.values() if r.model_compiled_in and r.instance_family == name), None)
        own = owner is None or owner.weights.model == model
        why_ec2 = None if owner is None else catalog.neuron_why_not(owner, model or "a model known by its config",
                                                                    arch)
        for size, accelerators in family.sizes.items():
            host = family.host_memory_gib.get(size)
            out.append(Candidate(size, accelerators, family.memory_bytes, family.accelerator, why_ec2,
                                 host * GIB if host else None))
            if family.sagemaker:
                out.append(Candidate(SAGEMAKER_PREFIX + size, accelerators, family.memory_bytes, family.accelerator,
                                     None if own else getattr(owner, "other_models", None)))
    return out


def weights_bytes(arch: Architecture, dtype: str | None = None) -> int:
    """The weights' bytes in ``dtype`` (:meth:`Architecture.weights_bytes`)."""
    return arch.weights_bytes(dtype)


def kv_bytes_per_sequence(arch: Architecture, context: int, dtype: str | None = None) -> int:
    """One sequence of ``context`` tokens' KV cache, every layer counted as vLLM allocates it."""
    size = DTYPE_BYTES[dtype or arch.dtype]
    total = 0
    for kind in arch.layer_kinds()[:arch.layers - arch.kv_shared_layers]:
        geometry = arch.geometry(kind)
        tokens = min(context, arch.sliding_window or context) if kind == "sliding" else context
        total += 2 * geometry.kv_heads * geometry.head_dim * size * tokens
    return total


def degrees(arch: Architecture, accelerators: int) -> list[int]:
    """The tensor-parallel degrees up to ``accelerators`` that divide the attention and every KV head count."""
    heads = [arch.attention_heads, arch.kv_heads] + ([arch.full_attention.kv_heads] if arch.full_attention else [])
    return [d for d in range(1, accelerators + 1) if all(h % d == 0 for h in heads)]


def _on(candidate: Candidate, degree: int, weights: int, per_sequence: int, context: int,
        sequences: int) -> InstanceFit:
    per_accelerator = int(candidate.accelerator_memory_bytes * MEMORY_FRACTION) - OVERHEAD_BYTES - weights // degree
    cache = max(0, per_accelerator) * degree
    count = cache // per_sequence if per_sequence else 0
    fits = per_accelerator > 0 and count >= sequences
    usable = degree * (int(candidate.accelerator_memory_bytes * MEMORY_FRACTION) - OVERHEAD_BYTES)
    short = max(0, weights + sequences * per_sequence - usable)
    why = None if fits else (
        f"{short:,} bytes short: weights {weights / GIB:.2f} GiB and KV for {sequences} x {context:,} tokens "
        f"{sequences * per_sequence / GIB:.2f} GiB over {degree} x {candidate.accelerator}, each giving "
        f"{usable / degree / GIB:.2f} GiB ({MEMORY_FRACTION:.0%} of its memory less {OVERHEAD_BYTES / GIB:g} GiB "
        "for the engine)")
    tokens = int(cache * context // per_sequence) if per_sequence else 0
    return InstanceFit(candidate.instance_type, candidate.accelerators, candidate.accelerator_memory_bytes, degree,
                       fits, tokens, int(count), why, short)


def fit_one(arch: Architecture, candidate: Candidate, *, context: int, sequences: int = 1,
            dtype: str | None = None) -> InstanceFit:
    """``arch`` on ``candidate``: at the smallest degree that fits, else at the largest it could use."""
    weights = weights_bytes(arch, dtype)
    per_sequence = kv_bytes_per_sequence(arch, context, dtype)
    options = degrees(arch, candidate.accelerators)
    best = None
    for degree in options:
        best = _on(candidate, degree, weights, per_sequence, context, sequences)
        if best.fits:
            break
    assert best is not None  # degree 1 always divides
    why = candidate.why_not or _host_short(candidate, weights)
    if why is not None:
        host_short = max(0, weights - (candidate.host_memory_bytes or 0) + HOST_RESERVED_BYTES) \
            if candidate.why_not is None else 0
        return InstanceFit(best.instance_type, best.accelerators, best.accelerator_memory_bytes,
                           best.tensor_parallel, False, best.kv_tokens, best.max_sequences, why,
                           max(best.short_bytes, host_short))
    return best


def _host_short(candidate: Candidate, weights: int) -> str | None:
    """Why the host cannot hold the checkpoint while NxD Inference shards it; None where it can, or does not matter."""
    if candidate.host_memory_bytes is None or weights <= candidate.host_memory_bytes - HOST_RESERVED_BYTES:
        return None
    return (f"the host's {candidate.host_memory_bytes / GIB:g} GiB, less {HOST_RESERVED_BYTES / GIB:g} GiB for the "
            f"system, cannot hold the {weights / GIB:.2f} GiB checkpoint NxD Inference shards on the host")


def fit(arch: Architecture, candidates: Iterable[Candidate], *, context: int | None = None, sequences: int = 1,
        dtype: str | None = None) -> ModelFit:
    """``arch`` on every one of ``candidates`` at ``context`` tokens (the model's longest when None)."""
    tokens = min(context or arch.max_context, arch.max_context)
    per_sequence = kv_bytes_per_sequence(arch, tokens, dtype)
    return ModelFit(weights_bytes=weights_bytes(arch, dtype), kv_bytes_per_token=per_sequence / tokens,
               kv_bytes_per_sequence=per_sequence, context=tokens, sequences=sequences,
               instances=tuple(fit_one(arch, c, context=tokens, sequences=sequences, dtype=dtype)
                               for c in candidates))


def render(model: str, result: ModelFit) -> list[str]:
    """The table ``python -m rigs fit`` prints (one line per size)."""
    lines = [f"{model}: weights {result.weights_bytes / GIB:.2f} GiB; KV {result.kv_bytes_per_token:,.0f} bytes a "
             f"token over {result.context:,} tokens, {result.kv_bytes_per_sequence / GIB:.2f} GiB a sequence; "
             f"{result.sequences} at once; each accelerator at {MEMORY_FRACTION:.0%} less "
             f"{OVERHEAD_BYTES / GIB:g} GiB for the engine", ""]
    rows: Sequence[tuple[str, ...]] = [("instance", "accel", "TP", "fits", "KV tokens", "sequences", "why not")] + [
        (i.instance_type, f"{i.accelerators} x {i.accelerator_memory_bytes / GIB:.1f} GiB", str(i.tensor_parallel),
         "yes" if i.fits else "no", f"{i.kv_tokens:,}", f"{i.max_sequences:,}", i.why or "")
        for i in result.instances]
    widths = [max(len(r[c]) for r in rows) for c in range(6)]
    return lines + ["  ".join(r[c].ljust(widths[c]) for c in range(6)).rstrip() + ("  " + r[6] if r[6] else "")
                    for r in rows]


def expected_cache(model_id: str, instance_type: str, tokens: int) -> dict[str, Any]:
    """What this fit predicts vLLM logs at start-up ("GPU KV cache size", "Maximum concurrency") for ``model_id`` on
    ``instance_type`` at a context of ``tokens``, as provenance facts (a vLLM rig's expectation,
    :meth:`rigs.catalog.kinds.base.RigBase.expected`); nothing for a model the catalog's models section does not
    list or a size of no family."""
    from rigs.catalog.facts import fact
    from rigs.catalog.model import load_catalog

    catalog = load_catalog()
    card, family = catalog.models.get(model_id), catalog.family_of(instance_type)
    if card is None or family is None:
        return {}
    accelerators = family[1].sizes[instance_type.removeprefix("ml.")]
    result = fit_one(card.architecture, Candidate(instance_type, accelerators, family[1].memory_bytes,
                                                  family[1].accelerator), context=tokens)
    source = (f"python -m rigs fit's prediction: {instance_type}, tensor parallel {result.tensor_parallel}, "
              f"{tokens:,} tokens, {MEMORY_FRACTION:.0%} of memory less {OVERHEAD_BYTES / GIB:g} GiB per accelerator")
    return {"kv_cache_tokens": fact(result.kv_tokens, source),
            "max_concurrency": fact(f"{result.kv_tokens / tokens:.2f}", source)}
