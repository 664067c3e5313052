"""How long the quality lane takes on the local rig, how long grading a finished run takes, and
whether the prompt-size estimate holds (a benchmark, not a test). Every figure it prints from the
local rig is the toy model's (SmolLM2-135M-Instruct on llama.cpp, on this machine's CPU).

1. **Prompt sizes.** A local rig is started (``agent.local_rig``); every item of ``--n`` items at
   each of ``--check-seeds`` is laid out with the model's own chat template (the server's
   ``/apply-template``) and counted with its tokenizer (``/tokenize``). Reported: the largest
   whole prompt, how many items are over the lane's 128-token limit, and how many the lane's
   estimate (:func:`agent.bench.tasks.quality.items.estimate_tokens`, with its template allowance)
   counts low.
2. **The lane.** ``python -m agent.run --backends local --demos quality --quality-n N`` runs as a
   user runs it (it starts its own local rig); reported: the command's wall time, the lane's own
   time (first request sent to last reply), requests per second, mean prompt and output tokens,
   the CPU time the command used with its local rig (its children's, from ``getrusage``: what the
   run costs whatever else shares the machine), and the machine's load average before and after
   (the machine is shared).
3. **Grading.** ``python -m agent.quality grade DIR`` on that run's folder: its wall time (Python's
   start included) and the in-process time to grade every record.

Usage: ``python benchmarks/quality_lane.py [--n 600] [--seed 0] [--check-seeds 0,1,2] [--json FILE] [--out DIR]``
(``--out``: keep the run's evidence folder there, REPORT.md included; by default it is removed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_LANE_S = 300.0
GOAL_GRADE_S = 10.0


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def prompt_sizes(n: int, seeds: list[int]) -> dict[str, Any]:
    """Every item's whole prompt counted with SmolLM2's template and tokenizer, against the estimate."""
    from agent.bench.tasks.quality.items import PROMPT_TOKEN_LIMIT
    from agent.bench.tasks.quality.lane import select
    from agent.local_rig import local_rig

    counted = []
    with local_rig() as base_url:
        base = base_url.removesuffix("/v1")
        for seed in seeds:
            for item in select(n, seed):
                prompt = _post(base, "/apply-template", {"messages": [dict(m) for m in item.messages]})["prompt"]
                tokens = len(_post(base, "/tokenize", {"content": prompt, "parse_special": True})["tokens"])
                counted.append((tokens, item.prompt_tokens_estimate, item.suite))
    return {
        "items": len(counted), "seeds": seeds, "largest_prompt_tokens": max(c[0] for c in counted),
        "mean_prompt_tokens": round(statistics.mean(c[0] for c in counted), 1),
        "over_limit": sum(c[0] > PROMPT_TOKEN_LIMIT for c in counted),
        "estimate_low": sum(c[0] > c[1] for c in counted),
        "smallest_margin_tokens": min(c[1] - c[0] for c in counted),
        "largest_by_suite": {s: max(c[0] for c in counted if c[2] == s) for s in sorted({c[2] for c in counted})},
    }  # fmt: skip


def lane_run(n: int, seed: int, out: Path) -> dict[str, Any]:
    """The lane through the command, on the local rig it starts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}  # no AWS: the local rig
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agent.run", "--backends", "local", "--demos", "quality",
                           "--quality-n", str(n), "--quality-seed", str(seed), "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)  # fmt: skip
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    records = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    sent = [datetime.fromisoformat(r["started"].replace("Z", "+00:00")).timestamp() for r in records]
    ends = [s + r["seconds"] for s, r in zip(sent, records)]
    lane_s = max(ends) - min(sent)
    return {
        "exit_code": done.returncode, "command_wall_s": round(wall, 1), "lane_s": round(lane_s, 1),
        "command_cpu_s": round(cpu_s, 1),
        "records": len(records), "errors": sum(1 for r in records if r["error"]),
        "requests_per_s": round(len(records) / lane_s, 2),
        "mean_prompt_tokens": round(statistics.mean(r["prompt_tokens"] or 0 for r in records), 1),
        "mean_output_tokens": round(statistics.mean(r["output_tokens"] or 0 for r in records), 1),
        "cut_at_cap": sum(1 for r in records if r["finish_reason"] == "length"),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "stderr_tail": done.stderr[-600:] if done.returncode else "",
    }  # fmt: skip


def grading(out: Path) -> dict[str, Any]:
    """The grade command's wall time, and the in-process time to grade every record."""
    from agent.bench.analysis.blocks.quality import grades
    from agent.bench.command import evidence

    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agent.quality", "grade", str(out), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    command_s = time.perf_counter() - started
    records = evidence.read_requests(out / evidence.REQUESTS)
    started = time.perf_counter()
    table = {name: block.model_dump(mode="json") for name, block in grades(records).items()}
    in_process_s = time.perf_counter() - started
    return {"command_wall_s": round(command_s, 2), "in_process_s": round(in_process_s, 3),
            "exit_code": done.returncode, "toy_model_grades": table}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check-seeds", default="0,1,2", help="seeds whose items are counted (empty: skip)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--out", type=Path, help="keep the run's evidence folder here (a new folder)")
    args = parser.parse_args()
    result: dict[str, Any] = {"n": args.n, "seed": args.seed, "cpus": os.cpu_count()}
    seeds = [int(s) for s in args.check_seeds.split(",") if s.strip()]
    if seeds:
        result["prompt_sizes_smollm2"] = prompt_sizes(args.n, seeds)
        print(json.dumps(result["prompt_sizes_smollm2"]), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "evidence"
        result["lane_toy_model"] = lane_run(args.n, args.seed, out)
        print(json.dumps(result["lane_toy_model"]), flush=True)
        result["grading"] = grading(out)
    local = result["grading"]["toy_model_grades"].get("local", {})
    print(json.dumps({k: v for k, v in result["grading"].items() if k != "toy_model_grades"}))
    print(f"toy model (SmolLM2-135M) accuracy: {local.get('right')}/{local.get('graded')} = {local.get('accuracy')}")
    lane_s, grade_s = result["lane_toy_model"]["lane_s"], result["grading"]["command_wall_s"]
    print(f"lane on the local rig (toy model): {lane_s:.0f} s (goal < {GOAL_LANE_S:.0f} s); "
          f"grading {result['lane_toy_model']['records']} records: {grade_s:.2f} s (goal < {GOAL_GRADE_S:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if lane_s < GOAL_LANE_S and grade_s < GOAL_GRADE_S else 1


if __name__ == "__main__":
    sys.exit(main())
