"""The JSON Schemas of the files a user edits for the analysis, so an editor can check them as they are
written: ``devices.yaml`` (:class:`.ceiling.DeviceTable`) and a ``--workload`` file (:class:`.traffic.TrafficKeys`).
``--write`` writes them beside this module, ``--check`` (and a test) fails when a committed one is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kit import generated

from .ceiling import DEVICES_PATH, DeviceTable
from .traffic import TrafficKeys

PROG = "python -m agent.bench.analysis.schema"
HERE = Path(__file__).parent


def files() -> list[generated.Generated]:
    made = f"({PROG} --write); do not edit."
    return [
        generated.schema_file(HERE / "devices.schema.json", DeviceTable.model_json_schema, DEVICES_PATH.name,
                              "Device memory bandwidths, the instance types that carry each device, and the bytes "
                              "each served model streams per decode step, every figure with its source (the "
                              f"decode-ceiling estimate). Generated from agent/bench/analysis/ceiling.py {made}"),
        generated.schema_file(HERE / "workload.schema.json", TrafficKeys.model_json_schema, "a --workload file",
                              "The user's traffic for the recommendation; every key is optional. Generated from "
                              f"agent/bench/analysis/traffic.py {made}"),
    ]


if __name__ == "__main__":
    sys.exit(generated.main(files(), PROG, "Write or check the analysis' input schemas."))
