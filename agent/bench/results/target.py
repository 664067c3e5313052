"""The latency target (``--slo``), one frozen model from the option to the report: parsed from the option
(:func:`agent.bench.analysis.slo.parse_target`), its default (:meth:`Target.default`, the one place it is
written), the plan that measures under it, ``run.json`` (``options.slo`` and ``options.slo_source``, read back
by :meth:`agent.bench.results.run.RunOptions.target`) and the summary's ``slo`` blocks. Free of pydantic, so
the command's ``--help`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .constants import LIMIT_LABELS, TARGET_KEYS

ATTAINMENT_PERCENT = 99
"""The share of requests, in percent, that must meet a ``*_p99_ms`` target for a level to hold."""
Source = Literal["default", "option"]


@dataclass(frozen=True)
class Target:
    """Per-request limits in ms (None = not set) and where they came from (``default`` | ``option``)."""

    ttft_p99_ms: float | None = None
    itl_p99_ms: float | None = None
    e2e_p99_ms: float | None = None
    source: Source = "default"

    def limits(self) -> dict[str, float]:
        """The limits that are set: ``{key: ms}``."""
        return {k: v for k, v in self.as_dict().items() if v is not None}

    def as_dict(self) -> dict[str, float | None]:
        return {k: getattr(self, k) for k in TARGET_KEYS}

    def spec(self) -> str:
        """The target as ``--slo`` takes it: ``ttft_p99_ms=1000,itl_p99_ms=100``."""
        return ",".join(f"{k}={v:g}" for k, v in self.limits().items())

    def describe(self) -> str:
        """``TTFT <= 1,000 ms and ITL <= 100 ms for 99% of requests``."""
        parts = [f"{LIMIT_LABELS[k]} <= {v:,g} ms" for k, v in self.limits().items()]
        return " and ".join(parts) + f" for {ATTAINMENT_PERCENT}% of requests"

    @classmethod
    def default(cls) -> Target:
        """The target when ``--slo`` is not given (:data:`agent.bench.analysis.slo.DEFAULT_BASIS` says why)."""
        return cls(ttft_p99_ms=1000.0, itl_p99_ms=100.0, source="default")

    @property
    def given(self) -> bool:
        """Whether ``--slo`` set it."""
        return self.source == "option"
