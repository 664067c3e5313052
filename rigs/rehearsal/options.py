"""The options of ``python -m rigs rehearse`` (:class:`Options`), each declared once: its own, and those it shares
with ``up`` (:mod:`rigs.deploy.up_options`) and the other subcommands (:mod:`rigs.shared_options`). The model is
what the steps of a rehearsal read (:attr:`rigs.rehearsal.state.State.options`)."""

from __future__ import annotations

from kit.argtypes import bytes_per_s
from kit.options import Option
from rigs.deploy.up_options import CAPACITY_GRACE, MAX_HOURS, SKIP_CHECK
from rigs.deploy.watch import CAPACITY_GRACE_MINUTES
from rigs.rehearsal.estimate import BENCHMARK_ALLOWANCE_MINUTES, DESTROY_ALLOWANCE_MINUTES
from rigs.shared_options import (BOOTSTRAP, EVIDENCE, INJECT_CAPACITY, MAX_USD, MODEL, MODEL_CONFIG, RIG_HELP,
                                 WORKLOAD, Global, minutes_or_zero)

OFFLINE_CAPACITY_GRACE_MINUTES = 0.0
"""Offline, a failed launch is the injected one (``--inject-capacity``): the next region at once."""



class Options(Global):
    """``python -m rigs rehearse``."""

    rigs = Option((), "rigs to rehearse (default: every one, Bedrock included); "
                  + RIG_HELP.replace("have nothing to deploy", "are only benchmarked"), default=(), nargs="*",
                  metavar="RIG")
    yes = Option(("--yes",), "go on without asking after the plan and its estimate", default=False, switch=True)
    offline = Option(("--offline",), "rehearse the flow against moto's server on loopback, with the local rig "
                     "playing every rig's server: no AWS account, nothing billed", default=False, switch=True)
    tunnel_limit = Option(("--tunnel-limit",), "with --offline: shape each relay standing in for an SSM port "
                          "forward like one SSM session, at most BYTES_PER_S each way and 1 ms after each read/send "
                          "cycle (the public figures: about 600000), to rehearse levels bound by the tunnel (passed "
                          "to the benchmark as its --tunnel-limit)", type=bytes_per_s, metavar="BYTES_PER_S")
    """None: the relays are not shaped."""
    big = Option(("--big",), "then move the rigs with a 'big' catalog variant to that bigger model and benchmark "
                 "again", default=False, switch=True)
    bootstrap = BOOTSTRAP
    skip_checks = SKIP_CHECK
    model = MODEL.but(help="rehearse this model (a Hugging Face id of the catalog's models section, e.g. "
                           "Qwen/Qwen3-8B) on every rig that can serve it, each on the size it fits (-c "
                           "model.<rig>=ID); the others are left out with why, in the plan")
    """None: each rig's catalog model."""
    model_config = MODEL_CONFIG.but(help="with --model, the config.json of a model the catalog does not list (read "
                                         "here, never fetched; -c model_config.<rig>=FILE)")
    hf_token_parameter = Option(("--hf-token-parameter",), "with --model, the SSM SecureString parameter holding a "
                                "Hugging Face token, for a gated model (-c hf_token_parameter=NAME; the EC2 rigs read "
                                "it at boot)", metavar="NAME")
    workload = WORKLOAD.but(help="your traffic, passed to the benchmark as its --workload (checked by it before "
                                 "anything is created); the vLLM rigs are served and sized at its context, its "
                                 "longest request (-c max_model_len.<rig>=N)")
    bench_options = Option(("--bench-options",), "options passed to python -m agent.run, e.g. "
                           "--bench-options='--runs 1 --demos chat' (default: its own defaults)", default="",
                           metavar="'OPTIONS'")
    evidence = EVIDENCE.but(help="evidence folder (default: results/rehearsal-<UTC time>)")
    max_hours = MAX_HOURS
    max_usd = MAX_USD
    capacity_grace = CAPACITY_GRACE.but(default=None, help="minutes a group that cannot launch for capacity gets "
                                        f"before the next region (default {CAPACITY_GRACE_MINUTES:g}; offline "
                                        f"{OFFLINE_CAPACITY_GRACE_MINUTES:g})")
    """None: the default of the rehearsal (online or offline)."""
    inject_capacity = INJECT_CAPACITY
    bench_minutes = Option(("--bench-minutes",), "the benchmark's time allowance in the estimate (default "
                           f"{BENCHMARK_ALLOWANCE_MINUTES:g})", default=BENCHMARK_ALLOWANCE_MINUTES,
                           type=minutes_or_zero, metavar="MIN")
    destroy_minutes = Option(("--destroy-minutes",), "the destroy's time allowance in the estimate (default "
                             f"{DESTROY_ALLOWANCE_MINUTES:g})", default=DESTROY_ALLOWANCE_MINUTES,
                             type=minutes_or_zero, metavar="MIN")
