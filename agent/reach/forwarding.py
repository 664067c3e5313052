"""Port forwards from a local port to a rig's serving port.

:class:`PortForward` is the interface the rest of the agent uses. The real one,
:class:`SsmPortForward`, runs ``aws ssm start-session --document-name
AWS-StartPortForwardingSession`` (AWS CLI + session-manager-plugin); tests use
:class:`RelayPortForward`, a plain TCP relay in a child process with the same
behaviour: it accepts on the local port and drops the connection when nothing listens
behind it (what SSM does: the client sees ``RemoteDisconnected``, not "refused").

Both run their helper in its own process group and share the supervision: open waits
until the helper says it holds the local port (a line in its output: another program may
have taken a port that looked free), then until a real chat request through the forward is
answered; a helper that exits while
the forward is in use is restarted on the same local port (SSM sessions end after long
idle or when credentials expire); close stops the whole group, so no
session-manager-plugin outlives the command.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import socket
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import IO, AbstractSet, Callable, Iterator, Sequence

from kit.processes import spawn, stop
from kit.waiting import WaitTimeout, poll_until
from rigs import local_tools

from .relay import Shaping
from .probe import NotReadyError, ProbeResult, wait_until_answered

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
READY_TIMEOUT_S = 180.0
"""Default wait for the first answered request through a new forward."""
SUPERVISE_INTERVAL_S = 0.5
MAX_REOPENS = 20
"""A forward that drops more often than this in one run is given up."""
REOPEN_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0)
HELD_POLL_S = 0.05
"""How often a forward being opened checks whether its helper still runs (the marker wakes it at once)."""
OUTPUT_TAIL_LINES = 5
"""How many of a helper's last output lines an error quotes."""

class ForwardError(RuntimeError):
    """A forward could not be opened, or stopped answering."""


class PortTaken(ForwardError):
    """The forward's helper could not listen on its local port: another program holds it."""


class ForwardToolsMissing(ForwardError):
    """AWS CLI v2 or the session-manager-plugin is not installed (v1 of the AWS CLI is not enough)."""


def check_ssm_tools(which: Callable[[str], str | None] = shutil.which) -> None:
    """Fail before anything starts when SSM port forwards cannot work here.

    Raises:
        ForwardToolsMissing: the message names every missing tool (or the v1 CLI found), with links.
    """
    problems = [tool for tool in local_tools.ssm_tools(which) if not tool.ok]
    if problems:
        raise ForwardToolsMissing("SSM port forwards to the EC2 rigs need AWS CLI v2 and the Session Manager "
                                  "plugin on PATH: " + "; ".join(f"{t.name}: {t.problem}; {t.fix}" for t in problems)
                                  + ". Or pass the rig's URL yourself (e.g. G6_URL), or leave the EC2 rigs out "
                                  "with --backends.")


class PortForward(ABC):
    """A local port that reaches a rig's serving port, usable as a context manager.

    Attributes:
        name: the backend it serves (for messages).
        local_port: the local port; it stays the same when the forward is reopened.
        base_url: ``http://127.0.0.1:<local_port>/v1``.
        reopens: how many times it was reopened after dropping.
    """

    name: str
    local_port: int
    reopens: int

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.local_port}/v1"

    @abstractmethod
    def start(self) -> None:
        """Start the forward without waiting for it (``open`` calls it; calling it first is allowed)."""

    @abstractmethod
    def open(self, model_id: str, timeout_s: float = READY_TIMEOUT_S) -> ProbeResult:
        """Start the forward if needed and wait until a chat request for ``model_id`` through it is answered.

        Raises:
            ForwardError: it did not come up, or the server behind it did not answer in time.
        """

    @abstractmethod
    def close(self) -> None:
        """Stop the forward and everything it started. Safe to call more than once."""

    @abstractmethod
    def describe(self) -> str:
        """How the forward reaches its target, in one line (for ``--list`` and the report)."""

    def __enter__(self) -> "PortForward":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _HelperOutput:
    """A helper's output, read in a thread: copied to the forward's log, its last lines kept, its marker watched.

    Read through a pipe rather than from the log file, so a forward without a log leaves no
    file behind, whatever happens to this program.
    """

    def __init__(self, stream: IO[bytes], marker: str, log: IO[bytes] | None) -> None:
        self.held = threading.Event()
        self._lines: deque[str] = deque(maxlen=OUTPUT_TAIL_LINES)
        self._thread = threading.Thread(target=self._read, args=(stream, marker, log), name="forward-output",
                                        daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes], marker: str, log: IO[bytes] | None) -> None:
        with stream:
            for raw in iter(stream.readline, b""):
                if log is not None:
                    try:
                        log.write(raw)
                        log.flush()
                    except ValueError:  # the forward closed its log
                        log = None
                line = raw.decode(errors="replace").strip()
                if line:
                    self._lines.append(line)
                if marker in line:
                    self.held.set()

    def tail(self) -> str:
        """Its last lines, on one line."""
        return " | ".join(list(self._lines)) or "nothing"

    def finish(self, timeout_s: float = 2.0) -> None:
        """Wait until everything it wrote is read (its group has exited, or is stopped)."""
        self._thread.join(timeout_s)


class ProcessPortForward(PortForward):
    """A forward kept up by a helper process in its own group, supervised by a thread.

    The local port is trusted only once the helper says it holds it (:meth:`ready_marker` in
    its output): a port that looked free a moment earlier may have been taken since (another
    run, another test), and then the helper fails to bind and exits, while a probe of the port
    would be answered by whatever the other program forwards to.
    """

    def __init__(self, name: str, local_port: int, log_dir: Path | None = None) -> None:
        self.name = name
        self.local_port = local_port
        self.reopens = 0
        self._log_path = (log_dir / f"forward-{name}.log") if log_dir else None
        self._log: IO[bytes] | None = None
        self._process: subprocess.Popen | None = None
        self._output: _HelperOutput | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._supervisor: threading.Thread | None = None
        self.last_drop: str | None = None

    @abstractmethod
    def command(self) -> Sequence[str]:
        """The helper's command line."""

    @abstractmethod
    def ready_marker(self) -> str:
        """What the helper prints (on a line of its output) once it listens on the local port."""

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _start(self) -> None:
        if self._log is None and self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self._log_path, "ab")
        self._process = spawn(self.command(), stdout=subprocess.PIPE, log=subprocess.STDOUT, guard=True)
        assert self._process.stdout is not None
        self._output = _HelperOutput(self._process.stdout, self.ready_marker(), self._log)
        logger.info("backend=<%s>, pid=<%s>, port=<%s> | forward started", self.name,
                    self._process.pid, self.local_port)

    def _exit_reason(self) -> str | None:
        if self._closing.is_set():
            return "the forward was closed"
        process, output = self._process, self._output
        if process is None or output is None or process.poll() is None:
            return None
        output.finish()
        reason = f"the forward's helper exited with status {process.returncode}"
        if not output.held.is_set():
            reason += f" before it listened on port {self.local_port}"
            if self._port_taken(output):
                reason += f": another program holds port {self.local_port}"
        return f"{reason} (its output: {output.tail()})"

    def _port_taken(self, output: _HelperOutput) -> bool:
        return "address already in use" in output.tail().lower() or not port_is_free(self.local_port)

    def start(self) -> None:
        """Start the helper without waiting (call from the main thread: see processes.spawn)."""
        with self._lock:
            if self._closing.is_set():
                raise ForwardError(f"{self.name}: forward already closed")
            if self._process is None:
                self._start()

    def open(self, model_id: str, timeout_s: float = READY_TIMEOUT_S) -> ProbeResult:
        """Wait until the helper holds the port, then until a chat request through it is answered.

        Raises:
            PortTaken: the helper could not listen because another program holds the port.
            ForwardError: anything else kept the forward from answering in time.
        """
        self.start()
        started = time.monotonic()
        try:
            self._wait_until_held(started + timeout_s)
            result = wait_until_answered(self.base_url, model_id, timeout_s - (time.monotonic() - started),
                                         alive=self._exit_reason)
        except NotReadyError as exc:
            self.close()
            raise ForwardError(f"{self.name}: {self.describe()}: {exc}") from None
        except ForwardError:
            self.close()
            raise
        if self._supervisor is None:
            self._supervisor = threading.Thread(target=self._supervise, name=f"forward-{self.name}",
                                                daemon=True)
            self._supervisor.start()
        return dataclasses.replace(result, waited_s=time.monotonic() - started)

    def hold(self, timeout_s: float) -> None:
        """Start the helper if needed and wait until it holds the local port, without a chat request (a forward to
        something other than a model server: the rig's byte source, :mod:`agent.reach.tunnel`).

        Raises:
            ForwardError: it did not hold the port in time (PortTaken: another program holds it).
        """
        self.start()
        self._wait_until_held(time.monotonic() + timeout_s)

    def _wait_until_held(self, deadline: float) -> None:
        """Return once the helper reports it listens on the local port; raise if it exits or the deadline passes."""
        process, output = self._process, self._output
        assert process is not None and output is not None

        def held() -> bool | None:
            if output.held.is_set():
                return True
            if self._closing.is_set():
                raise ForwardError(f"{self.name}: the forward was closed while opening")
            reason = self._exit_reason()
            if reason is not None:
                error = PortTaken if self._port_taken(output) else ForwardError
                raise error(f"{self.name}: {self.describe()}: {reason}")
            return None

        try:  # the wait between two looks ends as soon as the helper reports listening
            poll_until(held, timeout_s=max(0.0, deadline - time.monotonic()), interval_s=HELD_POLL_S,
                       what=f"{self.name} listening", sleep=output.held.wait)
        except WaitTimeout:
            raise ForwardError(f"{self.name}: {self.describe()}: the helper did not report listening on port "
                               f"{self.local_port} in time (its output: {output.tail()})") from None

    def _supervise(self) -> None:
        """Reopen the forward on the same port whenever its helper exits, until closed."""
        while not self._closing.wait(SUPERVISE_INTERVAL_S):
            reason = self._exit_reason()
            if reason is None:
                continue
            with self._lock:
                if self._closing.is_set():
                    return
                if self.reopens >= MAX_REOPENS:
                    logger.error("backend=<%s> | forward dropped %d times, giving up", self.name, self.reopens)
                    self.last_drop = f"{reason}; gave up after {self.reopens} reopens"
                    return
                delay = REOPEN_BACKOFF_S[min(self.reopens, len(REOPEN_BACKOFF_S) - 1)]
                self.last_drop = reason
                stop(self._process)  # whatever is left of its group
                logger.warning("backend=<%s>, reason=<%s>, delay_s=<%s> | forward dropped, reopening",
                               self.name, reason, delay)
            if self._closing.wait(delay):
                return
            with self._lock:
                if self._closing.is_set():
                    return
                self.reopens += 1
                self._start()

    def close(self) -> None:
        self._closing.set()
        with self._lock:
            process, self._process = self._process, None
            output, self._output = self._output, None
            if process is not None:
                stop(process)
                logger.info("backend=<%s>, pid=<%s> | forward closed", self.name, process.pid)
            if output is not None:
                output.finish()  # its last lines into the log before the log closes
            if self._log is not None:
                self._log.close()
                self._log = None
        supervisor = self._supervisor
        if supervisor is not None and supervisor is not threading.current_thread():
            supervisor.join(timeout=5)


class SsmPortForward(ProcessPortForward):
    """``aws ssm start-session`` port forward to ``instance_id:remote_port``."""

    def __init__(self, name: str, instance_id: str, remote_port: int, region: str, local_port: int,
                 profile: str | None = None, log_dir: Path | None = None, aws: str = "aws") -> None:
        super().__init__(name, local_port, log_dir)
        self.instance_id = instance_id
        self.remote_port = remote_port
        self.region = region
        self.profile = profile
        self.aws = aws

    def command(self) -> list[str]:
        command = [self.aws, "ssm", "start-session",
                   "--target", self.instance_id,
                   "--document-name", "AWS-StartPortForwardingSession",
                   "--parameters", f"portNumber={self.remote_port},localPortNumber={self.local_port}",
                   "--region", self.region]
        if self.profile:
            command += ["--profile", self.profile]
        return command

    def ready_marker(self) -> str:
        # session-manager-plugin prints this once its listener is up, in both of its local
        # port-forwarding modes (src/sessionmanagerplugin/session/portsession/ in
        # github.com/aws/session-manager-plugin: basicportforwarding.go, muxportforwarding.go).
        return f"Port {self.local_port} opened for sessionId"

    def describe(self) -> str:
        return (f"SSM port forward 127.0.0.1:{self.local_port} -> {self.instance_id}:{self.remote_port} "
                f"({self.region})")


class RelayPortForward(ProcessPortForward):
    """A plain TCP relay to ``target_host:target_port`` in a child process (``agent.reach.relay``), shaped like
    one SSM session when ``shaping`` is given."""

    def __init__(self, name: str, target_port: int, local_port: int, target_host: str = HOST,
                 log_dir: Path | None = None, shaping: Shaping | None = None) -> None:
        super().__init__(name, local_port, log_dir)
        self.target_host = target_host
        self.target_port = target_port
        self.shaping = shaping

    def command(self) -> list[str]:
        return [sys.executable, "-m", "agent.reach.relay", "--listen", f"{HOST}:{self.local_port}",
                "--target", f"{self.target_host}:{self.target_port}", *(self.shaping.args() if self.shaping else ())]

    def ready_marker(self) -> str:
        return f"relay: listening on {HOST}:{self.local_port}"

    def describe(self) -> str:
        shaped = f", shaped to {self.shaping.rate_bytes_per_s:,.0f} B/s" if self.shaping else ""
        return f"TCP relay 127.0.0.1:{self.local_port} -> {self.target_host}:{self.target_port}{shaped}"


class ForwardSet:
    """Every forward of a run; closing it closes all of them (also on errors and Ctrl-C)."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self.forwards: dict[str, PortForward] = {}

    def add(self, forward: PortForward) -> PortForward:
        self._stack.callback(forward.close)
        self.forwards[forward.name] = forward
        return forward

    def close(self) -> None:
        self._stack.close()

    def __iter__(self) -> Iterator[PortForward]:
        return iter(self.forwards.values())

    def __enter__(self) -> "ForwardSet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def port_is_free(port: int) -> bool:
    """Whether ``127.0.0.1:port`` can be bound right now (a moment later it may not be)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def preferred_port(preferred: int | None, taken: AbstractSet[int] = frozenset()) -> int:
    """``preferred`` (the catalog's ``local_port``, as the reference used) when it is free, else a free port.

    Free when asked is no promise: another program may take it before the forward's helper
    binds it, which :meth:`ProcessPortForward.open` detects (:class:`PortTaken`).
    """
    if preferred and preferred not in taken and port_is_free(preferred):
        return preferred
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port = sock.getsockname()[1]
        if port not in taken:
            return port
