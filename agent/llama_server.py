"""``python agent/llama_server.py --model M.gguf --port N ...``: llama.cpp's server, from the xllamacpp wheel.

The local rig's server process. ``xllamacpp.Server`` runs llama.cpp's own HTTP server
(the llama-server code: OpenAI-compatible endpoints, continuous batching, grammars) on
background threads of the process that creates it. This small program creates it with
llama-server's flags, says where it listens, and waits until it is told to stop, so the
agent can run it as a child process like any other helper: in its own process group,
under ``kit/guard.py``, stopped with that group (``kit/processes.py``).

It is run by its path and imports only the standard library and ``xllamacpp``: the
agent never loads the 100 MB native library into its own process.

``--check`` only loads the native library and says which llama.cpp build it is: the wheel
needs no compiler, but it links the OpenMP runtime (``libgomp.so.1``), which minimal Linux
images lack.

Exit status: 0 after SIGTERM or SIGINT (or a passed ``--check``), 1 when the server did not
start (the reason is in llama.cpp's own log lines above the last one), 2 for bad arguments,
3 when the library cannot be loaded.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="llama_server.py", description=__doc__.splitlines()[0],
                                     epilog="llama_server.py --check: only load the library and print its build")
    parser.add_argument("--model", type=Path, required=True, help="GGUF model file")
    parser.add_argument("--alias", required=True, help="the model name the server answers to")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True, help="CPU threads for generation and prompts")
    parser.add_argument("--ctx-size", type=int, required=True, help="KV-cache tokens")
    parser.add_argument("--parallel", type=int, required=True, help="request slots (continuous batching)")
    parser.add_argument("--kv-unified", action="store_true", help="one KV cache shared by all slots")
    parser.add_argument("--jinja", action="store_true", help="apply the chat template with the Jinja engine")
    parser.add_argument("--chat-template-file", type=Path, help="a Jinja chat template instead of the model's")
    parser.add_argument("--no-webui", action="store_true")
    parser.add_argument("--no-warmup", action="store_true")
    return parser.parse_args(argv)


def load_library():  # -> the xllamacpp module, or SystemExit(3) with the reason in one line
    try:
        import xllamacpp
    except ImportError as exc:
        reason = str(exc)
        if "libgomp" in reason:
            reason = (f"{reason}: the OpenMP runtime is missing; install it "
                      "(Debian/Ubuntu: apt-get install libgomp1; Fedora/RHEL: dnf install libgomp)")
        print(f"llama_server: cannot load llama.cpp's server library: {reason}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None
    return xllamacpp


def server_params(args: argparse.Namespace):  # -> xllamacpp.CommonParams
    """llama-server's flags as xllamacpp parameters (imported here, in the server process only)."""
    params = load_library().CommonParams()
    params.model.path = str(args.model)
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.kv_unified = args.kv_unified
    params.use_jinja = args.jinja
    if args.chat_template_file is not None:
        params.chat_template = args.chat_template_file.read_text()
    params.ui = not args.no_webui
    params.warmup = not args.no_warmup
    params.offline = True  # never reach a model hub; the model is a local file
    return params


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        print(f"llama_server: library loads (xllamacpp {load_library().__version__})")
        return 0
    args = parse_args(argv)
    if not args.model.is_file():
        print(f"llama_server: no model file at {args.model}", file=sys.stderr)
        return 2
    if args.chat_template_file is not None and not args.chat_template_file.is_file():
        print(f"llama_server: no chat template at {args.chat_template_file}", file=sys.stderr)
        return 2
    # Blocked before the library is loaded, so every thread llama.cpp starts inherits the mask:
    # a stop signal then waits for sigwait below, whichever thread it is sent to and whatever
    # handler llama.cpp installs on start (its own ends its loop but not this process). A signal
    # that came while the model loaded is taken as soon as the server is up.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        server = load_library().Server(server_params(args))
    except RuntimeError as exc:
        print(f"llama_server: the server did not start ({exc}); llama.cpp's reason is in the lines above",
              file=sys.stderr, flush=True)
        return 1
    print(f"llama_server: listening on {server.listening_address}", flush=True)
    stop = signal.sigwait(STOP_SIGNALS)
    print(f"llama_server: stopped by {signal.Signals(stop).name}", file=sys.stderr)
    # Ended here, without the server's destructor: it sometimes never returned, every thread
    # of the process waiting after "~Server: waiting for main loop exit" (once in CI, and in 1
    # of 25 stops right after a start on a loaded machine here; xllamacpp 2026.10.11549).
    # Nothing is lost: the server keeps no state; the kernel closes its sockets, frees its memory.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
