"""What vLLM takes on each GPU before its KV cache, as the engine version a rig pins computes it.

vLLM sizes its KV cache once, at start-up (``vllm/v1/worker/gpu_worker.py``, ``determine_available_memory``): it
asks CUDA for the card's memory (``torch.cuda.mem_get_info``), takes ``--gpu-memory-utilization`` of it, and
subtracts what a profile pass held: the weights, the activation peak of one forward pass over
``--max-num-batched-tokens`` tokens, the sampler's warm-up over ``--max-num-seqs`` rows of logits
(``vllm/v1/worker/gpu_model_runner.py``, ``profile_run`` / ``_dummy_sampler_run``), the memory allocated outside
torch (the CUDA context's growth, cuBLAS workspaces, NCCL and custom all-reduce buffers at tensor parallel > 1) and,
from vLLM 0.21, an estimate of the CUDA graphs it will capture (its log: "CUDA graph memory profiling is enabled
(default since v0.21.0)"). What is left is "Available KV cache memory".

:func:`budget` is that, per GPU, as a :class:`Budget` of named terms. The terms the engine measures at start-up
(activations, non-torch memory, graphs) are estimates here, calibrated on published start-up logs
(``tests/rigs/sizing/vllm_startup_logs.yaml``; docs/rigs.md states the accuracy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

GIB = 1024 ** 3

VISIBLE_GIB = {
    "T4": 14.56, "T4G": 14.56, "A10G": 22.06, "A10": 22.06, "L4": 21.96, "L40S": 44.39, "A100 40GB": 39.39,
    "A100 80GB": 79.15, "H100": 79.19, "H200": 139.80,
}
"""GiB that CUDA shows of each card (``torch.cuda.mem_get_info``'s total: what vLLM takes its fraction of). L4 and
T4 as vLLM 0.30 logged them on AWS ("Free memory on device (21.77/21.96 GiB)", xbill9/sagemaker-gemma's
``docs/runs/`` logs of an L4 and a T4), H100 as the llm-d planner's sweep logged it (79.19 GiB,
llm-d-incubation/llm-d-planner ``accuracy/results/v0.19.0/logs/``); A10G, L40S, A100 and H200 as PyTorch's
out-of-memory message prints the card's total in public logs ("GPU 0 has a total capacity of 22.06 GiB"), the T4G
as torch reported it on a g5g (14,913 MiB: xbill9/gemma4-dev
``gpu-vllm-g5g-2b/benchmarks/runs/2026-08-12-first-serve-g5g/REPORT.md``), the T4's figure. EC2's ``MemoryInfo`` is
1-1.5% more on most cards and about 9% more on the T4 family."""
UNLISTED_VISIBLE = 0.985
"""A card :data:`VISIBLE_GIB` does not list (of the catalog's families: p6-b200's B200 and g7e's RTX PRO 6000, whose
CUDA totals no log read here gave): this fraction of what EC2 reports (most cards' ratio)."""

UTILIZATION_092_SINCE = (0, 25)
"""vLLM's ``--gpu-memory-utilization`` default is 0.92 from this version (``vllm/config/cache.py``,
``gpu_memory_utilization: float = Field(default=0.92, ...)`` at v0.25.0), 0.9 before."""
LARGE_CARD_BYTES = 70 * GIB
"""``vllm/engine/arg_utils.py``: a card of at least 70 GiB that is not an A100 gets the larger batch defaults
(8,192 batched tokens and 1,024 sequences for the OpenAI server); any other 2,048 and 256."""


@dataclass(frozen=True, slots=True)
class Terms:
    """What one range of vLLM versions holds beside the weights, as its published start-ups show it."""

    since: tuple[int, int]
    bytes_per_logit: int
    """The sampler's warm-up, per logit of ``max_num_seqs`` x vocabulary (fp32 logits and the probabilities and
    sort buffers computed from them)."""
    communication_gib: float
    """At tensor parallel > 1, per GPU: NCCL and custom all-reduce buffers allocated during the profile."""
    basis: str


TERMS = (
    Terms((0, 20), 10, 1.85, "vLLM 0.30's own log of its peak (\"Actual usage is ... for peak activation\"): 0.36 and "
          "1.27 GiB less its CUDA-graph estimate for Gemma 4 E4B and E2B at 256 sequences of a 262,144-token "
          "vocabulary, xbill9/sagemaker-gemma's L4 and T4 runs; tensor parallel > 1 and 0.20 to 0.29 not checked "
          "(0.19's figure)"),
    Terms((0, 17), 13, 1.85, "the llm-d planner's H100 sweep, vLLM 0.19, 1,024 sequences, vocabularies of 32,000 to "
          "262,208: 0.59 GiB plus 13 bytes a logit within 0.1 GiB on 19 of 21 rows, and 1.67 to 1.89 GiB more per "
          "GPU at tensor parallel 2 and 4 (llm-d-incubation/llm-d-planner#194)"),
    Terms((0, 15), 36, 1.85, "the same sweep's Qwen3-14B under 0.15 and 0.16: 3.4 GiB more than under 0.17"),
    Terms((0, 10), 10, 0.15, "dennislee22/vLLM-benchmarking's A100 starts under 0.10.1: 0.74 to 1.05 GiB beside "
          "the weights at 256 sequences, 0.12 GiB more at tensor parallel 2"),
)
"""Newest first; a version before the oldest takes the oldest's."""
NON_TORCH_BYTES = round(0.45 * GIB)
"""Memory the profile pass holds beside its peak on one GPU: allocations outside torch (the CUDA context's growth,
cuBLAS workspaces) and buffers kept from the pass (the H100 sweep's 0.59 GiB less the hidden states it keeps)."""
MOE_BYTES_PER_ELEMENT = 4
"""A mixture of experts' fused-MoE workspace, per batched token x routed expert x expert intermediate size (two
16-bit halves of the gate-up output), held beside the peak: the H100 sweep's Mixtral 8x7B, Qwen1.5-MoE-A2.7B and
Qwen3-30B-A3B hold 0.13 to 0.35 GiB more than a dense model of their vocabulary."""
CUDA_GRAPH_BYTES = round(0.5 * GIB)
"""vLLM 0.21 and later: the CUDA-graph estimate it subtracts (its logs say "Estimated CUDA graph memory: 0.36 to
0.62 GiB" for common models; vllm-project/vllm#45178 and #50780 report it higher on hybrid models)."""
CUDA_GRAPH_SINCE = (0, 21)


def version(text: str) -> tuple[int, int]:
    """``0.30.0``, ``v0.27.2rc0``, ``vLLM 0.19.1`` as (major, minor)."""
    found = re.search(r"(\d+)\.(\d+)", text)
    if found is None:
        raise ValueError(f"{text!r}: not a vLLM version (give it as 0.30.0)")
    return int(found.group(1)), int(found.group(2))


def visible_bytes(accelerator: str, reported_bytes: int) -> tuple[int, str]:
    """The bytes CUDA shows on ``accelerator`` (``NVIDIA L4``, ``NVIDIA A100-SXM4-40GB``: the first word the table
    knows; an A100 by its memory), and where the figure comes from."""
    words = accelerator.upper().replace("NVIDIA", " ").replace("-", " ").split()
    name = next((w for w in words if w in VISIBLE_GIB or w == "A100"), "")
    if name == "A100":
        name = "A100 80GB" if reported_bytes > 60 * GIB else "A100 40GB"
    gib = VISIBLE_GIB.get(name)
    if gib is None:
        return round(reported_bytes * UNLISTED_VISIBLE), f"{UNLISTED_VISIBLE:.1%} of EC2's figure (card not listed)"
    return round(gib * GIB), f"{gib:g} GiB as CUDA shows it"


@dataclass(frozen=True, slots=True)
class Settings:
    """The serve flags sizing reads (None: vLLM's default for the card and version)."""

    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False

    @classmethod
    def read(cls, values: Mapping[str, str], switches: Iterable[str]) -> "Settings":
        """The settings among ``values`` (a flag's name as its field's, ``max_num_seqs``: its value) and
        ``switches`` (the names of the flags given without a value)."""
        parsers: dict[str, Callable[[str], Any]] = {
            "gpu_memory_utilization": float, "max_num_seqs": int, "max_num_batched_tokens": int, "kv_cache_dtype": str}
        return cls(**{k: parse(values[k]) for k, parse in parsers.items() if k in values},
                   enforce_eager="enforce_eager" in set(switches))

    def over(self, other: "Settings") -> "Settings":
        """These settings, each unset one taken from ``other``."""
        return Settings(self.gpu_memory_utilization if self.gpu_memory_utilization is not None
                        else other.gpu_memory_utilization,
                        self.max_num_seqs if self.max_num_seqs is not None else other.max_num_seqs,
                        self.max_num_batched_tokens if self.max_num_batched_tokens is not None
                        else other.max_num_batched_tokens,
                        self.kv_cache_dtype if self.kv_cache_dtype != "auto" else other.kv_cache_dtype,
                        self.enforce_eager or other.enforce_eager)


@dataclass(frozen=True, slots=True)
class Resolved:
    """Settings with vLLM's defaults filled in."""

    gpu_memory_utilization: float
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str
    enforce_eager: bool


def resolve(settings: Settings, engine: tuple[int, int], accelerator: str, card_bytes: int) -> Resolved:
    """``settings`` with what vLLM ``engine`` defaults to on ``accelerator`` (``card_bytes`` as CUDA shows it)."""
    utilization = 0.92 if engine >= UTILIZATION_092_SINCE else 0.9
    large = card_bytes >= LARGE_CARD_BYTES and "A100" not in accelerator
    batched = settings.max_num_batched_tokens or (8192 if large else 2048)
    seqs = settings.max_num_seqs or min(1024 if large else 256, batched)
    return Resolved(settings.gpu_memory_utilization or utilization, seqs, batched, settings.kv_cache_dtype,
                    settings.enforce_eager)


@dataclass(frozen=True, slots=True)
class Shape:
    """The model sizes the engine's own terms depend on (per GPU where sharded)."""

    vocab: int
    hidden: int
    width: int
    """The MLP's intermediate size on one GPU (a mixture of experts: one expert's)."""
    routed: int
    """Experts each token is routed to (0: not a mixture of experts)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """One GPU's memory as vLLM divides it (bytes)."""

    card: int
    card_basis: str
    requested: int
    weights: int
    forward: int
    """The forward pass's activation peak over ``max_num_batched_tokens``."""
    sampler: int
    """The sampler's warm-up over ``max_num_seqs`` rows of logits (with the hidden states it reads)."""
    non_torch: int
    communication: int
    cuda_graphs: int
    experts: int = 0
    """A mixture of experts' fused-MoE workspace over the batched tokens (kept beside the peak)."""

    @property
    def peak(self) -> int:
        """The profile's peak beside the weights: the larger of the forward pass and the sampler's warm-up."""
        return max(self.forward, self.sampler)

    @property
    def overhead(self) -> int:
        """What the engine holds beside the weights and the KV cache."""
        return self.peak + self.non_torch + self.communication + self.cuda_graphs + self.experts

    @property
    def kv(self) -> int:
        """"Available KV cache memory" (negative: the weights and the engine do not fit)."""
        return self.requested - self.weights - self.overhead

    def terms(self) -> str:
        """The terms in GiB, as one clause."""
        peak = "sampler warm-up" if self.sampler >= self.forward else "forward activations"
        parts = {peak: self.peak, "non-torch": self.non_torch, "MoE workspace": self.experts,
                 "communication": self.communication, "CUDA graphs": self.cuda_graphs}
        return ", ".join(f"{k} {v / GIB:.2f}" for k, v in parts.items() if v)


def budget(shape: Shape, weights_per_gpu: int, tensor_parallel: int, settings: Resolved, engine: tuple[int, int],
           card: int, card_basis: str) -> Budget:
    """One GPU's :class:`Budget` for a model of ``shape`` whose weights put ``weights_per_gpu`` on it."""
    rows = min(settings.max_num_seqs, settings.max_num_batched_tokens)
    tokens = settings.max_num_batched_tokens
    terms = next((t for t in TERMS if engine >= t.since), TERMS[-1])
    forward = tokens * (2 * shape.hidden + 3 * shape.width) * 2
    sampler = terms.bytes_per_logit * rows * shape.vocab + tokens * shape.hidden * 4
    graphs = CUDA_GRAPH_BYTES if engine >= CUDA_GRAPH_SINCE and not settings.enforce_eager else 0
    return Budget(card=card, card_basis=card_basis, requested=int(card * settings.gpu_memory_utilization),
                  weights=weights_per_gpu, forward=forward, sampler=sampler, non_torch=NON_TORCH_BYTES,
                  communication=round(terms.communication_gib * GIB) if tensor_parallel > 1 else 0,
                  cuda_graphs=graphs,
                  experts=tokens * shape.routed * shape.width * MOE_BYTES_PER_ELEMENT)
