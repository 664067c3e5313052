"""A plain TCP relay: ``python -m agent.reach.relay --listen 127.0.0.1:P --target HOST:Q``.

It behaves like an SSM port forward as far as a client can tell: it always accepts on
the local port, and when nothing listens behind it, it closes the accepted connection
without a byte (the client sees ``RemoteDisconnected``, not "connection refused").
Used by tests in place of ``aws ssm start-session``; also handy to put a forward-like
hop in front of any local server.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys


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


async def _serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
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

    server = await asyncio.start_server(handle, *listen, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.reach.relay", description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT to accept on")
    parser.add_argument("--target", required=True, help="HOST:PORT to connect to")
    args = parser.parse_args(argv)
    asyncio.run(_serve(_split(args.listen), _split(args.target)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
