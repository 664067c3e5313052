"""A Neuron rig serving another model: AWS's vLLM Neuron image (the catalog's ``neuron_vllm``) in place of its
hand-ported one, for ``-c model.<rig>=ID`` (and ``-c model=ID``) where NxD Inference serves the model's class.

The model is compiled when the server starts, for the shapes it is asked to serve: ``--max-model-len`` (the
catalog's ``neuron_vllm.max_model_len``, or the model's own where that is shorter) x ``--max-num-seqs`` (its
``max_num_seqs``, the batch NxD Inference compiles for), over ``--tensor-parallel-size`` NeuronCores (the smallest
degree that holds it, ``rigs/sizing/fit.py``). The flags follow vLLM's Neuron plugin (vllm-project/vllm-neuron,
README): prefix caching off, so each sequence has one block of the whole context, and ``--num-gpu-blocks-override``
set to that count (its known issue: ceil(max_model_len / block_size) x max_num_seqs). NxD Inference's own buckets
are compiled (bucketing is on in the plugin's default config, for context encoding and token generation); other
buckets would go through ``--additional-config``'s ``override_neuron_config`` (the flags travel in the boot scripts'
S3 asset, so their length is no longer bounded by EC2's 16 KB of user data). The ready timeout is the rig's boot plus
the model's download, the compile's allowance for its size (``neuron_vllm.compile_minutes``) and its load
(``rigs/sizing/readiness.py``).

The boot downloads the checkpoint to the instance's root volume and serves that path (``rigs/userdata/neuron_vllm.sh``):
given a Hub id, the plugin would load the model in fp32 and save that copy before compiling
(``vllm_neuron/worker/neuronx_distributed_model_loader.py``), three times the bf16 checkpoint on disk with the Hub's
cache. So the volume holds the checkpoint once (its weights' bytes in their own dtype), the swapfile and
:data:`ROOT_ALLOWANCE_GIB`; the compiled artifacts are the graphs alone, NxD Inference sharding the weights as it
loads them (``save_sharded_checkpoint`` off by default, aws-neuron/neuronx-distributed-inference ``models/config.py``).
"""

from __future__ import annotations

import math

from rigs.catalog.catalog import Catalog, InstanceFamily
from rigs.catalog.kinds.ec2 import NeuronRig, NeuronVllmRig
from rigs.catalog.runtimes import NEURON_VLLM
from rigs.catalog.served import Architecture, ModelCard, NeuronVllm, weights_of
from rigs.sizing.fit import GIB, InstanceFit
from rigs.sizing.readiness import served_minutes

ROOT_ALLOWANCE_GIB = 30
"""Free GiB beyond the downloaded checkpoint and the swapfile: the image's layers (the Neuron SDK, the compiler), the
compiled artifacts, margin (an allowance)."""


def serve_flags(section: NeuronVllm, chosen: InstanceFit, context: int, parser: str | None,
                reasoning_parser: str | None = None) -> tuple[str, ...]:
    """``vllm serve``'s flags for the model on ``chosen`` at ``context`` tokens (its tool calls parsed by ``parser``,
    its thinking by ``reasoning_parser``)."""
    sequences = section.max_num_seqs
    flags = ["--max-model-len", str(context), "--max-num-seqs", str(sequences),
             "--tensor-parallel-size", str(chosen.tensor_parallel), "--no-enable-prefix-caching",
             "--num-gpu-blocks-override", str(sequences)]  # one block of the whole context per sequence
    if parser:
        flags += ["--enable-auto-tool-choice", "--tool-call-parser", parser]
    if reasoning_parser:
        flags += ["--reasoning-parser", reasoning_parser]
    return tuple(flags)


def devices(family: InstanceFamily, accelerators: int) -> tuple[str, ...]:
    """Every Neuron device of an instance with ``accelerators`` NeuronCores (``/dev/neuron0`` ...)."""
    return tuple(f"/dev/neuron{i}" for i in range(max(1, accelerators // family.accelerators_per_device)))


def on_neuron_vllm(rig: NeuronRig, catalog: Catalog, model_id: str, card: ModelCard | None, arch: Architecture,
                   chosen: InstanceFit, context: int, compile_minutes: int) -> NeuronVllmRig:
    """``rig`` serving ``model_id`` with AWS's vLLM Neuron image on ``chosen`` (validated as a
    :class:`~rigs.catalog.kinds.ec2.NeuronVllmRig`)."""
    section = catalog.neuron_vllm
    found = catalog.family_of(chosen.instance_type)
    assert section is not None and found is not None  # the caller sized it on the family with the section
    family = found[1]
    parser = card.tool_call_parser if card else None
    weights = card.weights(section.engine) if card else weights_of(model_id, arch, section.engine,
                                                                   f"https://huggingface.co/{model_id}")
    kept = ("kind", "stack_name", "regions", "max_hours", "price_source", "architecture", "ami_ssm_parameter",
            "local_port", "root_volume_gib", "swap_gib")
    served = NeuronVllmRig.model_validate({
        **{name: getattr(rig, name) for name in kept},
        "runtime": NEURON_VLLM.name, "label": f"{rig.label.split(' (', 1)[0]} ({rig.instance_family}, AWS vLLM "
                                              "Neuron image)",
        "model_id": model_id, "tool_calls": parser is not None, "weights": weights,
        "instance_type": chosen.instance_type, "image": section.image_reference, "image_digest": section.image_digest,
        "serve_flags": serve_flags(section, chosen, context, parser,
                                   reasoning_parser=card.reasoning_parser if card else None),
        "port": section.port,
        "neuron_devices": devices(family, chosen.accelerators),
        "root_free_gib": max(rig.root_free_gib,
                             math.ceil(arch.weights_bytes() / GIB) + rig.swap_gib + ROOT_ALLOWANCE_GIB),
        "ready_timeout_minutes": served_minutes(rig, weights.memory_gib or 0.0, compile_minutes),
        "compile_allowance_minutes": compile_minutes})
    served._name = rig.name
    return served
