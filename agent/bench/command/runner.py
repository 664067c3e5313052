"""The benchmark runner ``python -m agent.run`` calls: :func:`add_arguments` and :func:`run`.

``run`` drives the selected parts on every selected backend, in this order so the *cold*
request really is a backend's first: the chat benchmark, the counting demo (both question
sets), the BFCL tool-calling cases (``bfcl``, when selected), the quality lane (``quality``, when
selected), the orchestrator. Every request
is appended to ``requests.jsonl`` as it finishes;
``summary.json``, the plots and ``REPORT.md`` are computed from it at the end, also when a
backend fails or the run is interrupted. The exit code is 0 only when every selected backend
completed every part it takes part in.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import logging
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..parts import bfcl, quality, stopping
from ..presentation import console
from . import evidence
from ..analysis import recommend, slo
from .argtypes import positive_int, positive_seconds
from ..analysis.stats import PERCENTILE_METHOD
from ..clients.reply import ChatRequest
from ..tasks.workload import CHAT_MAX_TOKENS, CHAT_PROMPT, ORCHESTRATOR_QUESTION, QUESTION_SETS

# The parts, the timers and the summary pull in strands, aiohttp and jsonschema (about
# 1.5 s); they are imported where a run needs them so `--help` and `--list` start fast.
if TYPE_CHECKING:
    import boto3

    from ...backends import Backend
    from ..clients.base import BackendClient

logger = logging.getLogger(__name__)

DEMOS = ("counting", "orchestrator", "chat", "bfcl", "quality")
DEFAULT_DEMOS = ("counting", "orchestrator", "chat")
EXIT_OK, EXIT_FAILED = 0, 1
MAX_CONCURRENCY = 1024


def _csv(choices: Sequence[str] | None = None) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [p.strip() for p in text.split(",") if p.strip()]
        if not items:
            raise argparse.ArgumentTypeError("give at least one value")
        bad = [p for p in items if choices and p not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(bad)} (choose from {', '.join(choices or ())})")
        return list(dict.fromkeys(items))

    return parse


def _levels(text: str) -> list[int] | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        levels = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("concurrency levels are integers, e.g. 1,4,16, or auto") from None
    if not levels or levels[0] < 1:
        raise argparse.ArgumentTypeError("concurrency levels must be at least 1")
    if levels[-1] > MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"{levels[-1]} is above {MAX_CONCURRENCY}: each request in flight holds a "
                                         "connection (and, for AWS backends, a worker thread)")
    return levels


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark's options (``--runs`` and ``--out`` are the CLI's own)."""
    g = parser.add_argument_group("benchmark")
    g.add_argument("--demos", type=_csv(DEMOS), default=list(DEFAULT_DEMOS), metavar="LIST",
                   help="parts to run, comma-separated: counting (graded tool use, both question sets), "
                        "orchestrator (an agent asks every backend; its summary is checked), chat (streamed "
                        "timings), bfcl (BFCL tool-calling cases through each backend's tool interface), "
                        "quality (seeded questions with checkable answers through each backend's chat interface). "
                        f"Default: {','.join(DEFAULT_DEMOS)}")
    g.add_argument("--tools", choices=("engine", "rows"), default="engine",
                   help="counting tools: engine = count_ids(op, value) (graded on the filter sent); rows = "
                        "list_ids() and the model counts (default: engine)")
    g.add_argument("--concurrency", type=_levels, default=[1], metavar="LIST",
                   help="chat concurrency levels, e.g. 1,4,16: at each level c, c x --runs requests with c in "
                        "flight; aggregate output tok/s and $/M per level (default: 1); auto: search for the "
                        "highest level that meets the --slo target (docs/benchmark.md)")
    g.add_argument("--max-tokens", type=positive_int, default=CHAT_MAX_TOKENS, metavar="N",
                   help=f"output tokens requested per chat request (default: {CHAT_MAX_TOKENS}, the reference's)")
    g.add_argument("--ignore-eos", action="store_true",
                   help="ask OpenAI-compatible servers (vLLM, llama.cpp) for exactly --max-tokens tokens")
    g.add_argument("--question", default=ORCHESTRATOR_QUESTION,
                   help=f"the orchestrator's question (default: {ORCHESTRATOR_QUESTION!r})")
    g.add_argument("--request-timeout", type=positive_seconds, default=300.0, metavar="S",
                   help="timeout of one timed request, and of one agent run (default: 300)")
    stopping.add_arguments(g)
    bfcl.add_arguments(parser)
    quality.add_arguments(parser)
    recommend.add_arguments(parser)
    slo.add_arguments(parser)


def _opt(options: argparse.Namespace, name: str, default: Any) -> Any:
    value = getattr(options, name, None)
    return default if value is None else value


def run(
    backends: Sequence[Backend],
    options: argparse.Namespace,
    out_dir: Path,
    session: boto3.Session | None = None,
) -> int:
    """Run the selected parts on ``backends`` and write the evidence folder ``out_dir``.

    Returns:
        0 when every backend completed; 1 when any failed (the evidence is written either way). What
        failed is printed to stderr, one line per backend and part.

    Raises:
        evidence.FolderInUse: ``out_dir`` is a file or holds another run's evidence.
    """
    out_dir = evidence.claim_folder(Path(out_dir))
    try:
        return _run(list(backends), options, out_dir, session)
    finally:
        evidence.end_claim(out_dir)


def _run(backends: list[Backend], options: argparse.Namespace, out_dir: Path, session: boto3.Session | None) -> int:
    bench = Bench(backends, options, out_dir, session)
    try:
        asyncio.run(bench.main())
    except KeyboardInterrupt:
        bench.interrupted = True
        bench.finish()
        raise
    except BaseException:
        bench.interrupted = True
        bench.finish()
        raise
    result = bench.finish()
    from ..presentation.terminal import print_end

    for line in console.failure_lines(result) if result else []:
        print(line, file=sys.stderr, flush=True)
    print_end(result, out_dir)
    if result is None:
        return EXIT_FAILED
    return EXIT_OK if all(b["completed"] for b in result["backends"].values()) else EXIT_FAILED


class Bench:
    """One run: its backends, options, clients and evidence files."""

    def __init__(self, backends: list[Backend], options: argparse.Namespace, out_dir: Path,
                 session: boto3.Session | None) -> None:
        from ..clients.base import ModelSettings
        from ..parts.capacity import Plan

        self.backends = backends
        self.options = options
        self.out_dir = out_dir
        self.session = session
        self.demos = list(_opt(options, "demos", list(DEFAULT_DEMOS)))
        self.runs = int(_opt(options, "runs", 5))
        self.plan = Plan.from_options(options)
        self.levels = list(self.plan.levels)
        self.max_tokens = int(_opt(options, "max_tokens", CHAT_MAX_TOKENS))
        self.timeout_s = float(_opt(options, "request_timeout", 300.0))
        self.max_failures = int(_opt(options, "max_consecutive_failures", stopping.DEFAULT_MAX_CONSECUTIVE_FAILURES))
        self.streak = stopping.FailureStreak(self.max_failures)
        self.stopped: dict[str, dict[str, Any]] = {}
        self._running: dict[str, tuple[str, asyncio.Task[Any]]] = {}
        self.settings = ModelSettings(max_connections=max(64, self.plan.width))
        self.log = evidence.RequestLog(out_dir / evidence.REQUESTS)
        self.epoch = time.perf_counter()
        self.interrupted = False
        self.skipped: dict[str, dict[str, str]] = {b.name: {} for b in backends}
        self.run_info = self._run_info()
        evidence.write_json(out_dir / evidence.RUN, self.run_info)
        self._finished = False
        self._result: dict[str, Any] | None = None

    # --- progress -----------------------------------------------------------------------

    def progress(self, message: str, *, milestone: bool = False) -> None:
        """What the run is doing: on a terminal, one line rewritten in place for every request; otherwise
        (a log, a pipe, CI) one plain line per part and per concurrency level (``milestone``)."""
        elapsed = time.perf_counter() - self.epoch
        logger.info("elapsed=<%.1f> | %s", elapsed, message)
        if sys.stderr.isatty():
            print(f"\r\033[K[{elapsed:6.1f}s] {message}", end="", file=sys.stderr, flush=True)
        elif milestone:
            print(f"[{elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)

    def emit(self, record: dict[str, Any]) -> None:
        self.log.append(record)
        name = record.get("backend")
        part, task = self._running.get(name, (None, None))
        if task is None or record.get("part") != part:
            return
        stop = self.streak.observe(name, record)
        if stop is not None:
            self.stopped[name] = {"part": part, **stop}
            self.say(f"{name}: stopped after {stop['after']} failures in a row in {part} ({stop['reason']}); "
                     "its remaining parts are skipped (--max-consecutive-failures)")
            task.cancel()
            raise stopping.BackendStopped(name)

    def say(self, line: str) -> None:
        """A line for the user now, on its own line even while the progress line is showing."""
        if sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr)
        print(line, file=sys.stderr, flush=True)

    # --- run metadata -------------------------------------------------------------------

    def _run_info(self) -> dict[str, Any]:
        options = {
            "demos": self.demos, "runs": self.runs, "tools": _opt(self.options, "tools", "engine"),
            "concurrency": self.levels, "max_tokens": self.max_tokens,
            "ignore_eos": bool(getattr(self.options, "ignore_eos", False)),
            "question": _opt(self.options, "question", ORCHESTRATOR_QUESTION),
            "request_timeout_s": self.timeout_s, "max_consecutive_failures": self.max_failures,
            **recommend.options_record(self.options),
        }  # fmt: skip
        options.update(self.plan.record())
        if "bfcl" in self.demos:
            options.update(bfcl.options(self.options, max(self.levels)))
        if "quality" in self.demos:
            options.update(quality.options(self.options))
        info = {
            "started": evidence.utc_now(),
            "finished": None,
            "git_sha": git_sha(),
            "versions": versions(),
            "backends": [backend_info(b) for b in self.backends],
            "options": options,
            "settings": {**self.settings.as_dict(), "timing_retries": 0, "timing_timeout_s": self.timeout_s},
            "methods": {"percentiles": PERCENTILE_METHOD},
            "interrupted": False,
            "notes": [],
            "skipped": self.skipped,
            "stopped": self.stopped,
            "prices": prices_for(self.backends, self.session),
        }
        info["notes"] += [b.metadata["stand_in"] for b in self.backends if b.metadata.get("stand_in")]
        if info["prices"].get("offline"):
            info["notes"].append("Prices: the dated offline price file rigs/prices.yaml was used "
                                 f"({info['prices'].get('offline_reason')}).")
        return info

    # --- the parts ----------------------------------------------------------------------

    def _chat_request(self) -> ChatRequest:
        return ChatRequest.user(CHAT_PROMPT, self.max_tokens, ignore_eos=bool(getattr(self.options, "ignore_eos", False)))

    async def main(self) -> None:
        from ..clients.pool import ClientPool

        async with ClientPool(self.backends, self.session, self.settings, request_timeout_s=self.timeout_s,
                              width=max(self.plan.width, max(self.levels), self._quality_width())) as pool:
            clients: dict[str, BackendClient] = {}
            for b in self.backends:
                try:
                    clients[b.name] = pool.client(b)
                except Exception as exc:  # e.g. no credentials for a boto3 client
                    self.skipped[b.name]["chat"] = f"failed: {type(exc).__name__}: {exc}"[:300]
            try:
                if "chat" in self.demos:
                    await self._chat(clients)
                if "counting" in self.demos:
                    await self._counting(clients)
                if "bfcl" in self.demos:
                    await bfcl.run_part(backends=self.backends, pool=pool, namespace=self.options,
                                        concurrency=max(self.levels), skipped=self.skipped, emit=self.emit,
                                        progress=self.progress, guard=self._guard)  # fmt: skip
                if "quality" in self.demos:
                    self.progress("quality: making the items", milestone=True)
                    await quality.run_part(backends=self.backends, pool=pool, namespace=self.options,
                                           skipped=self.skipped, emit=self.emit, progress=self.progress,
                                           guard=self._guard)  # fmt: skip
                if "orchestrator" in self.demos:
                    await self._orchestrate(clients)
            finally:
                self.run_info["notes"] += pool.notes()
        if sys.stderr.isatty():
            print("", file=sys.stderr)

    def _quality_width(self) -> int:
        if "quality" not in self.demos:
            return 1
        return int(_opt(self.options, "quality_concurrency", quality.DEFAULT_CONCURRENCY))

    async def _chat(self, clients: dict[str, BackendClient]) -> None:
        from ..parts.capacity import run_under_target
        from ..parts.chat import run_chat

        request = self._chat_request()
        for b in self.backends:
            if b.name not in clients:
                continue
            if self.plan.searched:
                log = self.run_info.setdefault("slo_search", {}).setdefault(b.name, {})
                await self._guard(b, "chat", run_under_target(
                    backend=b, client=clients[b.name], request=request, plan=self.plan, runs=self.runs,
                    epoch=self.epoch, emit=self.emit, log=log, progress=self.progress))
                continue
            await self._guard(b, "chat", run_chat(
                backend=b, client=clients[b.name], request=request, runs=self.runs, concurrency=self.levels,
                epoch=self.epoch, emit=self.emit, progress=self.progress))

    async def _counting(self, clients: dict[str, BackendClient]) -> None:
        from ..parts.counting import run_counting

        tools = _opt(self.options, "tools", "engine")
        for b in self.backends:
            client = clients.get(b.name)
            if client is None or client.no_tools:
                for q in QUESTION_SETS:
                    self.skipped[b.name][q.name] = client.no_tools if client else "failed: no client"
                continue
            try:
                model = client.agent_model()
            except Exception as exc:
                for q in QUESTION_SETS:
                    self.skipped[b.name][q.name] = f"failed: {exc}"[:300]
                continue
            for q in QUESTION_SETS:
                await self._guard(b, q.name, run_counting(
                    backend=b, model=model, qset=q, tools=tools, runs=self.runs, constrained=client.constrained,
                    emit=self.emit, timeout_s=self.timeout_s, progress=self.progress))

    async def _guard(self, b: Backend, part: str, coro: Any) -> None:
        """Run one part for one backend; a crash is recorded and the run goes on. A backend that was
        stopped (too many failures in a row) runs no further part; the part that trips the limit is
        cancelled."""
        if b.name in self.stopped:
            coro.close()
            self.skipped[b.name][part] = f"not run: {b.name} was stopped after failures in a row"
            return
        self.streak.start(b.name)
        self.progress(f"{b.name}: {part}", milestone=True)
        task = asyncio.ensure_future(coro)
        self._running[b.name] = (part, task)
        try:
            await task
        except stopping.BackendStopped:
            pass
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if b.name not in self.stopped or (current is not None and current.cancelling()):
                raise
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            logger.exception("backend=<%s>, part=<%s> | part failed", b.name, part)
            self.skipped[b.name][part] = f"failed: {type(exc).__name__}: {exc}"[:300]
        finally:
            self._running.pop(b.name, None)

    async def _orchestrate(self, clients: dict[str, BackendClient]) -> None:
        from ..parts.orchestrator import run_orchestrator

        agents = [b for b in self.backends if b.name in clients and clients[b.name].can_drive_agent]
        candidates = [b for b in agents if b.name not in self.stopped]
        chosen = next((b for b in candidates if b.kind == "bedrock"), candidates[0] if candidates else None)
        if chosen is None:
            stopped = [b.name for b in agents if b.name in self.stopped]
            self.run_info["orchestrator"] = {"reason": "no selected backend can drive an agent (tool calls needed)"
                                             + (f"; stopped after failures: {', '.join(stopped)}" if stopped else "")}
            return
        offered = [b for b in self.backends if b.name in clients and b.name not in self.stopped]
        self.progress(f"orchestrator on {chosen.name}, asking {len(offered)} backend(s)", milestone=True)
        client = clients[chosen.name]
        try:
            model = client.agent_model()
        except Exception as exc:
            self.skipped[chosen.name]["orchestrator"] = f"failed: {exc}"[:300]
            self.run_info["orchestrator"] = {"reason": f"the orchestrator model failed: {exc}"[:300]}
            return
        if client.constrained and hasattr(model, "set_enums"):
            model.set_enums({})
        await self._guard(chosen, "orchestrator", run_orchestrator(
            orchestrator=chosen, model=model, constrained=client.constrained, backends=offered, clients=clients,
            epoch=self.epoch, emit=self.emit, question=_opt(self.options, "question", ORCHESTRATOR_QUESTION),
            timeout_s=self.timeout_s * 2))

    # --- the end --------------------------------------------------------------------------

    def finish(self) -> dict[str, Any] | None:
        """Write run.json, summary.json, the plots and REPORT.md from what was recorded."""
        if self._finished:
            return self._result
        self._finished = True
        self.log.close()
        self.run_info["finished"] = evidence.utc_now()
        self.run_info["interrupted"] = self.interrupted
        evidence.write_json(self.out_dir / evidence.RUN, self.run_info)
        try:
            self._result = write_outputs(self.out_dir)
        except Exception:
            logger.exception("out_dir=<%s> | could not write the summary and report", self.out_dir)
            self._result = None
        return self._result


def write_outputs(out_dir: Path) -> dict[str, Any]:
    """(Re)compute summary.json, the plots and REPORT.md from requests.jsonl and run.json."""
    from ..presentation import html_report, report
    from ..analysis import summary

    import json

    run_info = json.loads((out_dir / evidence.RUN).read_text())
    records = evidence.read_requests(out_dir / evidence.REQUESTS)
    result = summary.summarize(records, run_info)
    summary.validate(result)
    evidence.write_json(out_dir / evidence.SUMMARY, result)
    report.make_plots(result, out_dir)
    text = report.render(result)
    evidence.write_atomic(out_dir / evidence.REPORT, text)
    evidence.write_atomic(out_dir / html_report.FILE, html_report.render(text, out_dir))
    return result


# --- metadata helpers -------------------------------------------------------------------------


def backend_info(b: Backend) -> dict[str, Any]:
    return {
        "name": b.name, "label": b.label, "kind": b.kind, "model_id": b.model_id, "tool_calls": b.tool_calls,
        "constrained_tools": b.constrained_tools, "toy_model": b.toy_model, "base_url": b.base_url,
        "region": b.region, "endpoint_name": b.endpoint_name, "max_prompt_tokens": b.max_prompt_tokens,
        "metadata": dict(b.metadata), "custom": b.custom,
    }  # fmt: skip


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


def prices_for(backends: Sequence[Backend], session: Any) -> dict[str, Any]:
    """The prices this run uses, with their source and date (Pricing API, else the offline file)."""
    try:
        from rigs.catalog import load_catalog
        from rigs.pricing import PriceBook, PriceError
    except ImportError as exc:  # pragma: no cover - the price module ships with the project
        return {"offline": True, "offline_reason": f"no price module: {exc}", "backends": {}}
    book = PriceBook(session)
    out: dict[str, Any] = {"fetched": evidence.utc_now(), "backends": {}}
    reasons = set()
    for b in backends:
        meta = b.metadata
        region = b.region or meta.get("region") or _zone_region(meta.get("zone")) or "us-east-1"
        try:
            if b.kind == "bedrock":
                out["backends"][b.name] = {"per_token": _token(book.bedrock_token_prices(b.model_id, region))}
            elif meta.get("instance_type"):
                out["backends"][b.name] = {"hourly": book.instance_hourly_price(meta["instance_type"], region).as_dict()}
            else:
                out["backends"][b.name] = {"reason": meta.get("unpriced") or "no instance type known (a local or "
                                                                                "custom server)"}
        except PriceError as exc:
            out["backends"][b.name] = {"reason": str(exc)[:300]}
    out["not_run"] = recommend.not_run_prices(book, [b.name for b in backends])
    bedrock = next((b for b in backends if b.kind == "bedrock"), None)
    try:
        if bedrock is not None:
            ref = book.bedrock_token_prices(bedrock.model_id, bedrock.region or "us-east-1")
        else:
            spec = load_catalog().get("bedrock")
            ref = book.bedrock_token_prices(spec.model_id, spec.regions[0])
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
    d = price.as_dict()
    return {
        "model_id": d["model_id"], "usd_per_m_input": d["usd_per_million_input"],
        "usd_per_m_output": d["usd_per_million_output"], "region": d["region"],
        "requested_region": d["requested_region"], "as_of": d["as_of"], "source": d["source"],
        "detail": d["detail"], "note": d["note"],
    }  # fmt: skip


def _zone_region(zone: str | None) -> str | None:
    return zone[:-1] if zone and zone[-1].isalpha() else None
