"""Serving a test server's aiohttp application on 127.0.0.1 from its own thread and event loop.

The fake servers of these tests (:mod:`.fakes`, :mod:`.faults`, :mod:`.paced`, :mod:`.bfcl_server`)
differ in what they answer, not in how they are served; each ``Running*`` class says what to
serve (:meth:`LoopbackServer.app`) and is used as ``with RunningX(...) as server: ... server.port``,
from sync and async tests alike.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web


class LoopbackServer:
    """Serves :meth:`app` on a free loopback port until the ``with`` block ends.

    Subclasses set ``self.server`` (an object with a ``port`` attribute, set here once the port is
    bound) before calling ``super().__init__()``, and implement :meth:`app`, which runs in the
    serving thread with its event loop current.
    """

    start_timeout_s = 30.0
    stop_timeout_s = 30.0
    runner_options: dict[str, Any] = {}
    server: Any

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        raise NotImplementedError

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self.app(), access_log=None, **self.runner_options)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.server.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> Any:
        self._thread.start()
        if not self._ready.wait(self.start_timeout_s):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self.server

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(self.stop_timeout_s)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def chat_app(handle: Any, get: Any = None) -> web.Application:
    """An application answering ``POST /v1/chat/completions`` with ``handle`` (and every ``GET`` with ``get``)."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    if get is not None:
        app.router.add_get("/{path:.*}", get)
    return app
