"""How long the decision part takes: the chat part with ``--concurrency auto`` and its repeats
(a benchmark, not a test).

It runs exactly what ``python -m agent.run --demos chat --concurrency auto --slo ... --repeats 3``
runs on one backend, through ``agent.bench.command.runner.run``, and reports the wall time of the whole
part (cold request, timed requests, every level of the search with its repeats) together with
each level's requests, seconds and verdict, and the load average of the machine before and after.

Backends:

* ``--rig local`` (default): the local rig (SmolLM2-135M on llama.cpp, CPU), started here as
  ``python -m agent.run --local`` starts it.
* ``--rig paced``: the paced test server (``tests/agent/bench/fakes/paced.py``: fixed TTFT, fixed time
  per token, a fixed number of slots), for the arithmetic of the search on a backend of known
  speed when the local rig is not installed.

Goal (issue 10): the whole decision part on the local rig with ``--repeats 3`` within 3 minutes
on the 2-core development machine.

Usage: ``python benchmarks/slo_search.py [--rig local|paced] [--slo KEY=MS,...] [--repeats 3]
[--runs 5] [--max-tokens 100] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DONE_WHEN_TARGET = "ttft_p99_ms=2000,itl_p99_ms=200"


def _backend(stack: ExitStack, rig: str, slots: int, out: Path) -> Any:
    if rig == "local":
        from agent.local_rig import local_rig_process

        return stack.enter_context(local_rig_process(log_dir=out / "logs")).backend()
    from agent.backends import Backend
    from tests.agent.bench.fakes.openai_fake import FakeOpenAI
    from tests.agent.bench.fakes.paced import Pace

    # About the local rig's pace at one request in flight (TTFT ~20 ms, ~80 tok/s), with its 4 slots.
    server = stack.enter_context(FakeOpenAI(Pace(slots=slots, ttft_s=0.02, tpot_s=0.0125, tokens=100)))
    return Backend(name="paced", label="paced test server", kind="openai", model_id="paced", tool_calls=False,
                   base_url=server.base_url)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rig", choices=("local", "paced"), default="local")
    ap.add_argument("--slo", default=DONE_WHEN_TARGET)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=100)
    ap.add_argument("--slots", type=int, default=4, help="paced server only")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from agent import run
    from agent.bench.command import evidence, runner

    options = run.build_parser(runner).parse_args([
        "--demos", "chat", "--concurrency", "auto", "--slo", args.slo, "--repeats", str(args.repeats),
        "--runs", str(args.runs), "--max-tokens", str(args.max_tokens)])
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        out = Path(tmp) / "out"
        backend = _backend(stack, args.rig, args.slots, Path(tmp))
        started = time.perf_counter()
        code = runner.run([backend], options, out, None)
        seconds = time.perf_counter() - started
        s = json.loads((out / evidence.SUMMARY).read_text())
    load_after = os.getloadavg()
    slo = s["backends"][backend.name]["slo"]
    result = {
        "rig": args.rig, "target": slo["target"], "repeats": args.repeats, "runs": args.runs,
        "max_tokens": args.max_tokens, "exit_code": code, "seconds": round(seconds, 1),
        "search_seconds": slo["search"]["seconds"], "capacity": slo["capacity_concurrency"],
        "reason": slo["capacity_reason"], "order": slo["search"]["order"], "stopped": slo["search"]["stopped"],
        "requests": sum(lv["requests"] for lv in slo["levels"]) + 1,
        "levels": [{"concurrency": lv["concurrency"], "repeats": lv["repeats"], "requests": lv["requests"],
                    "seconds": round(sum(p["wall_s"] for p in lv["per_repeat"]), 1), "verdict": lv["verdict"],
                    "met_share": lv["met_share"], "ttft_p99_ms": lv["ttft_p99_ms"], "itl_p99_ms": lv["itl_p99_ms"],
                    "goodput_output_tok_per_s": lv["goodput_output_tok_per_s"]} for lv in slo["levels"]],
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }  # fmt: skip
    print(f"{args.rig}: {result['seconds']} s for the decision part ({result['requests']} requests, "
          f"{len(result['levels'])} levels {result['order']}), SLO capacity {result['capacity']} "
          f"({result['stopped']}); load average {result['loadavg_before'][0]} -> {result['loadavg_after'][0]} "
          f"on {result['cpus']} CPUs")
    print(f"{'c':>3} {'rep':>3} {'req':>4} {'s':>6} {'verdict':>9} {'met':>6} {'TTFT p99':>9} {'ITL p99':>8} "
          f"{'goodput tok/s':>13}")
    for lv in result["levels"]:
        print(f"{lv['concurrency']:>3} {lv['repeats']:>3} {lv['requests']:>4} {lv['seconds']:>6} {lv['verdict']:>9} "
              f"{lv['met_share']:>6} {lv['ttft_p99_ms']:>9} {lv['itl_p99_ms']:>8} {lv['goodput_output_tok_per_s']:>13}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
