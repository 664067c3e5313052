"""A plain TCP relay: ``python -m agent.reach.relay --listen 127.0.0.1:P --target HOST:Q``.

It behaves like an SSM port forward as far as a client can tell: it always accepts on
the local port, and when nothing listens behind it, it closes the accepted connection
without a byte (the client sees ``RemoteDisconnected``, not "connection refused").
Used by tests in place of ``aws ssm start-session``; also handy to put a forward-like
hop in front of any local server.

Once it holds the port it prints ``relay: listening on HOST:P`` (what its
:class:`agent.reach.forwarding.RelayPortForward` waits for, as the SSM forward waits for the
plugin's ``Port P opened``); when the port cannot be bound (another program holds it) it
prints one line saying so and exits with status 1.

With ``--limit-bytes-per-s`` it is shaped like one SSM port-forwarding session, from the public figures
(:class:`Shaping`): every connection through it shares one byte rate per direction (the session is one
multiplexed stream, so its streams share it), and each read/send cycle from the client is followed by
``--cycle-delay-ms``. So the offline rehearsal can show a benchmark level that measures the tunnel, not the
server (``python -m rigs rehearse --offline --tunnel-limit BYTES_PER_S``).
"""

from __future__ import annotations

import asyncio
import errno
import signal
import socket
import sys
from dataclasses import dataclass

from kit.command import EXIT_FAILED, EXIT_OK, Parser
from kit.options import Option, Options


SSM_SESSION_BYTES_PER_S = 600_000
"""What one SSM port-forwarding session carries, the low end of the 0.6-0.8 MB/s users measured whatever the
instance size, with a raw socket server on the instance (github.com/aws/amazon-ssm-agent issue 664)."""
SSM_CYCLE_DELAY_S = 0.001
"""The session-manager-plugin sleeps 1 ms after every read/send cycle from the client to the agent
(``transferDataToServer``; github.com/aws/session-manager-plugin issue 145)."""
SHAPED_READ_BYTES = 4096
"""A shaped relay reads at most this much per cycle, so its pace is smooth at a rate of a few hundred KB/s."""


@dataclass(frozen=True, slots=True)
class Shaping:
    """How a relay is held to an SSM session's pace: a byte rate per direction, shared by every connection, and
    a delay after each read/send cycle from the client."""

    rate_bytes_per_s: float
    cycle_delay_s: float = SSM_CYCLE_DELAY_S

    def args(self) -> list[str]:
        """The relay's options for this shaping."""
        return ["--limit-bytes-per-s", f"{self.rate_bytes_per_s:g}", "--cycle-delay-ms",
                f"{self.cycle_delay_s * 1000:g}"]


class _Pace:
    """One direction of a shaped session: each chunk takes its turn on one shared timeline at the rate."""

    def __init__(self, rate_bytes_per_s: float) -> None:
        self.rate = rate_bytes_per_s
        self.free_at = 0.0

    async def take(self, size: int) -> None:
        now = asyncio.get_running_loop().time()
        self.free_at = max(self.free_at, now) + size / self.rate
        await asyncio.sleep(self.free_at - now)


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "127.0.0.1", int(port)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pace: _Pace | None = None,
                cycle_delay_s: float = 0.0) -> None:
    try:
        while data := await reader.read(65536 if pace is None else SHAPED_READ_BYTES):
            if pace is not None:
                await pace.take(len(data))
            writer.write(data)
            await writer.drain()
            if cycle_delay_s:
                await asyncio.sleep(cycle_delay_s)
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):  # pragma: no cover
            pass


def listen(address: tuple[str, int]) -> socket.socket:
    """A socket bound to and listening on ``address`` (OSError when it cannot be bound)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # Like asyncio's reuse_address: a port in TIME_WAIT is reusable, one another program
        # listens on is not (Linux refuses a second listener unless both set SO_REUSEPORT).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve(sock: socket.socket, target: tuple[str, int], shaping: Shaping | None = None) -> None:
    """Relay every connection accepted on ``sock`` to ``target`` until SIGTERM or SIGINT (shaped, when given)."""
    up, down = (None, None) if shaping is None else (_Pace(shaping.rate_bytes_per_s), _Pace(shaping.rate_bytes_per_s))
    cycle_delay_s = 0.0 if shaping is None else shaping.cycle_delay_s

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*target)
        except OSError:
            # Like SSM: the request is accepted and read, then the connection is dropped
            # without a response.
            try:
                await asyncio.wait_for(client_reader.read(65536), timeout=2)
            except (asyncio.TimeoutError, ConnectionError, OSError):
                pass
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, upstream_writer, up, cycle_delay_s),
                             _pipe(upstream_reader, client_writer, down))

    server = await asyncio.start_server(handle, sock=sock)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


class RelayOptions(Options):
    """The options of ``python -m agent.reach.relay``."""

    listen = Option(("--listen",), "HOST:PORT to accept on", required=True)
    target = Option(("--target",), "HOST:PORT to connect to", required=True)
    limit_bytes_per_s = Option(("--limit-bytes-per-s",), "shape it like one SSM session: at most this many bytes "
                               "a second each way, shared by every connection (off when not given)",
                               type=float, metavar="BYTES")
    cycle_delay_ms = Option(("--cycle-delay-ms",), "with --limit-bytes-per-s, the pause after each read/send "
                            "cycle from the client", default=SSM_CYCLE_DELAY_S * 1000, type=float, metavar="MS")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m agent.reach.relay", description=__doc__.splitlines()[0])
    RelayOptions.add_arguments(parser)
    args = RelayOptions.of(parser.parse_args(argv))
    host, port = _split(args.listen)
    try:
        sock = listen((host, port))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            print(f"relay: port {port} is taken ({reason}): another program listens on {host}:{port}",
                  file=sys.stderr, flush=True)
        else:
            print(f"relay: cannot listen on {host}:{port}: {reason}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    print(f"relay: listening on {host}:{port}", flush=True)
    shaping = None if args.limit_bytes_per_s is None else Shaping(args.limit_bytes_per_s, args.cycle_delay_ms / 1000)
    asyncio.run(serve(sock, _split(args.target), shaping))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
