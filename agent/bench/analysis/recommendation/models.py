"""Like with like: the model each backend serves, the model the comparison is for, and how a backend of another
model is treated (the one place these are decided; ``docs/recommendation.md``, "Different models").

What a backend serves is what provenance read from the server (``GET /v1/models``, Bedrock's inference profile);
where the server said nothing, the model every request names. It is compared by the catalog's name of the model
(``weights.model``: ``Gemma 4 E2B`` whether a rig names it ``google/gemma-4-E2B-it`` or Bedrock ``google.gemma-4-e2b``;
a custom server's ``model_name``); where the server reports another model than the one asked, or the catalog names
none (an id it does not know, a stand-in), by the id itself.

The comparison is for the model most of the run's backends serve; a tie goes to the model the run's rigs (EC2 and
SageMaker, not the local toy rig) were asked for, then to the first in ``run.json``'s order. A toy model (the local
rig's) neither counts nor is set apart, unless every backend is one: it is never chosen anyway (no price), and its
own reason says so. A run of one backend compares nothing.

Without ``--compare-models`` a backend serving another model is measured and shown, never chosen nor named the
leader. With it, it competes and the quality lane is the arbiter: it must have quality-lane answers graded, paired
with the best-answering backend of the comparison's model; it is disqualified when its paired difference's whole 95%
interval lies below zero (it answers worse beyond the lane's interval), and its evidence is thin (while it leads,
nothing is chosen until more items tell) when the interval reaches below minus the lane's design drop (3 points), so
that a model is never chosen over another on cost unless the lane shows it answers at most that much worse. The
quality floor (``--min-quality``) applies to it as to every backend. Without the option, a backend of the catalog not
run that serves another model does not make the evidence thin (:func:`~.choose._thin`).
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from ...results.blocks.quality import QualityPair
from ...results.blocks.recommendation import Models, ServedModel
from ...results.constants import MODEL_NAME_METADATA
from ...results.run import BackendInfo, CatalogPrice
from ...results.summary import BackendSummary
from ..blocks.quality_pairs import DESIGN_DROP
from .assess import Assessed

RIG_KINDS = ("openai", "neuron", "sagemaker")
"""The client kinds of the rigs this app deploys (the local toy rig is of the first kind, and told apart by it)."""
RUN_THE_LANE = "run the quality lane on both (--demos default,quality)"


def served_model(entry: BackendSummary, info: BackendInfo | None = None) -> ServedModel:
    """What ``entry`` serves: the model provenance read, else the one asked (the rules above); ``info``, its
    ``run.json`` entry, gives a custom server's name of the model (:data:`MODEL_NAME_METADATA`)."""
    asked = entry.model_id
    name = _catalog_name(entry, info)
    check = next((f for f in entry.provenance.facts if f.fact == "model"), None) if entry.provenance else None
    if check is None or check.read is None:
        why = check.not_reported if check and check.not_reported else "no provenance read for it"
        return ServedModel(model=name or asked, model_id=asked, source=f"the model asked ({why})")
    if check.verdict == "match" or check.read == asked:
        return ServedModel(model=name or check.read, model_id=check.read, source=f"read: {check.read_source}")
    return ServedModel(model=check.read, model_id=check.read,
                       source=f"read: {check.read_source}, where {asked} was asked")


def _catalog_name(entry: BackendSummary, info: BackendInfo | None) -> str | None:
    """The catalog's name of the model ``entry`` was asked for (its weights', else a custom server's)."""
    return entry.weights.model if entry.weights else (info.metadata.get(MODEL_NAME_METADATA) if info else None)


def _tie_break(tied: Sequence[str], backends: Mapping[str, BackendSummary],
               infos: Mapping[str, BackendInfo]) -> tuple[str, str]:
    """Of the models ``tied``, the one the run's rigs were asked for, else the first."""
    for n, b in backends.items():
        asked = _catalog_name(b, infos.get(n)) or b.model_id
        if b.kind in RIG_KINDS and not b.toy_model and asked in tied:
            return asked, "the model the run's rigs were asked for"
    return tied[0], "the first model in the run's order"


def comparison(backends: Mapping[str, BackendSummary], compare_models: bool,
               infos: Mapping[str, BackendInfo] | None = None,
               not_run: Mapping[str, CatalogPrice] | None = None) -> Models:
    """The model the comparison is for and what each backend serves (``backends`` in ``run.json``'s order; ``infos``
    their ``run.json`` entries), and which rigs of the catalog not run cannot serve it, with why (``not_run``,
    ``run.json`` ``prices.not_run``). A toy model (the local rig) neither counts nor is set apart: it is never chosen
    anyway, and its own reason says why."""
    infos = infos or {}
    served = {n: served_model(b, infos.get(n)) for n, b in backends.items()}
    counted = {n: s for n, s in served.items() if not backends[n].toy_model} or served
    counts = Counter(s.model for s in counted.values())
    if not counts:
        return Models(compared=None, why="no backend ran", compare_models=compare_models, served={}, different=[])
    most = max(counts.values())
    tied = [m for m in dict.fromkeys(s.model for s in counted.values()) if counts[m] == most]
    of = f"{most} of {len(counted)} backend{'s' if len(counted) > 1 else ''}"
    if len(tied) == 1:
        compared = tied[0]
        why = f"served by {of}" + ("" if len(counts) == 1 else ", more than any other model")
    else:
        compared, rule = _tie_break(tied, backends, infos)
        why = f"a tie between {', '.join(tied)}, {of} each: {rule}"
    different = [n for n, s in counted.items() if s.model != compared]
    cannot = {n: p.cannot_serve[compared] for n, p in (not_run or {}).items() if compared in p.cannot_serve}
    return Models(compared=compared, why=why, compare_models=compare_models, served=served, different=different,
                  cannot_serve=cannot)


def not_compared(models: Models, name: str) -> str:
    """The one line of a backend of another model, without ``--compare-models``."""
    return f"serves {models.served[name].model}, not {models.compared}: compared only with --compare-models"


def _pair(pairs: Sequence[QualityPair], name: str, other: str) -> tuple[float, tuple[float, float], int] | None:
    """``name``'s accuracy minus ``other``'s on the items both had graded, with its 95% paired interval and n."""
    for p in pairs:
        if {p.a, p.b} == {name, other} and p.difference is not None and p.ci95 is not None and p.both:
            if p.b == name:
                return p.difference, p.ci95, p.both
            return -p.difference, (-p.ci95[1], -p.ci95[0]), p.both
    return None


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


def arbiter(b: Assessed, models: Models, assessed: Mapping[str, Assessed], pairs: Sequence[QualityPair]) -> str | None:
    """With ``--compare-models``, the quality lane's word on ``b``, a backend of another model: why it cannot be
    chosen (disqualified), or None, with a thin note when the lane cannot yet rule out a drop beyond the design's, and
    the figure it was admitted on otherwise (``b.caveats``)."""
    own, compared = models.served[b.name].model, models.compared
    head = f"serves {own}, not {compared}, so the quality lane decides (--compare-models)"
    if b.quality is None:
        return f"{head}, and it graded none of its answers: {RUN_THE_LANE}"
    peers = [a for n, a in assessed.items() if models.served[n].model == compared and a.quality is not None]
    if not peers:
        return f"{head}, and it graded no backend serving {compared} to compare it with: {RUN_THE_LANE}"
    best = max(peers, key=lambda a: (a.quality.accuracy, a.quality.cases))  # type: ignore[union-attr]
    paired = _pair(pairs, b.name, best.name)
    if paired is None:
        return f"{head}, and no item was graded on both it and {best.name}, the best of {compared}: {RUN_THE_LANE}"
    difference, (low, high), n = paired
    figure = (f"{_points(difference)} points against {best.name}, the best-answering backend of {compared} "
              f"(95% interval [{_points(low)}, {_points(high)}] on {n} paired items)")
    if high < 0:
        return f"{head}: it answers worse, {figure}"
    if low < -DESIGN_DROP:
        b.thin.append(f"{b.name}: serves {own}, not {compared}: its answer quality, {figure}, cannot rule out a drop "
                      f"of more than {DESIGN_DROP * 100:.0f} points: more items would tell (--quality-n)")
    else:
        b.caveats.append(f"{b.name}: serves {own}, not {compared}; the quality lane admits it (--compare-models): "
                         f"{figure}, no drop beyond {DESIGN_DROP * 100:.0f} points")
    return None


def judge(assessed: Mapping[str, Assessed], models: Models, pairs: Sequence[QualityPair]) -> None:
    """Each backend of another model: not compared (without ``--compare-models``; this line before any other), or
    judged by the quality lane where nothing else disqualified it."""
    for name in models.different:
        b = assessed[name]
        if not models.compare_models:
            b.disqualified = not_compared(models, name)
        elif b.disqualified is None:
            b.disqualified = arbiter(b, models, assessed, pairs)


def with_models(headline: str, models: Models) -> str:
    """The headline with what it must say of backends of other models: "different models" and who serves what with
    ``--compare-models``; without it, each one's line (unless the headline already gives it)."""
    if not models.different:
        return headline
    if models.compare_models:
        others = "; ".join(f"{n} serves {models.served[n].model}" for n in models.different)
        return (f"{headline} Different models, compared with --compare-models (the quality lane the arbiter): "
                f"{others}; the others {models.compared}.")
    lines = [f"{n} {line}" for n in models.different if (line := not_compared(models, n)) not in headline]
    return f"{headline} {'; '.join(lines)}." if lines else headline
