"""The options of each subcommand of ``python -m rigs`` (:mod:`rigs.cli`), one model each
(:class:`kit.options.Options`): its own options and the shared ones it puts beside them
(:mod:`rigs.shared_options`; ``up``'s in :mod:`rigs.deploy.up_options`, ``rehearse``'s in
:mod:`rigs.rehearsal.options`, ``pins refresh``'s in :mod:`rigs.catalog.pins`). Each option is declared once; the
parser and the typed options each command reads are made from these models.
"""

from __future__ import annotations

from kit.options import Option, Together
from rigs.estate.sweep import MAX_WAIT_MINUTES
from rigs.shared_options import (ALL_FOUR_REGIONS, ALL_RESOURCES, EACH_RIGS_REGIONS, JSON, MODEL, MODEL_CONFIG,
                                 RIG_HELP, RIGS_TO_CHECK, WORKLOAD, Global, context_checked, minutes_or_zero, positive)


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


WHICH_MODEL = Together(required=True)
"""``fit``: a model of the catalog, or a model's ``config.json``."""
WHICH_LENGTH = Together()
"""``fit``: the context as tokens, or as a workload's longest request."""


class FitOptions(Global):
    """``python -m rigs fit``."""

    model = MODEL.but(together=WHICH_MODEL)
    model_config = MODEL_CONFIG.but(together=WHICH_MODEL)
    context = Option(("--context",), "tokens of one sequence (default: the model's longest, max_position_embeddings)",
                     type=positive, metavar="N", together=WHICH_LENGTH)
    workload = WORKLOAD.but(together=WHICH_LENGTH)
    concurrency = Option(("--concurrency",), "sequences of --context tokens that must fit at once (default 1)",
                         default=1, type=positive, metavar="C")
    dtype = Option(("--dtype",), "the weights' and KV cache's dtype (default auto: the model's; a quantized model's "
                   "weights stay as published)", default="auto", choices=("auto", "bfloat16", "float16", "float32"))
    json = JSON.but(help="print JSON: weights_bytes, kv_bytes_per_token, kv_bytes_per_sequence, instances")
