"""``run.json``'s description of a run, written before the first request: when, from which commit,
with which versions, backends, options and settings, and the prices it uses (the Pricing API, else
the dated offline file ``rigs/prices.yaml``). The summary reads prices from here only, so it stays a
pure function of ``requests.jsonl`` and ``run.json``."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from kit import utc

from ...kinds import PER_TOKEN, descriptor
from ..analysis.stats import PERCENTILE_METHOD

if TYPE_CHECKING:
    from ...backends import Backend
    from ..results.run import AgentSettings, BackendInfo, RunFile, RunOptions

PRICES_PENDING = {"offline": True, "offline_reason": "not fetched: the run stopped before its prices were read",
                  "backends": {}}
"""``run.json`` prices until they are read (an interrupt in the first seconds leaves this, said so)."""


def describe(backends: Sequence[Backend], options: RunOptions, settings: AgentSettings) -> RunFile:
    """``run.json`` as it stands when the run starts (``finished``, ``interrupted``, the skips and stops are
    filled as the run goes; the prices by :func:`add_prices`)."""
    from ..results.run import Prices, RunFile

    return RunFile(
        started=utc.iso_millis(), finished=None, git_sha=git_sha(), versions=versions(),
        backends=[backend_info(b) for b in backends], options=options, settings=settings,
        methods={"percentiles": PERCENTILE_METHOD}, interrupted=False,
        notes=[b.metadata[key] for b in backends for key in ("stand_in", "note") if b.metadata.get(key)],
        skipped={b.name: {} for b in backends}, stopped={}, prices=Prices(**PRICES_PENDING),
    )  # fmt: skip


def add_prices(run: RunFile, backends: Sequence[Backend], session: Any, bedrock_tier: str = "standard") -> None:
    """Read the run's prices into ``run``, with a note when the offline file stood in."""
    from ..results.run import Prices

    run.prices = Prices.model_validate(prices_for(backends, session, bedrock_tier))
    if run.prices.offline:
        run.notes = [*run.notes, "Prices: the dated offline price file rigs/prices.yaml was used "
                                 f"({run.prices.offline_reason})."]


def backend_info(b: Backend) -> BackendInfo:
    from ..results.run import BackendInfo

    return BackendInfo(
        name=b.name, label=b.label, kind=b.kind, model_id=b.model_id, tool_calls=b.tool_calls,
        constrained_tools=b.constrained_tools, toy_model=b.toy_model, base_url=b.base_url, region=b.region,
        endpoint_name=b.endpoint_name, max_prompt_tokens=b.max_prompt_tokens, max_total_tokens=b.max_total_tokens,
        metadata=dict(b.metadata), custom=b.custom, **({"provenance": dict(b.provenance)} if b.provenance else {}),
    )  # fmt: skip


def git_sha() -> str | None:
    root = Path(__file__).resolve().parents[3]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)  # fmt: skip
        return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in ("strands-agents", "openai", "boto3", "botocore", "aiohttp", "matplotlib"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def prices_for(backends: Sequence[Backend], session: Any, bedrock_tier: str = "standard") -> dict[str, Any]:
    """The prices this run uses, with their source and date (Pricing API, else the offline file); Bedrock's in its
    backend's service tier, else ``bedrock_tier`` (``--bedrock-tier``)."""
    try:
        from rigs.catalog.model import load_catalog
        from rigs.catalog.pricing import PriceBook, PriceError
    except ImportError as exc:  # pragma: no cover - the price module ships with the project
        return {"offline": True, "offline_reason": f"no price module: {exc}", "backends": {}}
    book = PriceBook(session)
    out: dict[str, Any] = {"fetched": utc.iso_millis(), "backends": {}}
    reasons = set()
    for b in backends:
        meta = b.metadata
        region = b.region or meta.get("region") or _zone_region(meta.get("zone")) or "us-east-1"
        try:
            if descriptor(b.kind).pricing == PER_TOKEN:
                tier = meta.get("service_tier", bedrock_tier)
                out["backends"][b.name] = {"per_token": _token(book.bedrock_token_prices(b.model_id, region, tier))}
            elif meta.get("instance_type"):
                hourly = book.instance_hourly_price(meta["instance_type"], region)
                out["backends"][b.name] = {"hourly": hourly.model_dump(mode="json")}
            else:
                out["backends"][b.name] = {"reason": meta.get("unpriced") or "no instance type known (a local or "
                                                                                "custom server)"}
        except PriceError as exc:
            out["backends"][b.name] = {"reason": str(exc)[:300]}
    out["not_run"] = not_run_prices(book, [b.name for b in backends], bedrock_tier, [b.model_id for b in backends])
    bedrock = next((b for b in backends if descriptor(b.kind).pricing == PER_TOKEN), None)
    try:
        if bedrock is not None:
            ref = book.bedrock_token_prices(bedrock.model_id, bedrock.region or "us-east-1",
                                            bedrock.metadata.get("service_tier", bedrock_tier))
        else:
            spec = load_catalog().get("bedrock")
            ref = book.bedrock_token_prices(spec.model_id, spec.regions[0], bedrock_tier)
        out["bedrock_reference"] = _token(ref)
    except Exception as exc:  # noqa: BLE001 - no reference price means no break-even, said in the report
        out["bedrock_reference"] = None
        out["bedrock_reference_reason"] = str(exc)[:300]
    for entry in out["backends"].values():
        for price in (entry.get("hourly"), entry.get("per_token")):
            if price and price.get("source") != "pricing-api":
                reasons.add(price.get("note") or "offline")
    ref_price = out.get("bedrock_reference")
    if ref_price and ref_price.get("source") != "pricing-api":
        reasons.add(ref_price.get("note") or "offline")
    out["offline"] = bool(reasons)
    out["offline_reason"] = "; ".join(sorted({r.split(";")[0].strip() for r in reasons})) if reasons else None
    return out


def _token(price: Any) -> dict[str, Any]:
    d = price.model_dump(mode="json")
    return {
        "model_id": d["model_id"], "service_tier": d["service_tier"], "usd_per_m_input": d["usd_per_million_input"],
        "usd_per_m_output": d["usd_per_million_output"], "region": d["region"],
        "requested_region": d["requested_region"], "as_of": d["as_of"], "source": d["source"],
        "detail": d["detail"], "note": d["note"],
    }  # fmt: skip


def _zone_region(zone: str | None) -> str | None:
    return zone[:-1] if zone and zone[-1].isalpha() else None


def not_run_prices(book: Any, run_names: Iterable[str], bedrock_tier: str = "standard",
                   asked: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The prices of the catalog's backends this run does not measure, for ``run.json`` ``prices``, and the models of
    ``asked`` (the run's backends' model ids) each of the rigs among them cannot serve, with why.

    The one function here that looks anything up (through ``book``, a :class:`rigs.catalog.pricing.PriceBook`):
    the recommendation uses these prices to say when a backend that was not run could have been
    cheaper, while the summary stays a pure function of ``run.json`` and ``requests.jsonl``.
    """
    from rigs.catalog.model import load_catalog
    from rigs.catalog.pricing import PriceError

    skip, asked = set(run_names), list(asked)
    catalog = load_catalog()
    out: dict[str, dict[str, Any]] = {}
    for rig in catalog.rigs.values():
        if rig.name in skip:
            continue
        item: dict[str, Any] = {"label": rig.label, "model": rig.weights.model, "tool_calls": rig.tool_calls}
        if rig.deployed and (refused := cannot_serve(rig, catalog, asked)):
            item["cannot_serve"] = refused
        region = rig.regions[0] if rig.regions else "us-east-1"
        try:
            if rig.priced_per_token:
                p = rig.price(book, region, bedrock_tier).model_dump(mode="json")
                item["per_token"] = {"service_tier": p["service_tier"], "usd_per_m_input": p["usd_per_million_input"],
                                     "usd_per_m_output": p["usd_per_million_output"], "source": p["source"],
                                     "as_of": p["as_of"]}
            else:
                item["hourly"] = book.hourly_price(rig, region).model_dump(mode="json")
        except PriceError as exc:
            item["reason"] = str(exc)[:300]
        out[rig.name] = item
    return out


def cannot_serve(rig: Any, catalog: Any, asked: Iterable[str]) -> dict[str, str]:
    """The catalog's models among ``asked`` that ``rig`` cannot serve (by the catalog's name), each with its one line
    from ``rigs/deploy/model_options.py``; a gated model counts as served (its token is the deploy's to give)."""
    from rigs.deploy.model_options import ModelOptionsError, ModelRequest, serve

    out: dict[str, str] = {}
    for model_id in dict.fromkeys(asked):
        card = catalog.models.get(model_id)
        if card is None or card.name == rig.weights.model or card.name in out:
            continue
        try:
            serve(rig, catalog, ModelRequest(model=model_id, hf_token_parameter="/aws-inference/hf-token"))
        except ModelOptionsError as exc:
            text = str(exc)
            out[card.name] = text.split(": ", 1)[1] if text.startswith("-c ") else text
    return out
