"""Cost at the latency target, and the recommendation for the user's traffic: a pure function of the
summary's blocks and ``run.json`` (the workload, the accuracy floor, the prices).

:func:`attach` adds to every ``backends.<name>.slo`` block what that capacity costs
(:mod:`.costs`), and returns the ``recommendation`` (:mod:`.choose`): each backend is assessed
(:mod:`.assess`), priced with the cost model (:mod:`.offers`), and the plot's curves are kept
(:mod:`.curves`). The cost model is stated in every report and in ``docs/recommendation.md``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ...results.blocks.quality import QualityPair
from ...results.blocks.recommendation import Recommendation
from ...results.blocks.slo import SloBlock
from ...results.run import RunFile
from ...results.summary import BackendSummary
from .choose import recommend


def attach(backends: Mapping[str, BackendSummary], run: RunFile, quality_pairs: Sequence[QualityPair] = (),
           quality_reference: str | None = None) -> tuple[dict[str, BackendSummary], Recommendation]:
    """The backends with the cost at the target added to their ``slo`` blocks, and the recommendation
    (``quality_pairs`` name the backends that answer significantly worse than ``quality_reference``)."""
    rec, additions = recommend(backends, run, quality_pairs, quality_reference)
    out = {}
    for name, b in backends.items():
        extra = additions.get(name)
        out[name] = b.model_copy(update={"slo": SloBlock(**{**dict(b.slo), **extra})}) if extra and b.slo else b
    return out, rec
