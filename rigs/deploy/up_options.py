"""The options of ``python -m rigs up`` (:class:`UpOptions`), and those of them ``rehearse`` shares (its rigs'
lifetime, the capacity grace, the doctor's checks that stop nothing), each declared once
(:class:`kit.options.Option`; the others several subcommands share are in :mod:`rigs.shared_options`).
"""

from __future__ import annotations

import argparse

from kit.options import Option
from rigs.account.doctor import SKIPPABLE
from rigs.context_keys import MAX_LIFETIME_HOURS
from rigs.deploy.cdk_cli import DEPLOY_METHODS
from rigs.deploy.options import lifetime_hours
from rigs.deploy.watch import CAPACITY_GRACE_MINUTES
from rigs.shared_options import (BOOTSTRAP, CONTEXT, EVIDENCE, MAX_USD, RIG_HELP, Global, minutes,
                                 minutes_or_zero)


def hours(value: str) -> float:
    """``--max-hours``: a lifetime the rigs' stacks take (:func:`rigs.deploy.options.lifetime_hours`), checked
    before anything runs."""
    try:
        return lifetime_hours(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc}") from None


MAX_HOURS = Option(("--max-hours",), f"lifetime limit of each rig, the backstop, above 0 and at most "
                   f"{MAX_LIFETIME_HOURS}, passed as -c max_hours=N (default: the catalog's)", type=hours,
                   metavar="HOURS")
CAPACITY_GRACE = Option(("--capacity-grace",), "minutes a group that fails to launch for capacity gets before the "
                        f"next region (default {CAPACITY_GRACE_MINUTES:g})", default=CAPACITY_GRACE_MINUTES,
                        type=minutes_or_zero, metavar="MIN")
SKIP_CHECK = Option(("--skip-check",), "the doctor's rows of this check stop no rig (as --bootstrap does for the "
                    "bootstrap): " + ", ".join(f"{name} ({check!r})" for name, check in sorted(SKIPPABLE.items())),
                    default=(), repeated=True, choices=tuple(sorted(SKIPPABLE)), metavar="CHECK")


class UpOptions(Global):
    """``python -m rigs up``."""

    rigs = Option((), f"rigs to deploy, in parallel; {RIG_HELP}", nargs="+", metavar="RIG")
    max_hours = MAX_HOURS
    max_usd = MAX_USD
    preflight = Option(("--preflight",), "run preflight for these rigs first (always done when nothing is recorded "
                       "for a rig)", default=False, switch=True)
    doctor = Option(("--doctor",), "run `doctor` for these rigs first: stop before any deploy when one cannot deploy "
                    "anywhere, and skip the regions it rules out", default=False, switch=True)
    no_wait = Option(("--no-wait",), "return once the instance runs; do not await SSM and the server's /health",
                     default=False, switch=True)
    ready_timeout = Option(("--ready-timeout",), "minutes to wait for /health (default: the catalog's)",
                           type=minutes, metavar="MIN")
    capacity_grace = CAPACITY_GRACE
    method = Option(("--method",), "cdk deploy --method (default: direct when AWS_ENDPOINT_URL is set, else the "
                    "CLI's)", choices=DEPLOY_METHODS)
    bootstrap = BOOTSTRAP
    skip_checks = SKIP_CHECK.but(help=f"with --doctor, {SKIP_CHECK.help}")
    context = CONTEXT
    evidence = EVIDENCE
