"""The sizing's KV-token prediction against vLLM's own start-up logs: one row per published log, and its error.

Run: .venv/bin/python benchmarks/fit_vs_logs.py [--table FILE]
Reads tests/rigs/sizing/vllm_startup_logs.yaml (what each row holds, and how rows were chosen, is in its header),
builds each row's architecture from its config.json fields (rigs/sizing/config.py) and predicts the row's "GPU KV
cache size" and weights with rigs/sizing/fit.py (:func:`predict`, the one place that calls the fit). It prints each
row's logged and predicted tokens and weights and their errors, then the median and worst |error| over the rows
of vLLM 0.10 or later (the engines the rigs pin) and over all rows. A malformed table exits 2, naming every bad
row; a row whose config the fit cannot read is listed as not sized.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from rigs.catalog.served import Architecture  # noqa: E402  (the project root is put on the path above)
from rigs.sizing import fit  # noqa: E402
from rigs.sizing.config import ConfigError, architecture  # noqa: E402
from rigs.sizing.engine import Settings  # noqa: E402

TABLE = PROJECT_DIR / "tests" / "rigs" / "sizing" / "vllm_startup_logs.yaml"
GIB = 1024 ** 3
RIGS_ENGINES = (0, 10)
"""Rows of this vLLM version or later are the ones the sizing must match (the versions the rigs pin)."""
NOMINAL_GIB = {"L4": 22888 / 1024, "T4G": 16.0, "T4": 16.0, "A10G": 24.0, "A10": 24.0, "L40S": 45776 / 1024,
               "A100 40GB": 40.0, "A100 80GB": 80.0, "H100 80GB": 80.0, "H200": 141.0}
"""Each card's memory as the fit is given it where a row does not say what CUDA showed: EC2's ``MemoryInfo`` for
the cards of the catalog's families (L4, L40S, T4G), the card's size as sold for the others."""
REQUIRED = {"id": str, "source": str, "gpu": str, "tensor_parallel": int, "vllm": str, "model": str, "config": dict,
            "config_source": str, "settings": dict, "logged": dict}
SETTINGS = ("max_model_len", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "kv_cache_dtype",
            "enforce_eager", "dtype", "quantization")
LOGGED = ("weights_gib", "available_kv_gib", "kv_tokens")


class TableError(ValueError):
    """Rows of the table that cannot be used: one line each."""


@dataclass(frozen=True)
class Row:
    """One published start-up and the architecture its config gives (None where sizing cannot read the config:
    ``why`` says why, a gap of the sizing, not of the table)."""

    data: Mapping[str, Any]
    arch: Architecture | None
    why: str | None = None

    @property
    def version(self) -> tuple[int, ...]:
        return version(self.data["vllm"])


def version(text: str) -> tuple[int, ...]:
    """``"0.19.0"`` as ``(0, 19, 0)``."""
    return tuple(int(part) for part in text.split("."))


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _row_problems(row: Any) -> list[str]:
    """What is wrong with one row (nothing when it can be used)."""
    if not isinstance(row, dict):
        return ["not a mapping"]
    found = [f"{key} missing or not {kind.__name__}" for key, kind in REQUIRED.items()
             if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool)]
    if found:
        return found
    settings, logged = row["settings"], row["logged"]
    found += [f"settings.{key} missing" for key in SETTINGS if key not in settings]
    found += [f"logged.{key} missing" for key in LOGGED if key not in logged]
    numbers = {"tensor_parallel": row["tensor_parallel"], "settings.max_model_len": settings.get("max_model_len"),
               "settings.gpu_memory_utilization": settings.get("gpu_memory_utilization"),
               "logged.kv_tokens": logged.get("kv_tokens")}
    numbers.update({f"settings.{k}": settings[k] for k in ("max_num_seqs", "max_num_batched_tokens")
                    if settings.get(k) is not None})
    numbers.update({f"logged.{k}": logged[k] for k in ("weights_gib", "available_kv_gib") if logged.get(k) is not None})
    if "cuda_total_gib" in row:
        numbers["cuda_total_gib"] = row["cuda_total_gib"]
    found += [f"{key} is {value!r}, not a positive number" for key, value in numbers.items() if not _positive(value)]
    if not row.get("source", "").strip():
        found.append("source is empty")
    if row["gpu"] not in NOMINAL_GIB and "cuda_total_gib" not in row:
        found.append(f"gpu {row['gpu']!r} has no nominal memory here; give cuda_total_gib as the log states it")
    try:
        version(row["vllm"])
    except ValueError:
        found.append(f"vllm {row['vllm']!r} is not a version like 0.19.0")
    return found


def read_rows(path: Path = TABLE) -> Any:
    """The table as YAML gives it (libyaml's loader where PyYAML has it: eight times faster on this table)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load(path: Path = TABLE) -> list[Row]:
    """The table's rows, each with its architecture; :class:`TableError` names every row that is malformed."""
    rows = read_rows(path)
    if not isinstance(rows, list):
        raise TableError(f"{path}: not a YAML list of rows")
    problems: list[str] = []
    out: list[Row] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        name = row.get("id") if isinstance(row, dict) and isinstance(row.get("id"), str) else f"row {index + 1}"
        found = _row_problems(row)
        if name in seen:
            found.append("id used twice")
        seen.add(name)
        if not found:
            try:
                out.append(Row(row, architecture(row["config"], f"{name}'s config")))
            except ConfigError as exc:
                out.append(Row(row, None, str(exc)))
        problems += [f"{name}: {problem}" for problem in found]
    if problems:
        raise TableError(f"{path}: {len(problems)} problem(s); fix these rows:\n  " + "\n  ".join(problems))
    return out


def predict(row: Row) -> fit.InstanceFit:
    """The fit's prediction for ``row`` (the one place that calls the fit): its card (the memory CUDA showed where
    the log states it), vLLM version, tensor parallelism and flags, at its ``max_model_len``; ``kv_tokens`` and
    ``weights_bytes_per_accelerator`` are what vLLM logs as "GPU KV cache size" and "Model loading took"."""
    assert row.arch is not None
    settings = row.data["settings"]
    degree = row.data["tensor_parallel"]
    visible = row.data.get("cuda_total_gib")
    candidate = fit.Candidate(row.data["id"], degree, round(NOMINAL_GIB.get(row.data["gpu"], 0) * GIB),
                              row.data["gpu"], engine=row.version[:2],
                              visible_memory_bytes=round(visible * GIB) if visible else None)
    flags = Settings(settings["gpu_memory_utilization"], settings["max_num_seqs"], settings["max_num_batched_tokens"],
                     settings["kv_cache_dtype"] or "auto", bool(settings["enforce_eager"]))
    ask = fit.Ask(context=settings["max_model_len"], dtype=None if settings["dtype"] == "auto" else settings["dtype"],
                  settings=flags, tensor_parallel=degree, quantization=settings["quantization"])
    return fit.fit_one(row.arch, candidate, ask)


def error_percent(predicted: float, logged: float) -> float:
    """(predicted - logged) / logged, in percent: positive where the fit promises more than vLLM gave."""
    return 100.0 * (predicted - logged) / logged


def summary(label: str, errors: list[float]) -> str:
    if not errors:
        return f"{label}: no rows"
    absolute = [abs(e) for e in errors]
    within = sum(a <= 5 for a in absolute)
    return (f"{label}: {len(errors)} rows, median |error| {statistics.median(absolute):.1f}%, worst "
            f"{max(absolute):.1f}%, within 5%: {within}, predicted above the log: {sum(e > 0 for e in errors)}")


def report(rows: list[Row]) -> list[str]:
    """The table this prints: one line per row (KV tokens, and the weights per GPU beside them), then the
    summaries."""
    header = (f"{'id':44s} {'gpu':10s} {'vllm':8s} {'tp':>2s} {'KV logged':>10s} {'predicted':>10s} {'error':>8s} "
              f"{'weights':>8s} {'error':>8s}")
    lines = [header, "-" * len(header)]
    recent: list[float] = []
    every: list[float] = []
    weights: list[float] = []
    unsized: list[str] = []
    for row in rows:
        data = row.data
        logged = data["logged"]["kv_tokens"]
        lead = f"{data['id']:44s} {data['gpu']:10s} {data['vllm']:8s} {data['tensor_parallel']:>2d} {logged:>10,d}"
        if row.arch is None:
            unsized.append(f"  {data['id']}: {row.why}")
            lines.append(f"{lead} {'-':>10s} {'unsized':>8s}")
            continue
        predicted = predict(row)
        error = error_percent(predicted.kv_tokens, logged)
        every.append(error)
        if row.version >= RIGS_ENGINES:
            recent.append(error)
        weights_gib = predicted.weights_bytes_per_accelerator / GIB
        line = f"{lead} {predicted.kv_tokens:>10,d} {error:>+7.1f}% {weights_gib:>8.2f}"
        if data["logged"].get("weights_gib"):
            weights.append(error_percent(weights_gib, data["logged"]["weights_gib"]))
            line += f" {weights[-1]:>+7.1f}%"
        lines.append(line)
    lines += ["", summary("KV tokens, vLLM 0.10 or later", recent), summary("KV tokens, all rows", every),
              summary("weights per GPU, all rows", weights)]
    return lines + ([f"not sized ({len(unsized)}): the fit cannot read their config"] + unsized if unsized else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=TABLE, help="the table of logs (default: the committed one)")
    args = parser.parse_args(argv)
    try:
        rows = load(args.table)
    except TableError as exc:
        print(exc, file=sys.stderr)
        return 2
    print("\n".join(report(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
