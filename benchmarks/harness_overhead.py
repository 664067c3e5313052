"""What the harness's own timing client costs (a benchmark, not a test).

An instant OpenAI-compatible server (precomputed replies: 100 SSE content chunks plus a finish
and a usage chunk when streamed; one JSON body otherwise) runs in its own process, pinned to
one core where the machine has two. The client runs in this process, pinned to the other core,
and drives it with:

* the harness: ``agent.bench.clients.openai_http.OpenAIClient`` (aiohttp, one ``json.loads`` per SSE
  event, timestamps on receipt) exactly as the benchmark uses it;
* a minimal raw asyncio HTTP/1.1 loop (``asyncio.open_connection``, one keep-alive connection per
  worker, the same one parse per event), as the floor.

For each client, streamed and not, at concurrency 1 and 64 it reports: requests/s (as the client
saw it, and as the server counted it), added milliseconds per request (wall / requests at c=1;
the server answers instantly, so this is what the client and the loopback cost), client CPU ms
per request, requests actually in flight at nominal c=64, and for the harness the mean reported
latency (``t_done - t_sent``) against wall time per request. It also times one strands agent
round trip through the model object ``agent/bench/clients/openai_http.py`` builds (one shared client). Start-up is measured in fresh
interpreters: to the first answered request with the timing client alone, and with the whole
benchmark package imported (strands included).

The project's goals (docs/timings.md, "The harness's own cost"), on one core: >= 800 streamed
requests/s at c=64, < 1.5 ms added per 100-chunk streamed request at c=1, reported latency within
10% of wall, start-up < 1.5 s.

Usage: ``python benchmarks/harness_overhead.py [--requests 2000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHUNKS = 100


# --- the instant server ---------------------------------------------------------------------------


def _replies() -> tuple[bytes, bytes]:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "bench"}
    events = [{**base, "choices": [{"index": 0, "delta": {"content": f" tok{i}"}, "finish_reason": None}]}
              for i in range(CHUNKS)]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 12, "completion_tokens": CHUNKS, "total_tokens": CHUNKS + 12}
    events.append({**base, "choices": [], "usage": usage})
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    stream = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\n\r\n" + body)
    text = "".join(f" tok{i}" for i in range(CHUNKS))
    payload = json.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "model": "bench",
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                       "finish_reason": "stop"}], "usage": usage}).encode()
    plain = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
             + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    return stream, plain


class _Instant(asyncio.Protocol):
    stream, plain = _replies()
    count = 0

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            i = head.find(b"content-length:")
            length = int(head[i + 15 : head.find(b"\r\n", i) if head.find(b"\r\n", i) > 0 else None]) if i >= 0 else 0
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body = self.buffer[end + 4 : total]
            self.buffer = self.buffer[total:]
            if head.startswith(b"get /stats"):
                payload = str(_Instant.count).encode()
                self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(payload)).encode()
                                     + b"\r\n\r\n" + payload)
                continue
            _Instant.count += 1
            self.transport.write(self.stream if (b'"stream": true' in body or b'"stream":true' in body) else self.plain)


def _serve(port_queue: Any, core: int | None) -> None:
    if core is not None:
        os.sched_setaffinity(0, {core})

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_Instant, "127.0.0.1", 0, backlog=1024)
        port_queue.put(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(main())


@contextlib.contextmanager
def pinned_instant_server() -> Iterator[tuple[int, int | None, int | None]]:
    """The instant server in its own process on one core, this process moved to another where the machine has
    two: ``(port, server core, client core)``; the server is stopped on leaving."""
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = (cores[0], cores[1]) if len(cores) >= 2 else (None, None)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    server = ctx.Process(target=_serve, args=(queue, server_core), daemon=True)
    server.start()
    try:
        port = queue.get(timeout=30)
        if client_core is not None:
            os.sched_setaffinity(0, {client_core})
        yield port, server_core, client_core
    finally:
        server.terminate()
        server.join(5)


# --- clients --------------------------------------------------------------------------------------


class RawClient:
    """A minimal HTTP/1.1 client: one keep-alive connection per worker, one json.loads per SSE event."""

    def __init__(self, port: int) -> None:
        self.port = port

    def request(self, stream: bool) -> bytes:
        body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 100,
                           "temperature": 0.0, "stream": stream}).encode()
        return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def worker(self, n: int, stream: bool, inflight: list[int], samples: list[int]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        req = self.request(stream)
        loads = json.loads
        for _ in range(n):
            inflight[0] += 1
            samples.append(inflight[0])
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            i = head.lower().find(b"content-length:")
            length = int(head[i + 15 : head.find(b"\r\n", i)])
            body = await reader.readexactly(length)
            if stream:
                tokens = 0
                for line in body.split(b"\n"):
                    if line.startswith(b"data: {"):
                        event = loads(line[6:])
                        if event["choices"] and event["choices"][0]["delta"].get("content"):
                            _ = time.perf_counter()
                        if event.get("usage"):
                            tokens = event["usage"]["completion_tokens"]
                assert tokens == CHUNKS
            else:
                assert loads(body)["usage"]["completion_tokens"] == CHUNKS
            inflight[0] -= 1
        writer.close()


async def _run_raw(port: int, total: int, c: int, stream: bool) -> dict[str, Any]:
    client = RawClient(port)
    inflight, samples = [0], []
    per = total // c
    t0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client.worker(per, stream, inflight, samples) for _ in range(c)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"requests": per * c, "wall": wall, "cpu": cpu, "inflight": samples, "reported": None}


async def _run_harness(port: int, total: int, c: int, stream: bool) -> dict[str, Any]:
    from agent.backends import Backend
    from agent.bench.clients.pool import ClientPool
    from agent.bench.clients.reply import ChatRequest

    backend = Backend(name="bench", label="instant server", kind="openai", model_id="bench", tool_calls=False,
                      base_url=f"http://127.0.0.1:{port}/v1")
    pool = ClientPool([backend], width=c)
    timer = pool.client(backend)
    request = ChatRequest.user("hi", 100, stream=stream)
    inflight, samples, reported = [0], [], []
    per = total // c

    async def worker() -> None:
        for _ in range(per):
            inflight[0] += 1
            samples.append(inflight[0])
            t = await timer.send(request)
            inflight[0] -= 1
            if t.error or t.completion_tokens != CHUNKS:
                raise RuntimeError(f"bad reply: {t.error} {t.completion_tokens}")
            if stream and len(t.chunk_times) != CHUNKS:
                raise RuntimeError(f"{len(t.chunk_times)} chunks")
            reported.append(t.t_done - t.t_sent)

    await timer.send(request)  # open the connection pool outside the timing
    t0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(c)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await pool.aclose()
    return {"requests": per * c, "wall": wall, "cpu": cpu, "inflight": samples, "reported": reported}


async def _run_agent(port: int, total: int) -> dict[str, Any]:
    """One strands agent round trip per request, through the model object the benchmark builds
    (``OpenAIModel`` on one shared ``AsyncOpenAI``), against the same 100-chunk streamed reply."""
    from strands import Agent

    from agent.backends import Backend
    from agent.bench.clients.pool import ClientPool

    backend = Backend(name="bench", label="instant server", kind="openai", model_id="bench", tool_calls=True,
                      base_url=f"http://127.0.0.1:{port}/v1")
    async with ClientPool([backend]) as pool:
        model = pool.client(backend).agent_model()
        await Agent(model=model, callback_handler=None).invoke_async("hi")  # warm the shared client
        t0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(total):
            agent = Agent(model=model, callback_handler=None)
            result = await agent.invoke_async("hi")
            assert str(result).strip().startswith("tok0")
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"requests": total, "wall": wall, "cpu": cpu}


async def _run_sdk(port: int, total: int) -> dict[str, Any]:
    """The official openai SDK alone (one AsyncOpenAI), streamed, c=1: the floor under any strands
    agent on an OpenAI-compatible server, for comparison with the agent round trip."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")

    async def one() -> None:
        stream = await client.chat.completions.create(model="bench", messages=[{"role": "user", "content": "hi"}],
                                                      stream=True, stream_options={"include_usage": True})
        async for _ in stream:
            pass

    await one()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(total):
        await one()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await client.close()
    return {"requests": total, "wall": wall, "cpu": cpu}


def _server_count(port: int) -> int:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as resp:
        return int(resp.read())


def _startup(port: int, full: bool) -> float:
    """Seconds from launching a fresh interpreter to its first answered request."""
    imports = "import agent.bench.command.runner\n" if full else ""
    code = (
        "import sys, asyncio\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"{imports}"
        "from agent.backends import Backend\n"
        "from agent.bench.clients.pool import ClientPool\n"
        "from agent.bench.clients.reply import ChatRequest\n"
        "async def main():\n"
        f"    b = Backend(name='b', label='b', kind='openai', model_id='bench', tool_calls=False, "
        f"base_url='http://127.0.0.1:{port}/v1')\n"
        "    async with ClientPool([b]) as pool:\n"
        "        r = await pool.client(b).send(ChatRequest.user('hi', 100))\n"
        "    assert r.error is None, r.error\n"
        "asyncio.run(main())\n"
    )
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per measurement (default 2000)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repetitions; medians reported")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    with pinned_instant_server() as (port, server_core, client_core):
        cases = [(client, stream, c) for stream in (True, False) for c in (1, 64) for client in ("raw", "harness")]
        results: dict[tuple[str, bool, int], list[dict[str, Any]]] = {case: [] for case in cases}
        for rep in range(args.repeats):
            for client, stream, c in cases:
                run = _run_raw if client == "raw" else _run_harness
                asyncio.run(run(port, min(200, args.requests), c, stream))  # warm-up
                before = _server_count(port)
                r = asyncio.run(run(port, args.requests, c, stream))
                r["server_seen"] = _server_count(port) - before - (1 if client == "harness" else 0)
                results[(client, stream, c)].append(r)
        agent_runs, sdk_runs = [], []
        for _ in range(args.repeats):
            sdk_runs.append(asyncio.run(_run_sdk(port, max(50, args.requests // 10))))
            agent_runs.append(asyncio.run(_run_agent(port, max(50, args.requests // 10))))
        startup_timer = statistics.median(_startup(port, False) for _ in range(args.repeats))
        startup_full = statistics.median(_startup(port, True) for _ in range(args.repeats))

    rows = []
    for (client, stream, c), runs in results.items():
        rps = statistics.median(r["requests"] / r["wall"] for r in runs)
        server_rps = statistics.median(r["server_seen"] / r["wall"] for r in runs)
        ms = statistics.median(r["wall"] / r["requests"] * 1000 for r in runs)
        cpu_ms = statistics.median(r["cpu"] / r["requests"] * 1000 for r in runs)
        inflight = statistics.median(statistics.mean(r["inflight"]) for r in runs)
        row = {"client": client, "stream": stream, "concurrency": c, "requests_per_s": round(rps),
               "server_seen_per_s": round(server_rps), "ms_per_request": round(ms, 3), "cpu_ms_per_request":
               round(cpu_ms, 3), "mean_in_flight": round(inflight, 1)}
        if client == "harness" and c == 1:
            reported = statistics.median(statistics.mean(r["reported"]) * 1000 for r in runs)
            row["reported_ms"] = round(reported, 3)
            row["reported_vs_wall"] = round(reported / ms, 3)
        rows.append(row)

    print(f"machine: {os.cpu_count()} CPUs, server on core {server_core}, client on core {client_core}; "
          f"python {sys.version.split()[0]}; {args.requests} requests x {args.repeats} repeats (medians); "
          f"{CHUNKS} SSE chunks + usage per streamed reply")
    header = ("client", "mode", "c", "req/s", "server req/s", "ms/request", "CPU ms/req", "in flight", "reported/wall")
    print("  ".join(f"{h:>13}" for h in header))
    for r in rows:
        print("  ".join(f"{str(v):>13}" for v in (
            r["client"], "stream" if r["stream"] else "non-stream", r["concurrency"], r["requests_per_s"],
            r["server_seen_per_s"], r["ms_per_request"], r["cpu_ms_per_request"], r["mean_in_flight"],
            r.get("reported_vs_wall", ""))))
    print(f"start-up to first answered request: timing client {startup_timer:.2f} s; "
          f"whole benchmark package imported (strands included) {startup_full:.2f} s")
    agent_ms = statistics.median(r["wall"] / r["requests"] * 1000 for r in agent_runs)
    agent_cpu = statistics.median(r["cpu"] / r["requests"] * 1000 for r in agent_runs)
    sdk_ms = statistics.median(r["wall"] / r["requests"] * 1000 for r in sdk_runs)
    print(f"one strands agent round trip (OpenAIModel on one shared AsyncOpenAI, 100-chunk streamed reply, c=1): "
          f"{agent_ms:.2f} ms wall, {agent_cpu:.2f} ms CPU; the openai SDK alone, same reply: {sdk_ms:.2f} ms")
    get = {(r["client"], r["stream"], r["concurrency"]): r for r in rows}
    h64, h1 = get[("harness", True, 64)], get[("harness", True, 1)]
    goals = [
        ("streamed req/s at c=64 >= 800", h64["requests_per_s"] >= 800, h64["requests_per_s"]),
        ("added ms per 100-chunk stream at c=1 < 1.5", h1["ms_per_request"] < 1.5, h1["ms_per_request"]),
        ("reported latency within 10% of wall", abs(h1["reported_vs_wall"] - 1) <= 0.10, h1["reported_vs_wall"]),
        ("in flight at nominal c=64 >= 58", h64["mean_in_flight"] >= 58, h64["mean_in_flight"]),
        ("start-up < 1.5 s (timing client)", startup_timer < 1.5, round(startup_timer, 2)),
        ("strands agent round trip <= 15 ms", agent_ms <= 15, round(agent_ms, 2)),
    ]
    for name, ok, value in goals:
        print(f"  {'PASS' if ok else 'MISS'}  {name}: {value}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "agent_round_trip_ms": agent_ms, "openai_sdk_stream_ms": sdk_ms, "startup_timer_s": startup_timer,
                                         "startup_full_s": startup_full}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
