"""The bandwidth-ceiling section: each backend's decode ceiling from memory bandwidth, the measured
decode rate as a share of it, and the sources of every device and model figure."""

from __future__ import annotations

from ...results.formatting import MISSING, cell, percent
from ...results.summary import Summary
from ..labels import backend_label
from ..markdown import table

HEADER = ["backend", "device", "GB/s", "basis", "precision", "GB per step", "ceiling tok/s", "measured decode p50",
          "share", "share of whole chip", "note"]


def section(summary: Summary) -> list[str]:
    rows, sources = [], []
    for n, b in summary.backends.items():
        c = b.ceiling
        rows.append([backend_label(summary, n), c.device or MISSING, cell(c.bandwidth_gb_s, 0),
                     c.bandwidth_basis or MISSING, c.precision or MISSING, cell(c.bytes_per_step_gb, 2),
                     cell(c.ceiling_tok_per_s), cell(c.measured_decode_tok_per_s), percent(c.share),
                     percent(c.chip_share), c.reason or ""])
        sources += [s for s in c.sources if s not in sources]
    return ["## Bandwidth ceiling", ""] + table(HEADER, rows) + ["", "Sources:", ""] + [f"- {s}" for s in sources] + [""]
