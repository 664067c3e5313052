"""The load generator that runs on a rig (``--load-from rig``): a job's chat bodies sent to the server on the
instance's loopback, closed (exactly ``concurrency`` in flight) or open (each at its offset), one line of
results per reply.

``python -m agent.bench.parts.load_generator JOB OUT`` reads the job (JSON, :data:`FORMAT`), sends it, and writes
``OUT`` as JSON lines: first the clock it measured by (``perf_s`` and ``wall_s`` at one instant, and the host),
then one line per request (``i``, the reply's fields as :class:`~agent.bench.clients.reply.Reply` names them,
``in_flight`` when sent, and in an open job ``due_s``, when it was due on the same clock). The agent reads them back into the run's records
(:mod:`agent.bench.parts.from_rig`).

It sends through the benchmark's own transport, event reader and failure rule
(:mod:`agent.bench.clients.transport`, :func:`agent.bench.clients.reply.check`), so a level loaded from the rig and
one loaded through the tunnel are timed alike. It imports the standard library and aiohttp only: on a rig it runs
under the Python of the server's own image (vLLM's images carry aiohttp), shipped as the rig's load generator asset
(``stacks/parts/load_generator.py`` lists its files).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kit.command import EXIT_OK, EXIT_USAGE, Parser

from ..clients.reply import check
from ..clients.transport import HttpTransport
from .sending import in_flight, send_on_schedule

FORMAT = 1
"""The job's and the results' format: the agent refuses results of another."""


class JobError(ValueError):
    """A job this load generator cannot run."""


def read_job(path: Path) -> dict[str, Any]:
    """The job at ``path``, checked for what this version needs."""
    job = json.loads(path.read_text(encoding="utf-8"))
    if job.get("format") != FORMAT:
        raise JobError(f"job format {job.get('format')!r}; this load generator reads format {FORMAT}")
    missing = [k for k in ("url", "mode", "bodies", "timeout_s") if k not in job]
    if missing or job["mode"] not in ("closed", "open"):
        raise JobError(f"job lacks {', '.join(missing)}" if missing else f"job mode {job['mode']!r}: closed or open")
    if job["mode"] == "open" and len(job.get("offsets_s") or ()) != len(job["bodies"]):
        raise JobError("an open job needs one offset per body")
    return job


async def run(job: dict[str, Any], write: Any) -> None:
    """Send ``job``; ``write(line)`` each result line as it comes (the clock first)."""
    bodies = job["bodies"]
    width = int(job.get("concurrency") or job.get("max_in_flight") or 1)
    transport = HttpTransport(job["url"], timeout_s=float(job["timeout_s"]), max_connections=max(8, width),
                              api_key=job.get("api_key"))
    write({"format": FORMAT, "perf_s": time.perf_counter(), "wall_s": time.time(), "host": socket.gethostname()})
    busy = 0

    async def send(i: int, due: float | None = None, *_: Any) -> None:
        nonlocal busy
        busy += 1
        sent_with = busy
        try:
            reply = await transport.post(bodies[i], stream=bool(bodies[i].get("stream", True)))
        finally:
            busy -= 1
        check(reply)
        write({"i": i, "in_flight": sent_with, "due_s": due, "reply": asdict(reply)})

    try:
        if job["mode"] == "closed":
            await in_flight(range(len(bodies)), width, send)
        else:
            await send_on_schedule(job["offsets_s"], send, max_in_flight=width)
    finally:
        await transport.close()


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m agent.bench.parts.load_generator",
                    description="Send a load job to the server it names; one JSON line per reply.")
    parser.add_argument("job", type=Path, help="the job (JSON)")
    parser.add_argument("out", type=Path, help="where the result lines go")
    args = parser.parse_args(argv)
    try:
        job = read_job(args.job)
    except (OSError, ValueError) as exc:
        print(f"load generator: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with args.out.open("w", encoding="utf-8") as out:
        def write(line: dict[str, Any]) -> None:
            out.write(json.dumps(line) + "\n")
        asyncio.run(run(job, write))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
