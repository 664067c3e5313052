"""Port forwards: the SSM command, the missing-tools error, and the supervision with a TCP relay."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.reach.forwarding import (ForwardError, ForwardSet, ForwardToolsMissing, PortTaken, RelayPortForward,
                                    SsmPortForward, check_ssm_tools, preferred_port)
from agent.reach.probe import NotReadyError, chat_once, describe_error, wait_until_answered
from agent.local_rig import free_port
from kit.waiting import poll_until

from tests.fake_tools import AWS_CLI_V1

from tests.fake_tools import AWS_CLI_V2

from tests.fake_tools import PLUGIN

from tests.fake_tools import ssm_session_aws

from tests.fake_tools import tools

from tests.agent.conftest import ChatServer

from tests.agent.conftest import alive_after

from tests.agent.conftest import descendants


def test_ssm_command() -> None:
    forward = SsmPortForward("g6", instance_id="i-0abc", remote_port=8000, region="us-east-2", local_port=8001,
                             profile="bench")
    assert forward.command() == [
        "aws", "ssm", "start-session", "--target", "i-0abc",
        "--document-name", "AWS-StartPortForwardingSession",
        "--parameters", "portNumber=8000,localPortNumber=8001",
        "--region", "us-east-2", "--profile", "bench"]
    assert forward.base_url == "http://127.0.0.1:8001/v1"
    assert forward.describe() == "SSM port forward 127.0.0.1:8001 -> i-0abc:8000 (us-east-2)"


@pytest.mark.parametrize(("aws", "plugin", "named"), [
    (AWS_CLI_V2, None, ["Session Manager plugin"]),
    (None, PLUGIN, ["AWS CLI v2"]),
    (None, None, ["AWS CLI v2", "Session Manager plugin"]),
])
def test_missing_tools_named(tmp_path, aws, plugin, named: list[str]) -> None:
    with pytest.raises(ForwardToolsMissing) as caught:
        check_ssm_tools(which=tools(tmp_path, aws, plugin))
    for name in named:
        assert name in str(caught.value)
    assert "https://docs.aws.amazon.com/" in str(caught.value)


def test_aws_cli_v1_is_not_enough(tmp_path) -> None:
    with pytest.raises(ForwardToolsMissing) as caught:
        check_ssm_tools(which=tools(tmp_path, AWS_CLI_V1, PLUGIN))
    message = str(caught.value)
    assert "AWS CLI 1.45.11 (v1)" in message and "need v2" in message
    assert "Session Manager plugin:" not in message  # the plugin is fine; only the CLI is named


def test_tools_present(tmp_path) -> None:
    check_ssm_tools(which=tools(tmp_path))


def test_preferred_port_when_free_else_another() -> None:
    port = free_port()
    assert preferred_port(port) == port
    assert preferred_port(port, taken={port}) != port
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert preferred_port(taken) != taken


def listening(forward: RelayPortForward, log: Path) -> None:
    """Start ``forward``'s relay and return once it has said it listens (the line in its log): a short wait timed
    after this is all the relay's, not partly two Python processes starting on a loaded machine."""
    forward.start()
    line = f"relay: listening on 127.0.0.1:{forward.local_port}"
    poll_until(lambda: True if log.exists() and line in log.read_text() else None, timeout_s=60, interval_s=0.02,
               what="the relay to listen")


def test_forward_to_server_not_listening_shows_remote_disconnected(tmp_path: Path) -> None:
    """What SSM does when the rig's server is not up yet: accepted, then dropped."""
    with RelayPortForward("g6", target_port=free_port(), local_port=free_port(), log_dir=tmp_path) as forward:
        listening(forward, tmp_path / "forward-g6.log")
        with pytest.raises(ForwardError) as caught:
            forward.open("m", timeout_s=1.5)
        assert "RemoteDisconnected" in str(caught.value)
        assert forward.pid is None  # a forward that never answered is closed


def test_open_waits_for_a_real_answer_then_reopens_after_a_drop(chat_server: ChatServer, tmp_path) -> None:
    forward = RelayPortForward("g6", target_port=chat_server.port, local_port=free_port(), log_dir=tmp_path)
    with ForwardSet() as forwards:
        forwards.add(forward)
        ready = forward.open("served-model", timeout_s=20)
        assert ready.attempts >= 1
        assert chat_server.requests[-1][1]["model"] == "served-model"
        assert chat_server.requests[-1][1]["max_tokens"] == 1
        first = forward.pid
        (helper,) = descendants(first)  # the relay under its guard
        os.kill(helper, signal.SIGKILL)  # the session drops (idle timeout, expired credentials)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                chat_once(forward.base_url, "served-model", timeout_s=2)
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
                continue
            if forward.pid != first:
                break
        assert forward.pid != first and forward.reopens == 1
        assert "exited with status 137" in (forward.last_drop or "")
        second = forward.pid
    assert alive_after({first, second, helper}) == set()
    with pytest.raises(urllib.error.URLError) as refused:
        chat_once(forward.base_url, "m", timeout_s=2)
    assert "refused" in describe_error(refused.value)
    assert (tmp_path / "forward-g6.log").exists()


def test_close_stops_every_forward_even_after_an_error(chat_server: ChatServer) -> None:
    forwards_seen = []
    with pytest.raises(RuntimeError, match="boom"):
        with ForwardSet() as forwards:
            for name in ("g6", "inf2"):
                forward = forwards.add(RelayPortForward(name, target_port=chat_server.port, local_port=free_port()))
                forward.open("m", timeout_s=20)
                forwards_seen.append(forward.pid)
            raise RuntimeError("boom")
    assert len(forwards_seen) == 2
    assert alive_after(set(forwards_seen)) == set()


def test_closed_forward_cannot_be_reopened(chat_server: ChatServer) -> None:
    forward = RelayPortForward("g6", target_port=chat_server.port, local_port=free_port())
    forward.close()
    forward.close()  # twice is fine
    with pytest.raises(ForwardError, match="already closed"):
        forward.open("m", timeout_s=1)


def test_a_refusing_server_fails_at_once(chat_server: ChatServer) -> None:
    """A 4xx (a wrong model id or path) is an answer: there is no point waiting for the deadline."""
    started = time.monotonic()
    with pytest.raises(NotReadyError, match="the server answered HTTP 404"):
        wait_until_answered(f"http://127.0.0.1:{chat_server.port}/v2", "m", timeout_s=30)
    assert time.monotonic() - started < 5


def test_a_silent_port_is_waited_for_until_the_deadline_and_the_last_probe_named() -> None:
    started = time.monotonic()
    with pytest.raises(NotReadyError, match=r"^no answer within 1 s; last probe: ") as caught:
        wait_until_answered(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_s=1)
    assert 1 <= time.monotonic() - started < 5
    assert "no attempt made" not in str(caught.value)  # it did probe


def test_a_server_that_stopped_ends_the_wait_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(NotReadyError, match=r"^it exited with status 1 \(last probe: no attempt made\)$"):
        wait_until_answered(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_s=30,
                            alive=lambda: "it exited with status 1")
    assert time.monotonic() - started < 1


def _open_both(first: "RelayPortForward | SsmPortForward", second: "RelayPortForward | SsmPortForward") -> list:
    """Start both helpers at once, then wait for both: each forward's outcome, a result or an exception."""
    first.start()
    second.start()
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(forward.open, "m", 20) for forward in (first, second)]
    return [future.exception() or future.result() for future in futures]


def test_two_forwards_on_one_port_one_holds_it_the_other_is_told(chat_server: ChatServer) -> None:
    """Two runs both saw a port free and started a helper on it: the loser must not be answered by the winner's
    target (it used to be, silently), it is told the port is taken."""
    other_server = ChatServer()
    port = free_port()
    with ForwardSet() as forwards:
        mine = forwards.add(RelayPortForward("g6", target_port=chat_server.port, local_port=port))
        theirs = forwards.add(RelayPortForward("g6", target_port=other_server.port, local_port=port))
        outcomes = _open_both(mine, theirs)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(errors) == 1, outcomes
        (error,) = errors
        assert isinstance(error, PortTaken)
        assert f"another program holds port {port}" in str(error) and f"relay: port {port} is taken" in str(error)
        winner, loser = (mine, theirs) if outcomes[1] is error else (theirs, mine)
        assert loser.pid is None  # closed, nothing left running
        winners_target, losers_target = ((chat_server, other_server) if winner is mine
                                         else (other_server, chat_server))
        assert len(winners_target.requests) == 1 and losers_target.requests == []  # each probe reached its own
        chat_once(winner.base_url, "m", timeout_s=5)
        assert len(winners_target.requests) == 2
    other_server.close()


def test_a_port_that_answers_is_not_trusted_until_the_helper_says_it_holds_it(chat_server: ChatServer,
                                                                                tmp_path: Path) -> None:
    class Silent(RelayPortForward):
        def ready_marker(self) -> str:
            return "a line this relay never prints"

    port = free_port()
    with Silent("g6", target_port=chat_server.port, local_port=port, log_dir=tmp_path) as forward:
        listening(forward, tmp_path / "forward-g6.log")  # so its line is there to be quoted when the wait ends
        with pytest.raises(ForwardError, match=f"did not report listening on port {port} in time") as caught:
            forward.open("m", timeout_s=1.5)
        assert f"relay: listening on 127.0.0.1:{port}" in str(caught.value)  # the helper's own output, quoted
    assert chat_server.requests == []  # never probed


def test_the_relay_says_in_one_line_when_its_port_is_taken() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "agent.reach.relay", "--listen", f"127.0.0.1:{port}",
                               "--target", "127.0.0.1:9"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"relay: port {port} is taken (Address already in use): another program listens on 127.0.0.1:{port}"]


def test_ssm_forward_trusts_the_port_once_the_plugin_reports_it(chat_server: ChatServer, tmp_path) -> None:
    """With a fake ``aws`` that prints what the CLI and session-manager-plugin print: the forward opens on the
    plugin's ``Port P opened for sessionId`` line, and a second session on the same port is told it is taken."""
    aws = str(ssm_session_aws(tmp_path / "bin"))
    other_server = ChatServer()
    port = free_port()
    with ForwardSet() as forwards:
        first, second = (forwards.add(SsmPortForward("g6", instance_id=f"i-0{n}", remote_port=server.port,
                                                     region="us-east-2", local_port=port, aws=aws,
                                                     log_dir=tmp_path / f"logs{n}"))
                         for n, server in ((1, chat_server), (2, other_server)))
        assert first.open("m", timeout_s=20).attempts >= 1
        with pytest.raises(PortTaken) as caught:
            second.open("m", timeout_s=20)
        assert f"another program holds port {port}" in str(caught.value)
        assert "bind: address already in use" in str(caught.value)  # the plugin's own line
        assert len(chat_server.requests) == 1 and other_server.requests == []
    log = (tmp_path / "logs1" / "forward-g6.log").read_text()
    assert f"Port {port} opened for sessionId fake-i-01.\nWaiting for connections..." in log
    other_server.close()


def test_a_reopen_that_finds_the_port_taken_says_so_and_retries(chat_server: ChatServer) -> None:
    """The session dropped and another program took the port before the reopen: the drop names it, and the
    forward comes back once the port is free again."""
    port = free_port()
    with RelayPortForward("g6", target_port=chat_server.port, local_port=port) as forward:
        forward.open("m", timeout_s=20)
        (helper,) = descendants(forward.pid)
        os.kill(helper, signal.SIGKILL)
        deadline = time.monotonic() + 15
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            while True:
                try:
                    other.bind(("127.0.0.1", port))
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the killed relay never let go of its port"
                    time.sleep(0.01)
            other.listen()
            while f"another program holds port {port}" not in (forward.last_drop or ""):
                assert time.monotonic() < deadline, forward.last_drop
                time.sleep(0.05)
        assert f"relay: port {port} is taken" in (forward.last_drop or "")
        while True:  # the port is free again: the next reopen holds it
            try:
                chat_once(forward.base_url, "m", timeout_s=2)
                break
            except (OSError, http.client.HTTPException):
                assert time.monotonic() < deadline + 15, forward.last_drop
                time.sleep(0.1)
        assert forward.reopens >= 2
