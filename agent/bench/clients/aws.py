"""What the two AWS SDK kinds (Bedrock, SageMaker) share: boto3's clients are synchronous, so each call
runs in the backend's own thread pool (sized to the most requests in flight) and timestamps its
events in that thread as they arrive; a call that raises is a recorded failure, never an exception."""

from __future__ import annotations

import asyncio
import time
from abc import abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from .base import BackendClient, ClientContext
from .openai_wire import short
from .reply import ChatRequest, Reply, check

if TYPE_CHECKING:
    from ...backends import Backend


class SdkClient(BackendClient):
    """A backend reached through one boto3 client; a kind says which service, how a request is written,
    and how a streamed and a whole reply are read."""

    service: ClassVar[str]
    interfaces: ClassVar[tuple[str, str]]
    """How a request goes out, whole and streamed, as the records name it."""

    def __init__(self, backend: Backend, context: ClientContext) -> None:
        super().__init__(backend, context)
        self.client = context.boto_client(backend, self.service)
        self._calls = ThreadedCalls(max(4, context.width), backend.kind)

    def interface(self, request: ChatRequest) -> str:
        return self.interfaces[request.stream]

    async def send(self, request: ChatRequest) -> Reply:
        args = self._arguments(request)
        reply = await self._calls.run(lambda r: self._stream(r, args) if request.stream else self._whole(r, args))
        check(reply)
        return reply

    @abstractmethod
    def _arguments(self, request: ChatRequest) -> Any: ...

    @abstractmethod
    def _stream(self, reply: Reply, arguments: Any) -> None: ...

    @abstractmethod
    def _whole(self, reply: Reply, arguments: Any) -> None: ...

    async def close(self) -> None:
        self._calls.close()


class ThreadedCalls:
    """Runs blocking SDK calls for one backend, each filling one :class:`Reply`."""

    def __init__(self, max_workers: int, prefix: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=prefix)

    async def run(self, call: Callable[[Reply], None]) -> Reply:
        """``call(reply)`` in a worker thread; whatever it raises fails the reply with its reason."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, _timed, call)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _timed(call: Callable[[Reply], None]) -> Reply:
    reply = Reply.start()
    try:
        call(reply)
    except Exception as exc:  # botocore raises many types; every one is a recorded failure
        reply.fail_on(exc)
    reply.t_done = time.perf_counter()
    return reply


def response_metadata(reply: Reply, resp: Any) -> None:
    """The HTTP status and request id of an SDK response."""
    meta = (resp.get("ResponseMetadata") or {}) if isinstance(resp, dict) else {}
    reply.status = meta.get("HTTPStatusCode")
    reply.request_id = meta.get("RequestId")


def stream_error(event: Any) -> str:
    """What an event other than the expected ones says (a stream exception such as
    ``modelStreamErrorException`` or SageMaker's ``ModelStreamError``)."""
    if not isinstance(event, dict) or not event:
        return f"malformed stream event: {short(event)[:120]}"
    name, body = next(iter(event.items()))
    message = (body.get("message") or body.get("Message")) if isinstance(body, dict) else body
    return f"stream error {name}: {short(message)}"
