"""What each catalog runtime (a rig's ``runtime:`` in ``rigs/catalog.yaml``) is, in one table.

Per runtime: the backend kind the agent reaches it as (``agent/kinds.py``), the engine provenance expects it
to serve with, an EC2 runtime's boot (its bash file beside ``rigs/userdata``, the port and name of its
container, whether a reply must count its completion tokens), and the rehearsal's allowance per quality item.
``rigs/userdata``, ``rigs/rehearsal`` and the agent ask :func:`runtime`; none of them compares a runtime's
name. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Boot:
    """How an EC2 rig of this runtime boots (``rigs/userdata``).

    Attributes:
        script: the runtime's bash file beside ``rigs/userdata/__init__.py`` (after ``common.sh``).
        container_port: the port its server listens on inside the container.
        container_name: the docker container's name.
        require_completion_tokens: whether the readiness check refuses a reply without ``completion_tokens``.
        shared: bash files it shares with another runtime, between ``common.sh`` and its own (the Neuron devices).
    """

    script: str
    container_port: int
    container_name: str
    require_completion_tokens: bool
    shared: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Runtime:
    """One catalog runtime.

    Attributes:
        name: its name in the catalog.
        backend_kind: the agent's backend kind for a rig of it (its client, ``agent/kinds.py``).
        engine: the engine it serves with, as provenance names it; None where there is nothing to expect (the
            Neuron rigs' hand-ported server has no name or version of its own, Bedrock publishes none).
        boot: how an EC2 rig of it boots; None for runtimes no EC2 rig runs.
        serves_any_model: whether a rig of it serves any model it is given (``-c model.<rig>=ID``): vLLM loads a
            checkpoint by its id; the Neuron rigs' server has its model compiled in.
        quality_seconds_per_item: the rehearsal's allowance per quality-lane item (an allowance, not a
            measurement: the Neuron servers answer one request at a time, a reply of up to 32 tokens at about
            37 tok/s with its prefill is under 0.8 s; the others take 4 in flight and decode at 36 to 130
            tok/s, 0.6 s per item / 4; vLLM on Neuron takes 4 in flight too, at no published rate: 0.8 s / 4).
        other_models_runtime: the runtime a rig of it serves another model with, where its own server has its
            model compiled in (the Neuron rigs: AWS's vLLM Neuron image, ``neuron_vllm`` in the catalog).
        compiled_kv_cache: its KV cache is what it was compiled for (NxD Inference: max_num_seqs x max_model_len),
            not what the accelerators' memory leaves, so ``rigs fit`` predicts nothing for it.
    """

    name: str
    backend_kind: str
    engine: str | None
    boot: Boot | None
    quality_seconds_per_item: float
    serves_any_model: bool = False
    other_models_runtime: str | None = None
    compiled_kv_cache: bool = False


VLLM = Runtime("vllm", backend_kind="openai", engine="vLLM",
               boot=Boot("vllm.sh", container_port=8000, container_name="vllm", require_completion_tokens=False),
               quality_seconds_per_item=0.15, serves_any_model=True)
NEURONX = Runtime("neuronx", backend_kind="neuron", engine=None,
                  boot=Boot("neuronx.sh", container_port=8080, container_name="gemma4-neuron",
                            require_completion_tokens=True, shared=("neuron_devices.sh",)),  # its port is compiled in
                  quality_seconds_per_item=0.8, other_models_runtime="neuron-vllm")
NEURON_VLLM = Runtime("neuron-vllm", backend_kind="openai", engine="vLLM",
                      boot=Boot("neuron_vllm.sh", container_port=8000, container_name="vllm-neuron",
                                require_completion_tokens=True, shared=("neuron_devices.sh",)),
                      quality_seconds_per_item=0.2, compiled_kv_cache=True)
"""AWS's vLLM image for Inferentia2 and Trainium1 (NxD Inference), compiling the model when its server starts."""
SAGEMAKER_VLLM = Runtime("sagemaker-vllm", backend_kind="sagemaker", engine="vLLM", boot=None,
                         quality_seconds_per_item=0.15, serves_any_model=True)
BEDROCK = Runtime("bedrock", backend_kind="bedrock", engine=None, boot=None, quality_seconds_per_item=0.15)
BEDROCK_MANTLE = Runtime("bedrock-mantle", backend_kind="bedrock-mantle", engine=None, boot=None,
                         quality_seconds_per_item=0.15)
"""Bedrock's OpenAI-compatible endpoint (Chat Completions): the same model the rigs serve, managed by AWS."""

RUNTIMES: dict[str, Runtime] = {r.name: r for r in (VLLM, NEURONX, NEURON_VLLM, SAGEMAKER_VLLM, BEDROCK,
                                                      BEDROCK_MANTLE)}


class UnknownRuntimeError(KeyError):
    """A runtime name the table does not hold."""


def runtime(name: str) -> Runtime:
    """The descriptor of runtime ``name``.

    Raises:
        UnknownRuntimeError: a name the table does not hold (the catalog refuses such a rig).
    """
    try:
        return RUNTIMES[name]
    except KeyError:
        raise UnknownRuntimeError(name) from None
