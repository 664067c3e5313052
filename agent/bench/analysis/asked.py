"""The ``traffic`` block of one backend: the lengths its chat part asked against the lengths its server counted,
the workload's fit to its limits, and its calibration (pure: records and ``run.json``), over the chat part's and the
open loop's requests.

The goal (docs/traffic.md, "Your traffic"): the mean prompt tokens the server reports within 2% of the mean
asked, and their standard deviation within 10% of the asked one. Asked and counted are compared over the same
requests: the measured ones (timed, at every level, in the open loop) that succeeded and carry the server's usage;
the cold request, made before the calibration, is left out. A backend whose limits some of the workload's requests do
not fit cannot take the workload: it is disqualified with the limit and the share (the recommendation reads
:attr:`~agent.bench.results.blocks.traffic.TrafficBlock.disqualified`).
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from ..results.blocks.traffic import CalibrationBlock, TrafficFit, Lengths, TrafficBlock
from ..results.records import NotSentRecord, TimingRecord
from ..results.run import TrafficLog
from .traffic import Traffic

MEASURED = ("timed", "sweep", "rate", "trace")
"""The phases whose requests are compared: the chat part's timed and level requests, the open loop's."""
MEAN_GOAL = 0.02
STDDEV_GOAL = 0.10


def _lengths(values: Sequence[int]) -> Lengths:
    return Lengths(n=len(values), mean=round(statistics.fmean(values), 2) if values else None,
                   stddev=round(statistics.pstdev(values), 2) if values else None, values=list(values))


def _source(traffic: Traffic) -> Any:
    if traffic.prompts:
        return "prompts file"
    if traffic.trace:
        return "trace"
    return "reference" if traffic.preset == "reference" else "synthetic"


def _error(counted: float | None, asked: float | None) -> float | None:
    return None if counted is None or not asked else round(counted / asked - 1.0, 4)


def _stated(b: TrafficBlock, traffic: Traffic, mix: float | None) -> list[str]:
    """A given prompt (the reference's, a prompts file's) against the length the workload states for it, with the
    backend's one measured mix (:func:`~.blocks.cost.measured_mix`) it is priced at."""
    stated, counted = traffic.prompt_input_tokens_mean, b.prompt_counted.mean
    if b.prompt_asked is not None or not stated or counted is None or abs(counted / stated - 1.0) <= MEAN_GOAL:
        return []
    what = "the reference's prompt" if b.source == "reference" else "the prompts file's requests"
    sends = "" if mix is None else (f", so it sends {mix:.3g} input tokens per output token as the server counts "
                                    f"them (its price is at that mix) against the {traffic.input_per_output:g} stated")
    return [f"{what}: the server counted {counted:,.1f} prompt tokens where {stated:,.1f} are stated{sends}"]


def _differs(b: TrafficBlock, can_ignore_eos: bool) -> list[str]:
    """Where the server's count parts from what was asked, one line each (``can_ignore_eos``: its server can be asked
    for exactly ``max_tokens`` tokens, :attr:`agent.kinds.BackendKind.ignore_eos`)."""
    out = []
    if b.prompt_mean_error is not None and abs(b.prompt_mean_error) > MEAN_GOAL:
        out.append(f"prompt tokens: the server counted {b.prompt_counted.mean:,.1f} on average, {b.prompt_mean_error:+.1%} "
                   f"from the {b.prompt_asked.mean:,.1f} asked (the goal: within {MEAN_GOAL:.0%})")  # type: ignore[union-attr]
    if b.prompt_stddev_ratio is not None and abs(b.prompt_stddev_ratio - 1.0) > STDDEV_GOAL:
        out.append(f"prompt spread: the server's standard deviation is {b.prompt_counted.stddev:,.1f} tokens against "
                   f"{b.prompt_asked.stddev:,.1f} asked (x{b.prompt_stddev_ratio:.2f}; the goal: within "  # type: ignore[union-attr]
                   f"{STDDEV_GOAL:.0%})")
    if b.output_mean_error is not None and abs(b.output_mean_error) > MEAN_GOAL:
        how = ("though exactly that many were asked for" if b.ignore_eos else
               "exactly that many were not asked for (`--ignore-eos` asks this server for them with the reference's "
               "prompt or a prompts file), so a reply ends where the model stops" if can_ignore_eos else
               "this server cannot be told to ignore its end of sequence, so a reply ends where the model stops")
        out.append(f"output tokens: {b.output_counted.mean:,.1f} on average came back of the {b.output_asked.mean:,.1f} "
                   f"asked ({b.output_mean_error:+.1%}): {how}")
    if b.calibration is not None and not b.calibration.calibrated:
        out.append(f"not calibrated ({b.calibration.why})")
    if b.not_sent:
        out.append(f"{b.not_sent} requests of the workload were not sent: they do not fit this backend's limits")
    return out


def _disqualified(fit: TrafficFit | None) -> str | None:
    if fit is None or fit.fitting >= fit.requests:
        return None
    limits = ", ".join(x for x in (f"{fit.max_prompt_tokens} prompt tokens" if fit.max_prompt_tokens else "",
                                   f"{fit.max_total_tokens} prompt and output tokens together"
                                   if fit.max_total_tokens else "") if x)
    return (f"cannot take the workload: {fit.fitting:,} of its {fit.requests:,} requests ({fit.share:.1%}) fit its "
            f"limits ({limits}; {fit.reason})")


def traffic_block(records: Sequence[TimingRecord], not_sent: Sequence[NotSentRecord], log: TrafficLog | None,
                  traffic: Traffic, can_ignore_eos: bool, mix: float | None) -> TrafficBlock | None:
    """One backend's block, or None when its chat part sent nothing and checked nothing (``can_ignore_eos``: its
    server can be asked for exactly ``max_tokens`` tokens; ``mix``: its one measured input:output mix)."""
    measured = [r for r in records if r.phase in MEASURED and not r.error]
    if not measured and log is None and not not_sent:
        return None
    counted_in = [r for r in measured if r.prompt_tokens is not None]
    asked_in = [r for r in counted_in if r.asked_prompt_tokens is not None]
    outputs = [r for r in measured if r.output_tokens is not None and r.requested_tokens is not None]
    fit = log.fit if log else None
    cal = log.calibration if log else None
    prompt_asked = _lengths([r.asked_prompt_tokens for r in asked_in]) if asked_in else None  # type: ignore[misc]
    prompt_counted = _lengths([r.prompt_tokens for r in (asked_in or counted_in)])  # type: ignore[misc]
    output_asked = _lengths([r.requested_tokens for r in outputs])  # type: ignore[misc]
    output_counted = _lengths([r.output_tokens for r in outputs])  # type: ignore[misc]
    ratio = None
    if prompt_asked and prompt_asked.stddev and prompt_counted.stddev is not None:
        ratio = round(prompt_counted.stddev / prompt_asked.stddev, 4)
    mean_error = _error(prompt_counted.mean, prompt_asked.mean if prompt_asked else None)
    block = TrafficBlock(
        source=_source(traffic), requests=len(measured), not_sent=len(not_sent), fit=fit, disqualified=_disqualified(fit),
        calibration=CalibrationBlock(slope=cal.slope, offset=cal.offset, calibrated=cal.calibrated, why=cal.why,
                                     prompts=sum(1 for p in cal.points if p.prompt_tokens is not None))
        if cal else None,
        ignore_eos=log.ignore_eos if log else None, prompt_asked=prompt_asked, prompt_counted=prompt_counted,
        output_asked=output_asked, output_counted=output_counted, prompt_mean_error=mean_error,
        prompt_stddev_ratio=ratio, output_mean_error=_error(output_counted.mean, output_asked.mean),
        within_goal=None if mean_error is None else
        abs(mean_error) <= MEAN_GOAL and (ratio is None or abs(ratio - 1.0) <= STDDEV_GOAL),
        differs=[])
    return block.model_copy(update={"differs": _stated(block, traffic, mix) + _differs(block, can_ignore_eos)})
