"""``--load-from rig``: a chat level or the open loop's window sent by the rig's own load generator on the instance
(:mod:`agent.bench.parts.load_generator`, run through :mod:`agent.reach.run_command`), not from this machine through
the port forwards, so its figures do not depend on the tunnel; its replies come back into the same records.

A job is the level's (or the window's) requests drawn here from the backend's :class:`~agent.bench.parts.chat.Load`
exactly as this machine would send them, as chat-completion bodies for the server at the instance's own loopback.
The load generator times each reply by the instance's clock; its times are moved onto this run's clock by the
instant it measured both clocks at (``perf_s``, ``wall_s``) and this machine's own (so ``sent_s`` places a request
on the run's timeline as well as the two wall clocks agree; every duration is the instance's own). Each record says
``load_from: rig``. A whole job runs at once: a level cannot stop part-way when its misses decide it, and the budget
is checked between levels. Sessions of several turns are not sent from the rig (the run refuses the option with
such a workload).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from ..clients.openai_wire import chat_body
from ..clients.reply import ChatRequest, Reply
from .load_generator import FORMAT

if TYPE_CHECKING:
    from agent.reach.run_command import RigCommand

    from ...backends import Backend

    from .sending import Done

RIG = "rig"
TIMES = ("t_sent", "t_first", "t_last", "t_done")
REPLY_FIELDS = frozenset(f.name for f in fields(Reply))


class Draws(Protocol):
    """A backend's share of the workload (:class:`agent.bench.parts.chat.Load`), drawn without sending."""

    def draw(self, where: Mapping[str, Any]) -> tuple[ChatRequest, dict[str, Any]] | None: ...


class FromRigError(RuntimeError):
    """The rig's results do not fit the job that was sent."""


@dataclass
class FromRig:
    """One backend's load sent from its rig.

    Attributes:
        command: how a job runs on the rig (Run Command, or offline its stand-in).
        url: the chat-completions URL of the server as the instance reaches it.
        model: the model the bodies name.
        timeout_s: each request's timeout.
    """

    command: RigCommand
    url: str
    model: str | None
    timeout_s: float

    @property
    def where(self) -> str:
        return self.command.where

    def _job(self, requests: list[ChatRequest], **more: Any) -> dict[str, Any]:
        return {"format": FORMAT, "url": self.url, "timeout_s": self.timeout_s,
                "bodies": [chat_body(r, self.model) for r in requests], **more}

    async def _run(self, job: dict[str, Any]) -> tuple[dict[int, tuple[Reply, dict[str, Any]]], float]:
        """The job's replies by index, each on this run's clock with its line, and the clock's shift."""
        try:
            lines = await asyncio.to_thread(self.command.run, job)
        except asyncio.CancelledError:  # Ctrl-C: the job is cancelled where it runs, its thread ends within a second
            self.command.stop()
            raise
        if not lines or lines[0].get("format") != FORMAT:
            raise FromRigError(f"the rig's load generator answered in format {lines[0].get('format') if lines else None}"
                               f", not {FORMAT}: the rig's load generator asset is of another version (deploy the "
                               "rig again)")
        clock = lines[0]
        shift = (clock["wall_s"] - clock["perf_s"]) - (time.time() - time.perf_counter())
        return {int(line["i"]): (_reply(line["reply"], shift), line) for line in lines[1:]}, shift

    async def level(self, load: Draws, concurrency: int, total: int,
                    each: Callable[[int], tuple[Mapping[str, Any], Done]]) -> int:
        """``total`` requests of ``load`` with ``concurrency`` in flight, sent from the rig; returns how many."""
        drawn: list[tuple[ChatRequest, dict[str, Any], Done]] = []
        for i in range(1, total + 1):
            where, done = each(i)
            got = load.draw(where)
            if got is None:
                break
            drawn.append((*got, done))
        if not drawn:
            return 0
        replies, _ = await self._run(self._job([r for r, _, _ in drawn], mode="closed", concurrency=concurrency))
        for k, (request, extra, done) in enumerate(drawn):
            done(_answer(replies, k), request, {**extra, "load_from": RIG})
        return len(drawn)

    async def window(self, requests: list[tuple[ChatRequest, dict[str, Any]]], offsets: list[float],
                     max_in_flight: int, emit: Callable[[Reply, ChatRequest, dict[str, Any], int, float], None]
                     ) -> None:
        """The open loop's requests, each due at its offset, sent from the rig; ``emit(reply, request, fields,
        in_flight, due)`` each (``due`` on this run's clock)."""
        job = self._job([r for r, _ in requests], mode="open", offsets_s=list(offsets), max_in_flight=max_in_flight)
        replies, shift = await self._run(job)
        for k, (request, extra) in enumerate(requests):
            reply = _answer(replies, k)
            line = replies[k][1] if k in replies else {}
            due = line["due_s"] + shift if line.get("due_s") is not None else reply.t_sent
            emit(reply, request, {**extra, "load_from": RIG}, int(line.get("in_flight") or 1), due)


def for_backend(b: Backend, load_from: str, timeout_s: float, run_id: str) -> FromRig | None:
    """``b``'s load sent from its rig, with ``--load-from rig`` where it has one (its ``rig_load`` metadata, set
    when its forward opened); None: from here."""
    spec = b.metadata.get("rig_load")
    if load_from != RIG or not spec:
        return None
    from agent.reach.run_command import LocalRigCommand, SsmRigCommand

    command: RigCommand = LocalRigCommand() if spec["command"] == "local" else SsmRigCommand(
        instance_id=spec["instance_id"], region=spec["region"], bucket=spec["bucket"],
        generator_url=spec["generator_url"], generator_sha256=spec["generator_sha256"], container=spec["container"],
        run_id=run_id)
    return FromRig(command, spec["url"], b.model_id, timeout_s)


def _reply(fields_: Mapping[str, Any], shift: float) -> Reply:
    known = {k: v for k, v in fields_.items() if k in REPLY_FIELDS}
    for name in TIMES:
        if known.get(name) is not None:
            known[name] = known[name] + shift
    known["chunk_times"] = [t + shift for t in known.get("chunk_times") or ()]
    return Reply(**known)


def _answer(replies: Mapping[int, tuple[Reply, dict[str, Any]]], k: int) -> Reply:
    """Reply ``k``, or one that says the rig sent back none for it."""
    if k in replies:
        return replies[k][0]
    now = time.perf_counter()
    return Reply(t_sent=now, wall_sent=time.time(), t_done=now,
                 error="the rig's load generator returned no result for this request")
