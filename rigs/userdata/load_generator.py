"""The load generator an EC2 rig runs for ``--load-from rig``, as one zip: the modules of the benchmark it needs, and
the Run Command script that runs it (``run_load.sh``).

The zip is the rig stack's load generator asset (``stacks/parts/load_generator.py``: uploaded by ``cdk deploy``
under its content's hash, its sha256 a stack output), and the offline stand-in runs the very same bytes. It is a pure
function of the files: entries sorted, each dated 1980-01-01 with mode 0644, so the same commit gives the same zip
and the same asset key (the version a run records).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from functools import lru_cache

from . import SCRIPT_DIR, _body, preamble

ROOT = SCRIPT_DIR.parent.parent
FILES = (
    "kit/__init__.py", "kit/command.py", "kit/utc.py",
    "agent/__init__.py", "agent/bench/__init__.py",
    "agent/bench/clients/__init__.py", "agent/bench/clients/base.py", "agent/bench/clients/openai_wire.py",
    "agent/bench/clients/reply.py", "agent/bench/clients/transport.py",
    "agent/bench/parts/__init__.py", "agent/bench/parts/sending.py", "agent/bench/parts/load_generator.py",
)
"""What ``python -m agent.bench.parts.load_generator`` imports, transitively (the standard library and aiohttp
aside): ``tests/rigs/userdata/test_load_generator.py`` runs the zip with every other module of the project out of
reach."""
RUN_SCRIPT = SCRIPT_DIR / "run_load.sh"
MODULE = "agent.bench.parts.load_generator"


@lru_cache(maxsize=1)
def bundle() -> bytes:
    """The zip's bytes (made once a process: synth asks for them and their sha256 once per rig stack, a run once per
    job)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name in sorted(FILES):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, (ROOT / name).read_bytes())
    return out.getvalue()


def sha256() -> str:
    return hashlib.sha256(bundle()).hexdigest()


def command(settings: dict[str, str]) -> str:
    """What Run Command runs: the ``LOAD_*`` ``settings`` exported, then ``run_load.sh``."""
    return preamble(settings, "the agent's load job") + _body(RUN_SCRIPT)
