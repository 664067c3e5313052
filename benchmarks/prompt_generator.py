"""How fast and how faithful the synthetic prompt generator is (a benchmark, not a test).

Speed: in a fresh interpreter pinned to one core (where the machine has more than one), the time to make the
seed's text bank and then 10,000 prompts of the workload's lengths with the chat part's own code
(``agent.bench.tasks.traffic``: the plan's draws, the text, the calibration's units); CPU time and wall time.
The goal (docs/traffic.md, "Your traffic"): 10,000 prompts in at most 2 s on one core.

Fidelity: three stand-in servers count tokens in ways the generator knows nothing of (one token per 3.1
characters, 1.3 per word, one per vowel, each with a chat template's overhead); for each, the calibration
exchange the chat part runs (the first request, a short and a long prompt) fits the line, then 1,000 prompts are
made and counted: the counted mean against the asked mean, the counted spread against the asked spread. The
goal: within 2% and 10%. Real servers are measured by the run itself ("Your traffic" in REPORT.md).

Usage: ``python benchmarks/prompt_generator.py [--prompts 10000] [--mean 550 --stddev 150] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COUNTERS = {
    "3.1 characters a token": lambda text: 15 + math.ceil(len(text) / 3.1),
    "1.3 tokens a word": lambda text: 9 + round(1.3 * len(text.split())),
    "a token a vowel": lambda text: 5 + sum(text.count(v) for v in "aeiou"),
}


def _speed(prompts: int, mean: float, stddev: float, seed: int) -> dict[str, float]:
    """Run in the fresh, pinned interpreter: the bank, then the prompts."""
    from agent.bench.tasks.traffic.calibration import Calibration
    from agent.bench.tasks.traffic.plan import Prompts, Shape, TrafficPlan
    from agent.bench.tasks.traffic.text import TextMaker

    cpu, wall = time.process_time(), time.perf_counter()
    maker = TextMaker(seed)
    bank_cpu, bank_wall = time.process_time() - cpu, time.perf_counter() - wall
    plan = TrafficPlan(Shape(seed=seed, prompt_mean=mean, prompt_stddev=stddev, output_mean=150.0))
    made = Prompts(plan, maker, Calibration(slope=1.2, offset=10.0, calibrated=True))
    cpu, wall = time.process_time(), time.perf_counter()
    chars = sum(len(made.first(plan.request(i))[-1]["content"]) for i in range(prompts))
    return {"bank_cpu_s": bank_cpu, "bank_wall_s": bank_wall, "prompts_cpu_s": time.process_time() - cpu,
            "prompts_wall_s": time.perf_counter() - wall, "chars": chars}


def speed(prompts: int, mean: float, stddev: float, seed: int) -> dict[str, float]:
    """The speed figures from a fresh interpreter, pinned to core 0 where ``taskset`` and a second core exist."""
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.prompt_generator import _speed; "
            f"print(json.dumps(_speed({prompts}, {mean}, {stddev}, {seed})))")
    pin = ["taskset", "-c", "0"] if (os.cpu_count() or 1) > 1 and Path("/usr/bin/taskset").exists() else []
    out = subprocess.run([*pin, sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def fidelity(mean: float, stddev: float, seed: int, prompts: int = 1000) -> list[tuple[str, float, float]]:
    """Per stand-in counter: the counted mean's error and the counted spread over the asked, after calibrating."""
    from agent.bench.tasks.traffic.calibration import Calibration, exchange_units, fit
    from agent.bench.tasks.traffic.plan import Prompts, Shape, TrafficPlan
    from agent.bench.tasks.traffic.text import TextMaker, units_of

    maker = TextMaker.of(seed)
    plan = TrafficPlan(Shape(seed=seed, prompt_mean=mean, prompt_stddev=stddev, output_mean=150.0))
    out = []
    for name, count in COUNTERS.items():
        cold = Prompts(plan, maker, Calibration()).first(plan.request(0))[-1]["content"]
        short, long_units = exchange_units(units_of(cold), None)
        texts = [cold] + [maker.text(u, f"calibration:{role}") for role, u in (("short", short), ("long", long_units))]
        made = Prompts(plan, maker, fit([(units_of(t), count(t)) for t in texts]))
        asked = [plan.request(i).prompt_tokens or 0 for i in range(1, prompts + 1)]
        counted = [count(made.first(plan.request(i))[-1]["content"]) for i in range(1, prompts + 1)]
        spread = statistics.pstdev(counted) / statistics.pstdev(asked) if stddev else float("nan")
        out.append((name, statistics.fmean(counted) / statistics.fmean(asked) - 1.0, spread))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--mean", type=float, default=550.0, help="asked prompt tokens (AIPerf's default, 550)")
    parser.add_argument("--stddev", type=float, default=150.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    s = speed(args.prompts, args.mean, args.stddev, args.seed)
    print(f"speed (one core, fresh interpreter): text bank {s['bank_wall_s']:.2f} s wall ({s['bank_cpu_s']:.2f} s CPU); "
          f"{args.prompts:,} prompts of {args.mean:g} +- {args.stddev:g} tokens {s['prompts_wall_s']:.2f} s wall "
          f"({s['prompts_cpu_s']:.2f} s CPU), {s['chars'] / 1e6:.1f} M characters")
    for name, error, spread in fidelity(args.mean, args.stddev, args.seed):
        print(f"fidelity, a server counting {name}: counted mean {error:+.2%} of the asked, spread x{spread:.3f}")


if __name__ == "__main__":
    main()
