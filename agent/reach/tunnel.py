"""What one port forward carries, and how many forwards a run's widest level needs.

Every EC2 rig is reached through an SSM port forward, and users measured one such session at about
0.6-0.8 MB/s whatever the instance size (github.com/aws/amazon-ssm-agent issue 664), the
session-manager-plugin pacing every read/send cycle with a 1 ms sleep (github.com/aws/session-manager-plugin
issue 145). A streamed chat completion is about 200-250 bytes per token, so one session may carry fewer tokens
a second than the server serves at its higher levels. Before the benchmark, for each EC2 backend:

1. :func:`measure`: through a forward of the same kind to the rig's byte source (``rigs/userdata/byte_source.sh``,
   on the instance's loopback at :data:`BYTE_SOURCE_PORT`; offline a local copy of the same program,
   :class:`LocalByteSource`), bytes a second down and up and events a second, about a second each.
2. :func:`stream_need`: one streamed chat request of :data:`SIZING_TOKENS` tokens through the serving forward,
   its bytes a second: what one stream needs.
3. :func:`pool_size`: enough forwards that the widest level needs at most :data:`POOL_SHARE` of the pool's
   capacity (at most :data:`MAX_FORWARDS`); the client spreads its requests over them
   (:class:`agent.bench.clients.transport.HttpTransport`).

The figures go into the backend's metadata (``tunnel``, in ``run.json``); the summary marks a level whose
carried bytes reach :data:`BOUND_SHARE` of the pool's capacity as bound by the tunnel
(:mod:`agent.bench.analysis.blocks.tunnel`).
"""

from __future__ import annotations

import http.client
import json
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kit.processes import spawn, stop

from ..bench.results.constants import TUNNEL_BOUND_SHARE

BYTE_SOURCE_PORT = 8790
"""Where the rig's byte source listens on its loopback (``BYTE_SOURCE_PORT`` in rigs/userdata/byte_source.sh)."""
BYTE_SOURCE_SCRIPT = Path(__file__).resolve().parents[2] / "rigs" / "userdata" / "byte_source.sh"
BOUND_SHARE = TUNNEL_BOUND_SHARE
"""A level whose carried bytes reach this share of the pool's measured capacity is bound by the tunnel."""
POOL_SHARE = 0.5
"""The pool is sized so the widest level needs at most this share of its capacity: headroom under
:data:`BOUND_SHARE`, as one stream's need is measured alone and a level's streams are not spread exactly evenly."""
MAX_FORWARDS = 8
"""The most forwards one backend is reached through (each is one SSM session, one plugin process)."""
MEASURE_S = 1.0
"""About how long each direction is measured."""
EVENT_BYTES = 225
"""The size of one event of the events measure: a streamed chat-completion event per token is about 200-250
bytes (id, model, choices, ``data:`` framing)."""
SIZING_TOKENS = 32
"""The length of the sizing request (one stream's need)."""
TIMEOUT_S = 30.0
MOST_MEASURED_BYTES = 32 << 20
"""Each direction stops after this many bytes (a forward without a cap is done at once); events after a tenth."""


class TunnelError(RuntimeError):
    """The byte source did not answer through the forward."""


@dataclass(frozen=True, slots=True)
class Capacity:
    """What one forward carried: bytes a second each way and events a second, and the forward's kind."""

    kind: str
    down_bytes_per_s: float
    up_bytes_per_s: float
    events_per_s: float
    seconds: float

    def record(self) -> dict[str, Any]:
        return {key: round(value, 3) if isinstance(value, float) else value for key, value in asdict(self).items()}


def _connection(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)


def _down(port: int, seconds: float) -> float:
    """Bytes a second read off ``GET /bytes`` for about ``seconds`` (from the first byte), or until
    :data:`MOST_MEASURED_BYTES` came (a forward without a cap is done at once)."""
    conn = _connection(port)
    try:
        conn.request("GET", f"/bytes?n={1 << 32}")
        response = conn.getresponse()
        first = response.read1(65536)
        if response.status != 200 or not first:
            raise TunnelError(f"GET /bytes answered {response.status}")
        started, total = time.perf_counter(), 0
        while (elapsed := time.perf_counter() - started) < seconds and total < MOST_MEASURED_BYTES:
            chunk = response.read1(65536)
            if not chunk:
                break
            total += len(chunk)
        return total / elapsed if elapsed > 0 else 0.0
    finally:
        conn.close()


def _up(port: int, size: int) -> float:
    """Bytes a second of a ``POST /sink`` of ``size`` bytes, until the byte source says it read them all."""
    conn = _connection(port)
    try:
        block, left = b"0" * 16384, size
        started = time.perf_counter()
        conn.putrequest("POST", "/sink")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        while left > 0:
            conn.send(block[:min(left, len(block))])
            left -= min(left, len(block))
        got = int(conn.getresponse().read() or 0)
        elapsed = time.perf_counter() - started
        if got != size:
            raise TunnelError(f"POST /sink read {got} of {size} bytes")
        return size / elapsed
    finally:
        conn.close()


def _events(port: int, count: int) -> float:
    """Events a second of ``GET /events`` of ``count`` events of :data:`EVENT_BYTES` bytes (from the first byte)."""
    conn = _connection(port)
    try:
        conn.request("GET", f"/events?n={count}&size={EVENT_BYTES}")
        response = conn.getresponse()
        if response.status != 200 or not response.read1(65536):
            raise TunnelError(f"GET /events answered {response.status}")
        started, total = time.perf_counter(), 0
        while chunk := response.read1(65536):
            total += len(chunk)
        elapsed = time.perf_counter() - started
        return total / EVENT_BYTES / elapsed if elapsed > 0 else 0.0
    finally:
        conn.close()


def measure(port: int, kind: str, seconds: float = MEASURE_S) -> Capacity:
    """One forward's capacity through the byte source behind local ``port``: down, then up and events each sized
    to take about ``seconds`` at the rate down.

    Raises:
        TunnelError: the byte source did not answer as it should (OSError and HTTPException included).
    """
    started = time.perf_counter()
    try:
        down = _down(port, seconds)
        size = max(4096, min(MOST_MEASURED_BYTES, int(down * seconds)))
        up = _up(port, size)
        events = _events(port, max(20, size // 10 // EVENT_BYTES))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise TunnelError(f"the byte source did not answer through 127.0.0.1:{port}: {exc}") from None
    return Capacity(kind=kind, down_bytes_per_s=down, up_bytes_per_s=up, events_per_s=events,
                    seconds=time.perf_counter() - started)


def stream_need(base_url: str, model: str, api_key: str | None = None) -> float | None:
    """Bytes a second one streamed chat request of :data:`SIZING_TOKENS` tokens read through ``base_url``, from its
    first byte to its last (None: it did not stream, or failed)."""
    rest = base_url.split("://", 1)[-1]
    address, _, prefix = rest.partition("/")
    host, _, port = address.rpartition(":")
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Count from 1 to 100."}],
                       "max_tokens": SIZING_TOKENS, "stream": True, "temperature": 0.0}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S)
    try:
        conn.request("POST", f"/{prefix}/chat/completions".replace("//", "/"), body=body, headers=headers)
        response = conn.getresponse()
        first = response.read1(65536)
        started, total = time.perf_counter(), 0
        while chunk := response.read1(65536):
            total += len(chunk)
        elapsed = time.perf_counter() - started
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    if response.status != 200 or not first or elapsed <= 0 or total == 0:
        return None
    return total / elapsed


def pool_size(capacity_bytes_per_s: float, need_bytes_per_s: float | None, width: int,
              most: int = MAX_FORWARDS) -> int:
    """Forwards enough that ``width`` streams of ``need_bytes_per_s`` each use at most :data:`POOL_SHARE` of their
    capacity together, between 1 and ``most`` (1 when the need is not known)."""
    if need_bytes_per_s is None or capacity_bytes_per_s <= 0:
        return 1
    return max(1, min(most, math.ceil(width * need_bytes_per_s / (POOL_SHARE * capacity_bytes_per_s))))


def byte_source_program() -> str:
    """The byte source's Python program, as ``byte_source_program`` in rigs/userdata/byte_source.sh prints it (the
    text of its quoted here-document)."""
    text = BYTE_SOURCE_SCRIPT.read_text(encoding="utf-8")
    return text.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0] + "\n"


class LocalByteSource:
    """The rig's byte source (the very program its boot starts) on this machine's loopback, for a forward that
    reaches a stand-in rather than a rig; a context manager that stops it on exit."""

    def __init__(self) -> None:
        self._process = spawn([sys.executable, "-", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, guard=True)
        assert self._process.stdin is not None and self._process.stdout is not None
        with self._process.stdin:  # python reads the whole program before it runs it
            self._process.stdin.write(byte_source_program().encode())
        line = self._process.stdout.readline().decode()
        if "listening on" not in line:
            stop(self._process)
            raise TunnelError(f"the local byte source did not start (it said: {line.strip() or 'nothing'})")
        self.port = int(line.rsplit(":", 1)[1])

    def close(self) -> None:
        stop(self._process)
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> LocalByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
