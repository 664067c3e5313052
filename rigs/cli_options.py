"""The options of each subcommand of ``python -m rigs`` (:mod:`rigs.cli`), one model each
(:class:`kit.options.Options`): its own options and the shared ones it puts beside them
(:mod:`rigs.shared_options`; ``up``'s in :mod:`rigs.deploy.up_options`, ``rehearse``'s in
:mod:`rigs.rehearsal.options`, ``pins refresh``'s in :mod:`rigs.catalog.pins`). Each option is declared once; the
parser and the typed options each command reads are made from these models.
"""

from __future__ import annotations

import argparse

from kit.options import Option, Together
from rigs.estate.sweep import MAX_WAIT_MINUTES
from rigs.shared_options import (ALL_FOUR_REGIONS, ALL_RESOURCES, EACH_RIGS_REGIONS, JSON, MODEL, MODEL_CONFIG,
                                 RIG_HELP, RIGS_TO_CHECK, WORKLOAD, Global, context_checked, fraction, minutes_or_zero,
                                 positive)


class DoctorOptions(Global):
    """``python -m rigs doctor``."""

    rigs = RIGS_TO_CHECK
    regions = EACH_RIGS_REGIONS
    context = context_checked("its quotas, offerings and root volume are checked for")
    json = JSON


class PreflightOptions(Global):
    """``python -m rigs preflight``."""

    rigs = RIGS_TO_CHECK
    regions = ALL_FOUR_REGIONS
    no_record = Option(("--no-record",), "do not write the placement file", default=False, switch=True)
    context = context_checked("zones, quotas and prices are those of")
    json = JSON


class StatusOptions(Global):
    """``python -m rigs status``."""

    regions = ALL_FOUR_REGIONS
    all_resources = ALL_RESOURCES
    json = JSON


class SweepOptions(Global):
    """``python -m rigs sweep``."""

    regions = ALL_FOUR_REGIONS
    yes = Option(("--yes",), "delete; without it, only list", default=False, switch=True)
    everything = Option(("--all",), "also the base stacks, security groups, network, IAM role and instance profile",
                        default=False, switch=True)
    max_wait = Option(("--max-wait",), "minutes to wait for an endpoint still Creating, and for each deletion "
                      f"(default {MAX_WAIT_MINUTES:g})", default=MAX_WAIT_MINUTES, type=minutes_or_zero,
                      metavar="MIN")
    all_resources = ALL_RESOURCES


class PricesOptions(Global):
    """``python -m rigs prices``."""

    rigs = Option((), f"rigs to price (default: every one); {RIG_HELP}", nargs="*", metavar="RIG")
    regions = EACH_RIGS_REGIONS
    live = Option(("--live",), "ask the Pricing API (needs credentials)", default=False, switch=True)
    context = context_checked("the price is that of")
    json = JSON


def vllm_version(value: str) -> tuple[int, int]:
    """A vLLM version, ``0.30.0`` (major and minor read)."""
    from rigs.sizing.engine import version

    try:
        return version(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: give a vLLM version, e.g. 0.30.0") from None


WHICH_MODEL = Together(required=True)
"""``fit``: a model of the catalog, or a model's ``config.json``."""
WHICH_LENGTH = Together()
"""``fit``: the context as tokens, or as a workload's longest request."""


class FitOptions(Global):
    """``python -m rigs fit``."""

    model = MODEL.but(together=WHICH_MODEL)
    model_config = MODEL_CONFIG.but(flags=("--config", "--model-config"), together=WHICH_MODEL)
    context = Option(("--context",), "tokens of one sequence (default: the model's longest, max_position_embeddings)",
                     type=positive, metavar="N", together=WHICH_LENGTH)
    workload = WORKLOAD.but(together=WHICH_LENGTH)
    concurrency = Option(("--concurrency",), "sequences of --context tokens that must fit at once (default 1)",
                         default=1, type=positive, metavar="C")
    dtype = Option(("--dtype",), "the weights' and KV cache's dtype (default auto: the model's; a quantized model's "
                   "weights stay as published)", default="auto", choices=("auto", "bfloat16", "float16", "float32"))
    instance_type = Option(("--instance-type",), "size only this instance type (default: every size of the catalog)",
                           metavar="T")
    tensor_parallel = Option(("--tensor-parallel",), "GPUs (NeuronCores) per replica (default: the fewest that fit; "
                             "the rest of the instance's run more replicas)", type=positive, metavar="N")
    kv_cache_dtype = Option(("--kv-cache-dtype",), "vLLM's --kv-cache-dtype (fp8: one byte an element; default "
                            "auto: the rig's, else the model's dtype)", default="auto", choices=("auto", "fp8"))
    gpu_memory_utilization = Option(("--gpu-memory-utilization",), "vLLM's fraction of each GPU's memory (default: "
                                    "the rig's flag, else vLLM's default)", type=fraction, metavar="U")
    max_num_seqs = Option(("--max-num-seqs",), "vLLM's --max-num-seqs (default: the rig's, else vLLM's for the card)",
                          type=positive, metavar="S")
    max_num_batched_tokens = Option(("--max-num-batched-tokens",), "vLLM's --max-num-batched-tokens (default: the "
                                    "rig's, else vLLM's for the card)", type=positive, metavar="B")
    vllm = Option(("--vllm",), "size every GPU for this vLLM version (default: the one the size's rig pins)",
                  type=vllm_version, metavar="VERSION")
    json = JSON.but(help="print JSON: weights_bytes, kv_bytes_per_token, kv_bytes_per_sequence, instances (each: "
                         "instance_type, accelerators, tensor_parallel, data_parallel, fits, kv_tokens of one replica, "
                         "kv_tokens_source (measured on a deployed rig, or predicted) and measured (when), "
                         "max_sequences, weights and overhead bytes per accelerator, kv_bytes_per_token, why)")
