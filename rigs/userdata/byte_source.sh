#!/usr/bin/env bash
# The tunnel's byte source, on the instance's loopback only (no inbound port): through it the agent measures
# what one SSM port forward carries before the benchmark (agent/reach/tunnel.py). GET /bytes?n=N: N bytes;
# POST /sink: reads the body, answers its length; GET /events?n=N&size=S: N server-sent events of S bytes.
set -euo pipefail

BYTE_SOURCE_PORT=8790

byte_source_program() {
  cat <<'PY'
import sys
from http.server import BaseHTTPRequestHandler as B, ThreadingHTTPServer as S
from urllib.parse import parse_qs, urlsplit
class H(B):
    protocol_version = "HTTP/1.1"
    def ask(s, k, d):
        return min(int(parse_qs(urlsplit(s.path).query).get(k, [d])[0]), 1 << 32)
    def head(s, kind, n):
        s.send_response(200); s.send_header("Content-Type", kind); s.send_header("Content-Length", str(n))
        s.end_headers()
    def do_GET(s):
        p = urlsplit(s.path).path
        one = b"0" * 65536 if p == "/bytes" else b"data: " + b"0" * max(0, s.ask("size", 225) - 8) + b"\n\n"
        n = s.ask("n", 0) if p == "/bytes" else s.ask("n", 0) * len(one)
        if p not in ("/bytes", "/events"):
            return s.send_error(404)
        s.head("text/event-stream" if p == "/events" else "application/octet-stream", n)
        while n > 0:
            s.wfile.write(one[:n]); s.wfile.flush(); n -= min(n, len(one))
    def do_POST(s):
        n = int(s.headers.get("Content-Length") or 0); got = 0
        while got < n and (chunk := s.rfile.read(min(65536, n - got))):
            got += len(chunk)
        s.head("text/plain", len(str(got))); s.wfile.write(str(got).encode())
    def log_message(s, *a):
        pass
srv = S(("127.0.0.1", int(sys.argv[1]) if sys.argv[1:] else 0), H)
print(f"byte source: listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
srv.serve_forever()
PY
}

start_byte_source() {  # in the background with its own log; the rig serves without it if it cannot start
  byte_source_program > /usr/local/bin/rig-byte-source.py
  nohup python3 /usr/local/bin/rig-byte-source.py "$BYTE_SOURCE_PORT" > "$LOG_DIR/byte-source.log" 2>&1 &
  log "tunnel byte source on 127.0.0.1:$BYTE_SOURCE_PORT (log: $LOG_DIR/byte-source.log)"
}
