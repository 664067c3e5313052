"""How long a rig may take to answer: its ready allowance from the work its boot does.

    ready minutes = boot + download + compile + load

- **download**: the weights' GiB at :data:`DOWNLOAD_MIB_PER_S` from the Hugging Face Hub onto the root volume;
- **compile**: NxD Inference's compile on a Neuron rig serving another model (the catalog's
  ``neuron_vllm.compile_minutes``, allowances by model size); 0 elsewhere;
- **load**: the weights read back from the root volume at :data:`LOAD_MIB_PER_S`;
- **boot**: everything else (the instance, the server image's pull, the engine's start-up): the catalog's
  ``ready_timeout_minutes`` for the rig with its own model, less that model's download and load.

A rig serving its own model keeps the catalog's figure; one serving another (``-c model.<rig>``) gets its boot plus
the new model's download, compile and load. Each figure is rounded up to a whole minute. ``rigs rehearse`` prints
the sum in its plan and its estimate (:func:`describe`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rigs.catalog.model import DeployableRig

DOWNLOAD_MIB_PER_S = 50
"""The rate the weights are taken to download at: an allowance, not a measurement. Every byte is written to the
rig's gp3 root volume, whose baseline is 125 MiB/s
(https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html#gp3-ebs-volume-type), so that is the ceiling;
the Hub's rate to an instance varies, hence 40% of it."""
LOAD_MIB_PER_S = 125
"""The rate the weights are read back from the root volume as the engine loads them: gp3's baseline throughput (the
page cache can make it faster, never the volume slower)."""


@dataclass(frozen=True, slots=True)
class ReadyAllowance:
    """A rig's ready allowance, by what its boot does (minutes, each rounded up)."""

    boot: int
    download: int
    compile: int
    load: int
    weights_gib: float

    @property
    def minutes(self) -> int:
        return self.boot + self.download + self.compile + self.load

    def describe(self) -> str:
        """``70 min: boot 38 + download 6 (15.0 GiB at 50 MiB/s) + compile 30 + load 3 (at 125 MiB/s)``."""
        return (f"{self.minutes} min: boot {self.boot} + download {self.download} ({self.weights_gib:.1f} GiB at "
                f"{DOWNLOAD_MIB_PER_S} MiB/s) + compile {self.compile} + load {self.load} (at {LOAD_MIB_PER_S} MiB/s)")


def _at(gib: float, mib_per_s: int) -> int:
    return math.ceil(gib * 1024 / mib_per_s / 60)


def allowance(rig: DeployableRig) -> ReadyAllowance:
    """``rig``'s ready timeout, split by the work: its download, compile and load, and the boot that remains."""
    gib = rig.weights.memory_gib or 0.0
    download, load = _at(gib, DOWNLOAD_MIB_PER_S), _at(gib, LOAD_MIB_PER_S)
    compile_ = getattr(rig, "compile_allowance_minutes", 0)
    return ReadyAllowance(boot=max(0, rig.ready_timeout_minutes - download - load - compile_), download=download,
                          compile=compile_, load=load, weights_gib=gib)


def served_minutes(own: DeployableRig, weights_gib: float, compile_minutes: int = 0) -> int:
    """The ready timeout of ``own`` (a rig as the catalog has it) serving weights of ``weights_gib`` GiB, compiled
    for ``compile_minutes``: its boot, plus their download, compile and load."""
    return allowance(own).boot + _at(weights_gib, DOWNLOAD_MIB_PER_S) + compile_minutes + _at(weights_gib,
                                                                                            LOAD_MIB_PER_S)


def describe(rig: DeployableRig) -> str:
    """The ready allowance in one phrase, for the plan and the estimate."""
    return allowance(rig).describe()
