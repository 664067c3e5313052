"""Does a server keep a connection alive after a streamed reply, and what does that cost the timing
client? (A measurement run on purpose, not a test.)

1. A raw probe: one streamed chat request on a plain keep-alive socket. It prints the reply's
   ``Connection`` / ``Keep-Alive`` headers and whether the server closed the socket right after the
   reply's last chunk, and how soon.
2. The harness's timing client (``agent.bench.clients.openai_http.OpenAIClient``) at concurrency 1
   (``--requests`` requests after a cold one) and 4 (four times as many): requests resent, requests
   that went out on a new connection, failures, and the range of end-to-end times.

llama.cpp's server announces ``Keep-Alive: timeout=5, max=100`` and then closes the connection
after every streamed reply (docs/benchmark.md says why); vLLM (uvicorn) keeps it open.

Usage: ``python benchmarks/connection_reuse.py --url http://127.0.0.1:PORT/v1 [--model M]
[--requests 20] [--max-tokens 40]`` (for the local rig, ``python -m agent.local_rig`` prints a URL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPT = "Write a short paragraph about the ocean."


def probe(url: str, model: str, max_tokens: int) -> str:
    """One streamed request on a raw socket: the keep-alive headers, and whether the server closed after."""
    parts = urlsplit(url)
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": max_tokens,
                       "stream": True}).encode()  # fmt: skip
    head = (f"POST {parts.path.rstrip('/')}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=120) as sock:
        sock.sendall(head + body)
        reader = sock.makefile("rb")
        status = reader.readline().decode().strip()
        headers = {}
        while (line := reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        if headers.get("transfer-encoding") == "chunked":
            while (size := int(reader.readline().strip() or b"0", 16)) > 0:
                reader.read(size + 2)
            reader.readline()
        else:
            reader.read(int(headers.get("content-length", "0")))
        end = time.perf_counter()
        sock.settimeout(1.0)
        try:
            closed = reader.read1(1) == b""
        except socket.timeout:
            closed = False
        after_us = (time.perf_counter() - end) * 1e6
    kept = {k: headers[k] for k in ("connection", "keep-alive") if k in headers}
    verdict = f"closed the connection {after_us:.0f} us after the last chunk" if closed else "kept it open for 1 s"
    return f"{status}; headers {kept or 'none about keep-alive'}; the server {verdict}"


async def client(url: str, model: str, concurrency: int, n: int, max_tokens: int) -> str:
    from agent.backends import Backend
    from agent.bench.clients.pool import ClientPool
    from agent.bench.clients.reply import ChatRequest
    from agent.bench.parts.sending import in_flight

    backend = Backend(name="server", label="server", kind="openai", model_id=model, tool_calls=False, base_url=url)
    request = ChatRequest.user(PROMPT, max_tokens)
    results = []

    async def send(_: int) -> None:
        results.append(await timer.send(request))

    async with ClientPool([backend], request_timeout_s=300.0, width=concurrency) as pool:
        timer = pool.client(backend)
        await timer.send(request)  # the cold request
        await in_flight(range(n), concurrency, send)
    e2e = sorted(r.t_done - r.t_sent for r in results if not r.error)
    spread = f"{e2e[0]:.2f}-{e2e[-1]:.2f} s" if e2e else "-"
    failed = [r.error for r in results if r.error]
    return (f"c={concurrency}: {sum(1 for r in results if r.reconnects)} of {len(results)} requests resent, "
            f"{sum(1 for r in results if r.new_connection)} on a new connection, {len(failed)} failed"
            f"{' (' + failed[0] + ')' if failed else ''}; e2e {spread}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server's OpenAI-compatible base URL, ending in /v1")
    parser.add_argument("--model", default="default", help="the model field to send")
    parser.add_argument("--requests", type=int, default=20, help="requests at concurrency 1 (x4 at concurrency 4)")
    parser.add_argument("--max-tokens", type=int, default=40)
    args = parser.parse_args(argv)
    print("raw probe:", probe(args.url, args.model, args.max_tokens))
    for concurrency, n in ((1, args.requests), (4, 4 * args.requests)):
        print("timing client:", asyncio.run(client(args.url, args.model, concurrency, n, args.max_tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
