"""How many paired items the quality lane needs: the power of the exact McNemar test (a benchmark
of the design, computed exactly, not simulated).

Two backends answer the same n items. A share ``--flip`` of the items changes between right and
wrong from one to the other; of those, enough go right -> wrong that the second backend is ``--drop``
points worse (right -> wrong = (flip + drop) / 2, wrong -> right = (flip - drop) / 2). The counts of
the two kinds of change follow a multinomial over n; the test is called significant when the
project's exact McNemar p-value (:func:`agent.bench.analysis.stats.mcnemar_exact`) is under 0.05.
The computation is :func:`agent.bench.analysis.stats.mcnemar_power`, the one the report states the
lane's power with. Printed per n: the chance the drop is detected (power), and with no drop (the
same flip share, half each way) the chance of a false alarm.

Usage: ``python benchmarks/quality_power.py [--flip 0.06] [--drop 0.03] [--n 300,600,1000]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.bench.analysis.stats import mcnemar_power  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flip", type=float, default=0.06, help="share of items that change (default: 0.06)")
    parser.add_argument("--drop", type=float, default=0.03, help="accuracy drop to detect (default: 0.03)")
    parser.add_argument("--n", default="300,600,1000", help="numbers of paired items")
    args = parser.parse_args()
    for n in (int(x) for x in args.n.split(",")):
        power = mcnemar_power(n, (args.flip + args.drop) / 2, (args.flip - args.drop) / 2)
        alarm = mcnemar_power(n, args.flip / 2, args.flip / 2)
        print(f"n={n}: {args.drop:.0%} drop with {args.flip:.0%} of items changing detected {power:.1%}; "
              f"false alarm with no drop {alarm:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
