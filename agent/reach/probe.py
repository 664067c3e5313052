"""Readiness: wait until a real chat request to an OpenAI-compatible server is answered.

Used for the local rig and for every port forward. A forward to a server that is not
listening yet accepts the connection and then drops it (``RemoteDisconnected``), a
Neuron server that is still loading answers 503, a server that is not started yet
refuses the connection: all of these mean "not yet", and the last one is kept as the
reason when the deadline passes.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable

from kit.waiting import WaitTimeout, poll_until

PROBE_PROMPT = "Say OK."
PROBE_MAX_TOKENS = 1
PROBE_REQUEST_TIMEOUT_S = 60.0
"""One probe request may take this long (the reference saw a 36 s cold first request on trn1)."""
PROBE_INTERVAL_S = 0.25


class NotReadyError(RuntimeError):
    """The server did not answer a real request before the deadline."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The first answered probe: how long the wait took and how long that request took."""

    waited_s: float
    request_s: float
    attempts: int

    def describe(self) -> str:
        return (f"answered a {PROBE_MAX_TOKENS}-token chat request after {self.waited_s:.1f} s "
                f"({self.attempts} attempt(s), the answered one took {self.request_s:.2f} s)")


def chat_once(base_url: str, model: str, timeout_s: float = PROBE_REQUEST_TIMEOUT_S) -> dict:
    """POST one tiny chat completion to ``<base_url>/chat/completions`` and return its JSON.

    Raises:
        urllib.error.HTTPError: the server answered with an error status.
        OSError / http.client.HTTPException: no HTTP answer (refused, dropped, timed out).
        ValueError: the answer is not a chat completion.
    """
    body = json.dumps({
        "model": model,
        "messages": [{"role": "user", "content": PROBE_PROMPT}],
        "max_tokens": PROBE_MAX_TOKENS,
        "temperature": 0.0,
    }).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (http only)
        data = json.loads(response.read())
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise ValueError(f"not a chat completion: {str(data)[:200]}")
    return data


def describe_error(exc: BaseException) -> str:
    """A one-line reason, naming the failure signatures that matter for forwards."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, BaseException) else exc
    if isinstance(exc, http.client.RemoteDisconnected):
        return "RemoteDisconnected (the forward is open, the server behind it is not listening yet)"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return f"{type(exc).__name__} (connection dropped; the server behind a forward is not listening yet)"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listening on the local port yet)"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"


def wait_until_answered(base_url: str, model: str, timeout_s: float,
                        alive: Callable[[], str | None] = lambda: None,
                        request_timeout_s: float = PROBE_REQUEST_TIMEOUT_S) -> ProbeResult:
    """Send a real chat request until one is answered with 200 and a completion.

    Args:
        base_url: the ``.../v1`` root.
        model: model id sent in the request.
        timeout_s: overall deadline.
        alive: returns None while whatever serves the URL is still running, or a reason
            why it stopped (then waiting ends at once).
        request_timeout_s: per-request timeout (capped by the remaining time).

    Raises:
        NotReadyError: the deadline passed or the server process stopped; the message
            carries the last reason seen.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    attempts = 0
    last = "no attempt made"

    def given_up(stopped: str | None) -> NotReadyError:
        return NotReadyError(f"{stopped} (last probe: {last})" if stopped is not None
                             else f"no answer within {timeout_s:.0f} s; last probe: {last}")

    def answered() -> ProbeResult | None:
        nonlocal attempts, last
        stopped = alive()
        remaining = deadline - time.monotonic()
        if stopped is not None or remaining <= 0:
            raise given_up(stopped)
        attempts += 1
        sent = time.monotonic()
        try:
            chat_once(base_url, model, timeout_s=max(0.5, min(request_timeout_s, remaining)))
        except urllib.error.HTTPError as exc:
            if 400 <= exc.code < 500 and exc.code not in (408, 429):
                # The server is up and refuses the request (wrong model id, wrong path):
                # waiting will not change that.
                raise NotReadyError(f"the server answered {describe_error(exc)}: {_body(exc)}") from None
            last = describe_error(exc)
            return None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            last = describe_error(exc)
            return None
        now = time.monotonic()
        return ProbeResult(waited_s=now - start, request_s=now - sent, attempts=attempts)

    try:
        return poll_until(answered, timeout_s=timeout_s, interval_s=PROBE_INTERVAL_S, what=base_url)
    except WaitTimeout:  # the deadline passed during the last probe: did the server stop meanwhile?
        raise given_up(alive()) from None


def _body(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read(300).decode(errors="replace").strip() or "(empty body)"
    except (OSError, http.client.HTTPException):
        return "(no body)"
