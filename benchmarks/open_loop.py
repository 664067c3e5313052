"""How faithfully the open loop keeps its schedule (a benchmark, not a test).

It sends what ``python -m agent.run --rate R`` sends, through the part's own sender
(``agent.bench.parts.open_loop.run_window`` with the harness's timing client), to the instant
OpenAI-compatible server of ``benchmarks/harness_overhead.py`` (100 SSE chunks plus a usage chunk per reply),
which runs in its own process pinned to one core where the machine has two, the sender pinned to the other.
From every request's record it reports the lag (actual send minus scheduled send: p50, p99, max), the
realized rate ((n - 1) / (last send - first send)) and the inter-arrival CV of the actual sends, against the
schedule's own.

The project's goals (issue 22, docs/open-loop.md "The open loop"), on one core: at 200 requests/s Poisson for
30 s, p99 lag <= 2 ms, realized rate within 2% and inter-arrival CV within 10% of the asked.

Usage: ``python benchmarks/open_loop.py [--rate 200] [--duration 30] [--arrival poisson] [--repeats 1]
[--json FILE]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def _window(port: int, rate: float, duration: float, arrival: str, seed: int) -> dict[str, Any]:
    from agent.backends import Backend
    from agent.bench.analysis.stats import percentile
    from agent.bench.clients.pool import ClientPool
    from agent.bench.clients.reply import ChatRequest
    from agent.bench.parts.open_loop import MAX_IN_FLIGHT, Window, run_window
    from agent.bench.tasks.arrivals import arrival_offsets, gaps_cv, realized_rate

    backend = Backend(name="bench", label="instant server", kind="openai", model_id="bench", tool_calls=False,
                      base_url=f"http://127.0.0.1:{port}/v1")
    request = ChatRequest.user("hi", 100)
    offsets = arrival_offsets(rate, duration, arrival, seed=seed)
    log = {"mode": "rate", "rate_req_per_s": rate, "planned": len(offsets), "duration_s": duration,
           "max_in_flight": MAX_IN_FLIGHT}
    records: list[dict[str, Any]] = []
    async with ClientPool([backend], width=MAX_IN_FLIGHT) as pool:
        client = pool.client(backend)
        for _ in range(8):  # open connections outside the window
            await client.send(request)
        await run_window(backend=backend, client=client, window=Window(offsets, lambda i: (request, {}), log), epoch=0.0,
                         emit=records.append, progress=lambda *_, **__: None)
    bad = [r["error"] for r in records if r["error"]]
    if bad:
        raise RuntimeError(f"{len(bad)} failed requests, e.g. {bad[0]}")
    lags = [(r["sent_s"] - r["scheduled_s"]) * 1000.0 for r in records]
    sends = sorted(r["sent_s"] for r in records)
    return {"requests": len(records), "lag_p50_ms": percentile(lags, 50), "lag_p99_ms": percentile(lags, 99),
            "lag_max_ms": max(lags), "realized_rate": realized_rate(sends), "asked_rate": rate,
            "schedule_rate": realized_rate(offsets), "cv": gaps_cv(sends), "schedule_cv": gaps_cv(offsets),
            "most_in_flight": max(r["concurrency"] for r in records)}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.harness_overhead import pinned_instant_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second (default 200)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of the window (default 30)")
    parser.add_argument("--arrival", default="poisson", choices=("constant", "poisson", "gamma"))
    parser.add_argument("--repeats", type=int, default=1, help="windows, each with its own seed (default 1)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    with pinned_instant_server() as (port, server_core, client_core):
        runs = [asyncio.run(_window(port, args.rate, args.duration, args.arrival, seed)) for seed in range(args.repeats)]

    print(f"machine: {os.cpu_count()} CPUs, server on core {server_core}, sender on core {client_core}; python "
          f"{sys.version.split()[0]}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.arrival} at "
          f"{args.rate:g} req/s for {args.duration:g} s, {args.repeats} window(s)")
    header = ("requests", "lag p50 ms", "lag p99 ms", "lag max ms", "req/s", "CV", "schedule CV", "in flight")
    print("  ".join(f"{h:>11}" for h in header))
    for r in runs:
        print("  ".join(f"{v:>11}" for v in (r["requests"], f"{r['lag_p50_ms']:.3f}", f"{r['lag_p99_ms']:.3f}",
                                              f"{r['lag_max_ms']:.2f}", f"{r['realized_rate']:.2f}", f"{r['cv']:.3f}",
                                              f"{r['schedule_cv']:.3f}", r["most_in_flight"])))
    worst_lag = max(r["lag_p99_ms"] for r in runs)
    worst_rate = max(abs(r["realized_rate"] / args.rate - 1) for r in runs)
    asked_cv = {"constant": 0.0, "poisson": 1.0}.get(args.arrival)
    goals = [("p99 lag <= 2 ms", worst_lag <= 2.0, f"{worst_lag:.3f} ms"),
             ("realized rate within 2% of the asked", worst_rate <= 0.02, f"{worst_rate:.2%} off")]
    if asked_cv:
        worst_cv = max(abs(r["cv"] / asked_cv - 1) for r in runs)
        goals.append(("inter-arrival CV within 10% of the asked", worst_cv <= 0.10, f"{worst_cv:.2%} off"))
    for name, ok, value in goals:
        print(f"  {'PASS' if ok else 'MISS'}  {name}: {value}")
    print(f"median p99 lag over the windows: {statistics.median(r['lag_p99_ms'] for r in runs):.3f} ms")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
