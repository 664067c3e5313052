"""``rehearse --offline``: moto's server on loopback for AWS, and the local rig for every rig's server.

Both are started by the rehearsal and stopped with it, each in its own process group:

- the local rig (``python -m agent.local_rig``: SmolLM2-135M on llama.cpp's server, CPU), run as a
  command, never imported (``rigs/`` does not import ``agent/``);
- moto's server (``python -m rigs.offline.moto_server --stand-in <the local rig>``), which answers
  every AWS call of the CDK CLI, of ``rigs`` and of the agent, lists running instances as SSM
  ``Online``, checks readiness against the stand-in, and answers SageMaker endpoints from it.

:attr:`OfflineAws.endpoint` is passed down to what calls AWS in the rehearsal's process (its
sessions), :meth:`OfflineAws.environment` is what every command it runs gets: the endpoint, dummy
credentials, and a state folder of its own (the placement file of a rehearsal in moto is not the
user's). Nothing is put into the rehearsal's own environment.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import IO, Callable, Sequence

from kit import processes
from kit.waiting import WaitTimeout, poll_until
from rigs import aws
from rigs.placement.placement import PROJECT_DIR, STATE_DIR_ENV

START_TIMEOUT_S = 180.0
"""How long each of the two may take to say it is ready (the local rig loads a model first)."""


class OfflineError(RuntimeError):
    """The local rig or moto's server did not start; the message names the log."""


def _first_line(process: subprocess.Popen, timeout_s: float) -> str:
    """The first line the process prints, or '' when it exits or says nothing within ``timeout_s``."""
    stdout = process.stdout
    assert stdout is not None
    buffer = bytearray()

    def line() -> str | None:
        """The first line once it is whole, what was said when the process is done, None while it talks."""
        while select.select([stdout], [], [], 0)[0]:
            chunk = os.read(stdout.fileno(), 4096)
            if not chunk:
                return buffer.decode(errors="replace")
            buffer.extend(chunk)
            if b"\n" in buffer:
                return buffer.split(b"\n", 1)[0].decode(errors="replace")
        return buffer.decode(errors="replace") if process.poll() is not None else None

    try:  # woken as soon as the process says something
        return poll_until(line, timeout_s=timeout_s, interval_s=0.5, what="the first line",
                          sleep=lambda s: select.select([stdout], [], [], s))
    except WaitTimeout:
        return ""


class OfflineAws:
    """The stand-in and moto's server for one rehearsal; a context manager that always stops both."""

    def __init__(self, folder: Path, inject_capacity: Sequence[str] = (), python: str = sys.executable) -> None:
        self.folder = folder
        self.inject_capacity = tuple(inject_capacity)
        self.python = python
        self.stand_in_url: str | None = None
        self.endpoint_url: str | None = None
        self._logs: list[IO[bytes]] = []
        self._local: subprocess.Popen | None = None
        self._moto: subprocess.Popen | None = None

    def _log(self, name: str) -> IO[bytes]:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = open(self.folder / name, "ab")
        self._logs.append(handle)
        return handle

    def start(self, say: Callable[[str], None]) -> "OfflineAws":
        env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true"}
        self._local = processes.spawn([self.python, "-m", "agent.local_rig"], log=self._log("local-rig.log"),
                                      stdout=subprocess.PIPE, cwd=PROJECT_DIR, env=env)
        line = _first_line(self._local, START_TIMEOUT_S)
        try:
            self.stand_in_url = json.loads(line)["base_url"]
        except (ValueError, KeyError, TypeError):
            raise OfflineError(f"the local rig did not start (see {self.folder / 'local-rig.log'})") from None
        say(f"offline: the local rig plays every rig's server at {self.stand_in_url}")
        command = [self.python, "-m", "rigs.offline.moto_server", "--port", "0", "--stand-in", self.stand_in_url,
                   "--stop-on-stdin-eof"]
        for spec in self.inject_capacity:
            command += ["--inject-capacity", spec]
        self._moto = processes.spawn(command, log=self._log("moto-server.log"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=PROJECT_DIR, env=env)
        line = _first_line(self._moto, START_TIMEOUT_S)
        if not line.startswith("ready "):
            raise OfflineError(f"moto's server did not start (see {self.folder / 'moto-server.log'})")
        self.endpoint_url = f"http://localhost:{line.split()[1]}"
        injected = f"; injected: {', '.join(self.inject_capacity)} has no capacity" if self.inject_capacity else ""
        say(f"offline: moto's server plays AWS at {self.endpoint_url}{injected}")
        return self

    @property
    def endpoint(self) -> aws.Endpoint:
        """Moto's server, for the sessions and commands of the rehearsal (once :meth:`start` returned)."""
        assert self.endpoint_url is not None, "moto's server is not started"
        return aws.Endpoint(self.endpoint_url)

    @property
    def placement_file(self) -> Path:
        """The placement file of a rehearsal in moto (not the user's)."""
        return self.folder / "state" / "placement.json"

    def environment(self) -> dict[str, str]:
        """The variables every command of the rehearsal runs with (added to, and replacing, the caller's)."""
        return {**self.endpoint.environment(), STATE_DIR_ENV: str(self.placement_file.parent)}

    def stop(self) -> None:
        """Stop moto's server (everything in it goes with it) and the local rig."""
        if self._moto is not None and self._moto.stdin is not None:
            try:
                self._moto.stdin.close()
            except OSError:
                pass
        processes.stop(self._moto, grace_s=processes.COMMAND_GRACE_S)
        processes.stop(self._local, grace_s=processes.COMMAND_GRACE_S)
        for process in (self._moto, self._local):
            if process is not None and process.stdout is not None:
                process.stdout.close()
        for handle in self._logs:
            handle.close()
        self._logs.clear()

    def __enter__(self) -> "OfflineAws":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
