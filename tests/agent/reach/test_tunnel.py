"""The tunnel offline: the relay shaped like one SSM session (a byte rate, a pause per cycle), one forward's
capacity measured through the rig's byte source, the levels it binds, and the pool that frees them.

The paced server has 4 slots and answers 10 tokens 20 ms apart: at 4 streams or fewer nobody waits (TTFT about
10 ms, and a few more through a shaped relay), beyond 4 a request waits for a whole reply (TTFT at least 190 ms),
so with a 150 ms TTFT limit its capacity is 4. One stream reads about 8.5 KB/s (about 170 bytes per token), four
about 34 KB/s: a forward shaped to 30 KB/s binds level 4 (it needs more than 70% of it) and not level 1.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from agent.bench.command import runner
from agent.reach.forwarding import ForwardSet, RelayPortForward, preferred_port
from agent.reach.pool import relays, spread
from agent.reach.probe import chat_once
from agent.reach.relay import Shaping
from agent.reach.run_command import LOCAL_WHERE
from agent.reach.tunnel import BOUND_SHARE, BYTE_SOURCE_PORT, BYTE_SOURCE_SCRIPT, LocalByteSource, measure

from kit.waiting import poll_until

from tests.agent.bench.conftest import make_options, openai_backend
from tests.agent.conftest import ChatServer, alive_after, descendants
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.paced import Pace

LIMIT_BYTES_PER_S = 30_000
SEARCH = ("--demos", "chat", "--runs", "1", "--max-tokens", "10", "--concurrency", "1,4,5",
          "--slo", "ttft_p99_ms=150", "--repeats", "1")


def test_the_agent_looks_for_the_byte_source_where_the_boot_starts_it() -> None:
    assert f"\nBYTE_SOURCE_PORT={BYTE_SOURCE_PORT}\n" in BYTE_SOURCE_SCRIPT.read_text()


def test_a_shaped_relay_carries_its_rate_each_way_and_an_unshaped_one_far_more() -> None:
    with LocalByteSource() as source, ForwardSet() as forwards:
        shaped, free = (forwards.add(RelayPortForward(name, source.port, preferred_port(None), shaping=shaping))
                        for name, shaping in (("shaped", Shaping(LIMIT_BYTES_PER_S)), ("free", None)))
        for forward in (shaped, free):
            forward.hold(10)
        slow, fast = measure(shaped.local_port, "relay, shaped", 0.4), measure(free.local_port, "relay", 0.4)
    assert slow.down_bytes_per_s == pytest.approx(LIMIT_BYTES_PER_S, rel=0.2)
    assert slow.up_bytes_per_s == pytest.approx(LIMIT_BYTES_PER_S, rel=0.2)
    assert slow.events_per_s == pytest.approx(LIMIT_BYTES_PER_S / 225, rel=0.25)
    assert fast.down_bytes_per_s > 20 * LIMIT_BYTES_PER_S and fast.events_per_s > 20 * slow.events_per_s


def run_through_tunnel(tmp_path: Path, shaping: Shaping | None, wanted: int | str, load_from: str = "tunnel"
                       ) -> dict[str, Any]:
    """The capacity search on the paced server reached through relays (measured, pooled as ``wanted``): its
    summary's backend. Its rig's load generator is the offline stand-in's (used with ``load_from="rig"``)."""
    with FakeOpenAI(Pace(slots=4, ttft_s=0.01, tpot_s=0.02, tokens=10)) as server, ForwardSet() as forwards, \
            LocalByteSource() as source:
        make = relays(host="127.0.0.1", source_port=source.port, shaping=shaping, log_dir=None, taken=set())
        first = forwards.add(make("g6", server.port))
        first.open("paced", 10)
        found = spread(forwards=forwards, first=first, make=make, serving_port=server.port, source_port=source.port,
                       kind="relay, shaped" if shaping else "relay", model="paced", width=5, wanted=wanted,
                       ready_timeout_s=10, seconds=0.3)
        rig_load = {"command": "local", "url": f"http://127.0.0.1:{server.port}/v1/chat/completions",
                    "where": LOCAL_WHERE}
        backend = openai_backend("g6", first.base_url, metadata={**found, "rig_load": rig_load})
        options = make_options(*SEARCH)
        options.load_from = load_from  # an agent.run option (the runner's parser has the benchmark's own)
        assert runner.run([backend], options, tmp_path / "out", None) == 0
    # nothing left behind: every forward of the pool, the one that measured, and the byte source
    assert all(f.pid is None for f in forwards) and source._process.poll() is not None
    return json.loads((tmp_path / "out" / "summary.json").read_text())["backends"]["g6"]


def test_one_shaped_forward_binds_the_levels_above_its_rate_and_the_capacity_is_a_floor(tmp_path: Path) -> None:
    g6 = run_through_tunnel(tmp_path, Shaping(LIMIT_BYTES_PER_S), 1)
    tunnel, slo = g6["tunnel"], g6["slo"]
    assert tunnel["forwards"] == 1 and tunnel["kind"] == "relay, shaped"
    assert tunnel["capacity_bytes_per_s"] == pytest.approx(LIMIT_BYTES_PER_S, rel=0.2)
    levels = {lv["concurrency"]: lv for lv in tunnel["levels"]}
    assert not levels[1]["bound"] and 4 in tunnel["bound_levels"]
    assert all(lv["load_from"] == "tunnel" for lv in levels.values())
    for c in tunnel["bound_levels"]:  # what it carried, against the capacity measured
        assert levels[c]["carried_bytes_per_s"] >= BOUND_SHARE * tunnel["capacity_bytes_per_s"]
        assert 120 <= levels[c]["bytes_per_token"] <= 400
    assert slo["capacity_concurrency"] is not None and slo["capacity_concurrency"] < min(tunnel["bound_levels"])
    assert slo["search"]["bracket"][1] is None  # a floor: no level the server was seen to miss
    assert "Bound by the tunnel at level(s) 4, 5 (level 4 carried" in slo["capacity_reason"]


def test_a_pool_of_shaped_forwards_finds_the_unshaped_capacity_and_binds_nothing(tmp_path: Path) -> None:
    g6 = run_through_tunnel(tmp_path, Shaping(LIMIT_BYTES_PER_S), "auto")
    tunnel = g6["tunnel"]
    assert tunnel["forwards"] > 1 and tunnel["bound_levels"] == []
    assert tunnel["capacity_bytes_per_s"] == pytest.approx(tunnel["forwards"] * LIMIT_BYTES_PER_S, rel=0.2)
    assert g6["slo"]["capacity_concurrency"] == 4 and g6["slo"]["search"]["bracket"] == [4, 5]


def test_load_from_the_rig_finds_the_unshaped_capacity_through_one_shaped_forward(tmp_path: Path) -> None:
    g6 = run_through_tunnel(tmp_path, Shaping(LIMIT_BYTES_PER_S), 1, load_from="rig")
    tunnel, slo = g6["tunnel"], g6["slo"]
    levels = {lv["concurrency"]: lv for lv in tunnel["levels"]}
    assert tunnel["forwards"] == 1 and tunnel["bound_levels"] == []
    # level 1 is the chat part's own timed requests, from here; the levels above it came from the rig
    assert levels[1]["load_from"] == "tunnel" and levels[4]["load_from"] == levels[5]["load_from"] == "rig"
    assert tunnel["load_from"] == LOCAL_WHERE
    # what the rig's level 4 carried would have bound the one shaped forward: it never crossed it
    assert levels[4]["carried_bytes_per_s"] >= BOUND_SHARE * LIMIT_BYTES_PER_S
    assert slo["capacity_concurrency"] == 4 and slo["search"]["bracket"] == [4, 5]
    records = [json.loads(line) for line in (tmp_path / "out" / "requests.jsonl").read_text().splitlines()]
    sweep = [r for r in records if r.get("phase") == "sweep"]
    assert sweep and all(r["load_from"] == "rig" and r["output_tokens"] == 10 for r in sweep)
    report = (tmp_path / "out" / "REPORT.md").read_text()
    assert (f"Where the load came from: level(s) 1 from this machine through 1 port forward(s) (relay, shaped); "
            f"level(s) 4, 5 from the rig: {LOCAL_WHERE} (none through the tunnel).") in report


def test_without_shaping_one_forward_is_enough_and_nothing_is_bound(tmp_path: Path) -> None:
    g6 = run_through_tunnel(tmp_path, None, "auto")
    tunnel = g6["tunnel"]
    assert (tunnel["forwards"], tunnel["bound_levels"]) == (1, [])
    assert all(lv["carried_bytes_per_s"] > 0 and not lv["bound"] for lv in tunnel["levels"])
    assert g6["slo"]["capacity_concurrency"] == 4


def answered(url: str) -> bool | None:
    try:
        return bool(chat_once(url, "served-model", timeout_s=2)["choices"])
    except (OSError, http.client.HTTPException):
        return None


def test_a_pool_forward_that_drops_is_reopened_on_its_port_and_nothing_is_left_behind(chat_server: ChatServer
                                                                                        ) -> None:
    with ForwardSet() as forwards, LocalByteSource() as source:
        make = relays(host="127.0.0.1", source_port=source.port, shaping=None, log_dir=None, taken=set())
        first = forwards.add(make("g6", chat_server.port))
        first.open("served-model", 10)
        found = spread(forwards=forwards, first=first, make=make, serving_port=chat_server.port,
                       source_port=source.port, kind="relay", model="served-model", width=1, wanted=2,
                       ready_timeout_s=10, seconds=0.1)
        (url,) = found["pool_base_urls"]
        second = next(f for f in forwards if f.base_url == url)
        before, port = second.pid, second.local_port
        assert before is not None
        (helper,) = descendants(before)
        os.kill(helper, signal.SIGKILL)  # its session drops
        poll_until(lambda: answered(url) if second.reopens == 1 else None, timeout_s=15, interval_s=0.1,
                   what="the pool's forward reopened and answering")
        assert second.local_port == port and second.pid != before
        pids = {f.pid for f in forwards} | {before, helper, source._process.pid}
    assert alive_after({pid for pid in pids if pid is not None}) == set()
