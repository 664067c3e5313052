"""Serving a test server's aiohttp application on 127.0.0.1 from its own thread and event loop.

What is served is the subclass's (:meth:`LoopbackServer.app`; :class:`.openai_fake.FakeOpenAI` is
the one of these tests); it is used as ``with Server(...) as server: ... server.port``, from sync
and async tests alike.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Self

from aiohttp import web


class LoopbackServer:
    """Serves :meth:`app` on a free loopback port (``port``, once bound) until the ``with`` block ends.

    Subclasses implement :meth:`app`, which runs in the serving thread with its event loop current,
    and may set ``runner_options`` (``aiohttp.web.AppRunner``'s).
    """

    start_timeout_s = 30.0
    stop_timeout_s = 30.0
    runner_options: dict[str, Any] = {}

    def __init__(self) -> None:
        self.port = 0
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
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(self.start_timeout_s):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(self.stop_timeout_s)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
