"""Whether vLLM can run a model's weights on a GPU family at all, before anything is sized or deployed.

Memory is not the only reason a model does not serve: vLLM refuses weight formats and dtypes the GPU's compute
capability has no kernels for, and it says so only after the instance is up and the weights are downloaded. Each
:class:`Rule` here is one such check with its public source (one rule per check, like cdk-nag's rules); :func:`run`
applies every rule to a model on a family and returns what they find. A finding that refuses makes the size unfit
(``python -m rigs fit``'s ``why``) and refuses ``-c model.<rig>`` at synth and ``python -m rigs up`` in one line; a
finding that does not refuse is a line said beside the choice (bf16 weights served as float16).

Neuron families have no compute capability: none of these rules apply there (AWS's vLLM Neuron image has its own
check, the model classes NxD Inference serves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from rigs.catalog.served import Architecture

if TYPE_CHECKING:
    from rigs.catalog.catalog import InstanceFamily

AMPERE = (8, 0)
"""Compute capability 8.0 (A100): the least at which vLLM runs bf16, FP8 and MXFP4 weights."""
_FP8 = re.compile(r"(^|[^a-z0-9])fp8([^a-z0-9]|$)")


@dataclass(frozen=True, slots=True)
class Target:
    """A model on a GPU family: what every rule looks at.

    Attributes:
        arch: the model's architecture (its ``quantization`` names its weight format; ``dtype`` its own).
        accelerator: the family's GPU (``NVIDIA T4G``).
        capability: the GPU's compute capability, (major, minor).
        dtype: the dtype asked for (``rigs fit --dtype``, a rig's ``--dtype``); None: the model's own.
    """

    arch: Architecture
    accelerator: str
    capability: tuple[int, int]
    dtype: str | None = None

    @property
    def sm(self) -> str:
        """The capability as vLLM writes it in its errors (``SM75``)."""
        return f"SM{self.capability[0]}{self.capability[1]}"

    @property
    def weight_format(self) -> str:
        """The weights' quantization as the catalog or the config names it, lower case (empty: none)."""
        return (self.arch.quantization or "").lower()


@dataclass(frozen=True, slots=True)
class Finding:
    """What one rule found: its name, whether it refuses the model there, and the line that says so."""

    rule: str
    refuses: bool
    line: str


@dataclass(frozen=True, slots=True)
class Rule:
    """One check: its name, its public source, whether a finding refuses, and the check (the line, or None)."""

    name: str
    source: str
    refuses: bool
    check: Callable[[Target], str | None]


def _mxfp4(target: Target) -> str | None:
    if not target.weight_format.startswith("mxfp4") or target.capability >= AMPERE:
        return None
    return (f"MXFP4 weights need compute capability 8.0 or more and the {target.accelerator} is "
            f"{target.capability[0]}.{target.capability[1]} (vLLM: \"The quantization method mxfp4 is not supported "
            f"for the current GPU {target.sm}\"): serve it on an A10G, L4, L40S, A100 or H100 family")


def _fp8(target: Target) -> str | None:
    if not _FP8.search(target.weight_format) or target.capability >= AMPERE:
        return None
    return (f"FP8 weights need compute capability 8.0 or more (vLLM's fp8 method, weight-only through Marlin below "
            f"8.9) and the {target.accelerator} is {target.capability[0]}.{target.capability[1]}: serve it on an "
            "A10G, L4, L40S, A100 or H100 family, or a checkpoint in another format")


def _bf16(target: Target) -> str | None:
    if (target.dtype or target.arch.dtype) != "bfloat16" or target.capability >= AMPERE:
        return None
    return (f"bfloat16 weights served as float16 (--dtype float16): the {target.accelerator}, compute capability "
            f"{target.capability[0]}.{target.capability[1]}, has no bfloat16")


RULES: tuple[Rule, ...] = (
    Rule("mxfp4-needs-8.0", "vllm-project/vllm issues 22288 and 23203 (\"The quantization method mxfp4 is not "
         "supported for the current GPU SM75\"); vllm/model_executor/layers/quantization/mxfp4.py, "
         "Mxfp4Config.get_min_capability", True, _mxfp4),
    Rule("fp8-needs-8.0", "vllm/model_executor/layers/quantization/fp8.py: Fp8Config.get_min_capability returns 80, "
         "and Fp8LinearMethod uses Marlin's weight-only FP8 below capability 8.9", True, _fp8),
    Rule("bf16-as-fp16-below-8.0", "vLLM's dtype check (vllm/platforms/cuda.py; vllm/worker/worker.py before it): "
         "\"Bfloat16 is only supported on GPUs with compute capability of at least 8.0 ... You can use float16 "
         "instead ... --dtype=half\"", False, _bf16),
)
"""Every rule, in the order their findings are said."""


def run(arch: Architecture, family: "InstanceFamily", dtype: str | None = None) -> list[Finding]:
    """What every rule finds for ``arch`` on ``family`` (``dtype``: the dtype asked, None for the model's own);
    nothing on a Neuron family."""
    capability = family.capability
    if capability is None:
        return []
    target = Target(arch, family.accelerator, capability, dtype)
    return [Finding(rule.name, rule.refuses, line) for rule in RULES if (line := rule.check(target)) is not None]


def refusal(arch: Architecture | None, family: "InstanceFamily", dtype: str | None = None) -> str | None:
    """The first refusing finding's line for ``arch`` on ``family``; None where it runs (or the model is unknown)."""
    if arch is None:
        return None
    return next((f.line for f in run(arch, family, dtype) if f.refuses), None)


def notes(arch: Architecture, family: "InstanceFamily", dtype: str | None = None) -> list[str]:
    """The lines of the findings that do not refuse (how the model is served there instead)."""
    return [f.line for f in run(arch, family, dtype) if not f.refuses]


def family_notes(families: Mapping[str, "InstanceFamily"], arch: Architecture, dtype: str | None = None) -> list[str]:
    """``g4dn: <line>`` for each family where ``arch`` is served otherwise than asked (``python -m rigs fit``)."""
    return [f"{name}: {line}" for name, family in families.items() for line in notes(arch, family, dtype)]
