"""The options several subcommands of ``python -m rigs`` share, each declared once (:class:`kit.options.Option`),
the options of ``python -m rigs`` itself (:class:`Global`) and the argument types they parse with.

Each subcommand's options are a model (:class:`kit.options.Options`) that puts its own options beside these: the
models are in :mod:`rigs.cli_options`, :mod:`rigs.rehearsal.options` (``rehearse``) and :mod:`rigs.catalog.pins`
(``pins refresh``); the options ``up`` and ``rehearse`` share are in :mod:`rigs.deploy.up_options`. A variant of a
shared option (``.but(help=...)``: another command's sentence for it, or another default) keeps its flag, its type
and its name. Nothing here imports more of the project than :mod:`rigs.contract`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from kit.options import Option, Options
from rigs.contract import REGIONS


def regions(value: str) -> list[str]:
    """``--regions``: some of the four regions, comma- or space-separated."""
    found = [r.strip() for r in value.replace(",", " ").split() if r.strip()]
    unknown = [r for r in found if r not in REGIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown)}: not one of the four regions {', '.join(REGIONS)}")
    return found


def usd(value: str) -> float:
    """An amount above 0 in USD."""
    try:
        amount = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount in USD, e.g. 20") from None
    if not amount > 0 or amount == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: give an amount above 0 in USD, e.g. 20")
    return amount


def minutes(value: str, zero: bool = False) -> float:
    """A finite number of minutes above 0 (``zero``: or 0)."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (0 <= number if zero else 0 < number) or math.isinf(number):
        raise argparse.ArgumentTypeError(f"{value!r}: give a number of minutes {'from' if zero else 'above'} 0")
    return number


def minutes_or_zero(value: str) -> float:
    return minutes(value, zero=True)


def type_at_region(value: str) -> str:
    """``TYPE@REGION``: an instance type in one of the four regions (``--inject-capacity``)."""
    instance_type, sep, region = value.partition("@")
    if not sep or not instance_type or region not in REGIONS:
        raise argparse.ArgumentTypeError(f"{value!r}: give TYPE@REGION, e.g. g6.xlarge@us-east-2, in one of "
                                         f"{', '.join(REGIONS)}")
    return value


def fraction(value: str) -> float:
    """A number above 0 and at most 1."""
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a fraction above 0 and at most 1, e.g. 0.9")
    return number


def positive(value: str) -> int:
    """A whole number above 0."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a whole number above 0")
    return number


RIG_HELP = ("a rig of rigs/catalog.yaml: g6, g5g, inf2, trn1 (EC2) or sagemaker (an endpoint); bedrock and "
            "bedrock-mantle have nothing to deploy")


class Global(Options):
    """The options of ``python -m rigs`` itself, given before the subcommand; every subcommand's model has them."""

    profile = Option(("--profile",), "AWS profile (default: the standard SDK configuration)")
    region = Option(("--region",), "region for global calls (default: the SDK's)")


RIGS_TO_CHECK = Option((), f"rigs to check (default: every deployable rig); {RIG_HELP}", nargs="*", metavar="RIG")
EACH_RIGS_REGIONS = Option(("--regions",), "only these regions (default: each rig's catalog regions)", type=regions,
                           metavar="R,R")
ALL_FOUR_REGIONS = EACH_RIGS_REGIONS.but(default=list(REGIONS), help="only these regions (default: all four)")
JSON = Option(("--json",), "print JSON instead of the table", default=False, switch=True)
ALL_RESOURCES = Option(("--all-resources",), "list every resource (default: stacks, what bills, and what no stack "
                       "manages)", default=False, switch=True)
CONTEXT = Option(("-c", "--context"), "extra CDK context, passed on (the per-deploy options of docs/rigs.md, e.g. -c "
                 "inf2_variant=tp2; checked before anything runs); with -c model.<rig>=ID (or -c model=ID) the doctor, "
                 "preflight and --max-usd check and price the size the model is served on", default=(),
                 repeated=True, metavar="KEY=VALUE")


def context_checked(what: str) -> Option:
    """``-c`` in a subcommand that checks or prices the rigs as ``up`` would deploy them (``what``: what it checks)."""
    return CONTEXT.but(help=f"the per-deploy options of `up` (docs/rigs.md), checked before anything runs: with -c "
                            f"model.<rig>=ID (or -c model=ID) {what} the size the model is served on")


INJECT_CAPACITY = Option(("--inject-capacity",), "--offline only: no capacity for that instance type in that region "
                         "(shows a failover)", default=(), repeated=True, type=type_at_region, metavar="TYPE@REGION")
MAX_USD = Option(("--max-usd",), "refuse to start (exit 2, nothing deployed), before any other check, when the rigs "
                 "could cost more than this: each rig's hourly price x its lifetime limit", type=usd, metavar="USD")
BOOTSTRAP = Option(("--bootstrap",), "run `cdk bootstrap` in the candidate regions that lack it", default=False,
                   switch=True)
EVIDENCE = Option(("--evidence",), "evidence directory (default: .rigs/runs/<time>-up)", type=Path, metavar="DIR")
MODEL = Option(("--model",), "a model of the catalog's models section, e.g. Qwen/Qwen3-8B", metavar="ID")
MODEL_CONFIG = Option(("--model-config",), "a model's config.json (read, never fetched)", type=Path, metavar="FILE")
WORKLOAD = Option(("--workload",), "your traffic (the benchmark's --workload): the context is its longest request, "
                  "prompt and output, as the benchmark counts it", metavar="SPEC|FILE")
