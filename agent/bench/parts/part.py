"""What a part is, and what it gets from the run.

A part is one module of this package, registered once in :mod:`agent.bench.parts.registry`; the runner
(:mod:`agent.bench.command.runner`) runs the parts chosen in ``--demos`` in the registry's order. Each
says its name (in ``--demos``, and where its skips and stops are recorded in ``run.json``), the ``part``
of the records it writes to ``requests.jsonl``, how many requests it has in flight to one backend, and how it runs: on every backend in turn
(:meth:`Context.each_backend`, for most parts) or once across backends (the orchestrator's agent asks
every backend). Every backend's share of a part runs under the runner's guard (:attr:`Context.guard`):
a crash is recorded and the run goes on, a backend that keeps failing is stopped. The options that only
one part reads are declared with their option (``part=`` in :mod:`agent.bench.command.declared`), once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from ...backends import Backend
    from ..clients.base import BackendClient
    from ..clients.pool import ClientPool
    from ..results.run import RunFile
    from .capacity import LevelPlan
    from .from_rig import FromRig


class Part(Protocol):
    """One part of the benchmark, as the runner sees it."""

    name: str
    """Its name in ``--demos``, and the key of its skips and stops in ``run.json``."""
    records: tuple[str, ...]
    """The ``part`` of every record it writes."""
    across_backends: bool
    """Whether it runs once across the backends (the orchestrator), not on each in turn under its record names."""

    def width(self, options: Any, plan: LevelPlan) -> int:
        """The most requests it has in flight to one backend (the clients are sized for the widest part run)."""
        ...

    async def run(self, ctx: Context) -> None:
        """The part on the run's backends; what it sends is recorded through ``ctx.emit``, what it skips
        in ``ctx.skipped``."""
        ...


@dataclass(frozen=True)
class Context:
    """What a part gets from the run (the runner makes one per run)."""

    backends: Sequence[Backend]
    options: Any
    """The run's options (:class:`agent.bench.command.options.BenchOptions`), read by attribute."""
    plan: LevelPlan
    """How the chat levels are measured (the levels, a target, repeats, the search)."""
    pool: ClientPool
    clients: Mapping[str, BackendClient]
    """Each backend's client, made when the run starts; one that could not be made is missing (why is in
    ``skipped``)."""
    rigs: Mapping[str, FromRig]
    """``--load-from rig``: the backends whose levels and open loop their rig sends (:mod:`.from_rig`), by name."""
    epoch: float
    """``time.perf_counter()`` when the run started: what the records' ``sent_s`` count from."""
    info: RunFile
    """``run.json`` as it is filled: a part sets its own block (``slo_search``, ``orchestrator``), as its model."""
    skipped: Mapping[str, dict[str, str]]
    """Per backend, the parts it took no part in and why (``run.json`` ``skipped``)."""
    stopped: Mapping[str, Any]
    """The backends stopped after failures in a row (``run.json`` ``stopped``)."""
    emit: Callable[[dict[str, Any]], None]
    """Append one record to ``requests.jsonl`` (and count it in the backend's failure streak)."""
    progress: Callable[..., None]
    """``progress(message, milestone=False)``: what the run is doing, on the terminal."""
    guard: Callable[[Backend, str, Awaitable[None]], Awaitable[None]]
    """``guard(backend, part, coroutine)``: one backend's share of a part, a crash recorded and a stop kept."""
    recorded: Callable[[str, str], Sequence[Any]] = lambda backend, part: ()
    """``recorded(backend, part)``: the records a part wrote for a backend so far, as their models (the open
    loop sizes ``--rate peak`` from the chat part's)."""

    def skip_all(self, part: str, reason: str) -> None:
        """Record that no backend takes part in ``part``, for ``reason`` (e.g. its data is not installed)."""
        for b in self.backends:
            self.skipped[b.name][part] = reason

    def client(self, b: Backend, part: str) -> BackendClient | None:
        """``b``'s client from the pool, or None with the failure recorded as ``part``'s skip."""
        try:
            return self.pool.client(b)
        except Exception as exc:  # e.g. no credentials for a boto3 client
            self.skipped[b.name][part] = f"failed: {type(exc).__name__}: {exc}"[:300]
            return None

    async def each_backend(self, part: str, start: Callable[[Backend, BackendClient], Awaitable[None]], *,
                           tools: bool = False) -> None:
        """``start(backend, client)`` under the guard on every backend in turn; a backend without a client,
        or without tool calls when the part needs them (``tools``), is recorded in ``skipped``."""
        for b in self.backends:
            client = self.client(b, part)
            if client is None:
                continue
            if tools and client.no_tools:
                self.skipped[b.name][part] = client.no_tools
                continue
            await self.guard(b, part, start(b, client))
