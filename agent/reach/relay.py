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
"""

from __future__ import annotations

import asyncio
import errno
import signal
import socket
import sys

from kit.command import EXIT_FAILED, EXIT_OK, Parser
from kit.options import Option, Options


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "127.0.0.1", int(port)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
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


async def serve(sock: socket.socket, target: tuple[str, int]) -> None:
    """Relay every connection accepted on ``sock`` to ``target`` until SIGTERM or SIGINT."""
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
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))

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
    asyncio.run(serve(sock, _split(args.target)))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
