"""One client per backend for the whole run, and the one boto3 session and client per AWS backend
they share (:class:`ClientPool`).

Create it inside the event loop that runs the parts (``AsyncOpenAI`` and aiohttp clients belong to
one loop) and close it with :meth:`ClientPool.aclose` (or ``async with``). Timeouts and retries are
explicit (:class:`~agent.bench.clients.base.ModelSettings`) and recorded with the run.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

from .base import BackendClient, ModelSettings
from .registry import make_client

if TYPE_CHECKING:
    import boto3

    from ...backends import Backend

logger = logging.getLogger(__name__)


class ClientPool:
    """The run's clients.

    Args:
        backends: The run's backends.
        session: The boto3 session for Bedrock and SageMaker (None: a default session is made
            once, when the first AWS backend needs it).
        settings: Agent-model settings (timeouts, retries, pool sizes).
        request_timeout_s: Whole-request timeout of one timed request.
        width: The most requests any part has in flight to one backend.
    """

    def __init__(self, backends: Sequence[Backend], session: boto3.Session | None = None,
                 settings: ModelSettings | None = None, *, request_timeout_s: float = 300.0, width: int = 1) -> None:
        self.backends = {b.name: b for b in backends}
        self.settings = settings or ModelSettings()
        self.request_timeout_s = request_timeout_s
        self.width = width
        self._session = session
        self._boto: dict[str, Any] = {}
        self._clients: dict[str, BackendClient] = {}

    async def __aenter__(self) -> ClientPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def session(self) -> boto3.Session:
        if self._session is None:
            import boto3

            self._session = boto3.Session()
        return self._session

    def boto_client(self, backend: Backend, service: str) -> Any:
        """The backend's one ``service`` client, in its region."""
        if backend.name not in self._boto:
            region = backend.region or backend.metadata.get("region")
            self._boto[backend.name] = self.session().client(service, region_name=region,
                                                             config=self.settings.boto_config())
        return self._boto[backend.name]

    def client(self, backend: Backend | str) -> BackendClient:
        """The backend's one client, made on first use (an AWS client may raise: no credentials)."""
        b = self.backends[backend] if isinstance(backend, str) else backend
        if b.name not in self._clients:
            self._clients[b.name] = make_client(b, self)
        return self._clients[b.name]

    def notes(self) -> list[str]:
        """What the clients learned about their servers, ``name: note`` each."""
        return [f"{name}: {note}" for name, c in self._clients.items() for note in c.notes]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        for client in self._boto.values():
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                logger.debug("closing a boto3 client failed", exc_info=True)
        self._boto.clear()
