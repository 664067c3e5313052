"""The JSON Schemas of the files a user edits for the analysis, generated from their models: ``devices.yaml``
(:class:`.ceiling.DeviceTable`) and the workload file (:class:`.traffic.TrafficKeys`), so an editor can check
them as they are written.

``python -m agent.bench.analysis.schema --write`` writes them beside this file;
``python -m agent.bench.analysis.schema --check`` (and a test) fails when a committed one is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import rigs.generated as generated
from rigs.generated import Generated

from .ceiling import DeviceTable
from .traffic import TrafficKeys

HERE = Path(__file__).parent
PROG = "python -m agent.bench.analysis.schema"


def devices_schema() -> str:
    return generated.json_schema(
        DeviceTable.model_json_schema(), "devices.yaml",
        "Device memory bandwidths, the instance types that carry each device, and the bytes each served model "
        "streams per decode step, every figure with its source (the decode-ceiling estimate). Generated from "
        f"agent/bench/analysis/ceiling.py ({PROG} --write); do not edit.")


def workload_schema() -> str:
    return generated.json_schema(
        TrafficKeys.model_json_schema(), "a --workload file",
        "The user's traffic for the recommendation; every key is optional. Generated from "
        f"agent/bench/analysis/traffic.py ({PROG} --write); do not edit.")


SCHEMAS = {"devices.schema.json": devices_schema, "workload.schema.json": workload_schema}


def files() -> list[Generated]:
    return [Generated(HERE / name, make) for name, make in SCHEMAS.items()]


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(files(), PROG, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
