"""Shared fixtures. Templates are synthesized once per test session (jsii start-up dominates)."""

from __future__ import annotations

import ast
import gc
import itertools
import json
import os
import struct
import sys
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

# No test may reach AWS: dummy credentials, no instance-metadata probing.
for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}.items():
    os.environ.setdefault(key, value)
os.environ.pop("AWS_PROFILE", None)
# The CLIs are read as a user piping them would see them: pytest-xdist's workers set COLUMNS=80
# and LINES=24, which would wrap rich's tables at a width no plain run uses.
for key in ("COLUMNS", "LINES"):
    os.environ.pop(key, None)


def parse_file(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed with the garbage collector held off: CPython 3.11 raises "AST constructor
    recursion depth mismatch" when a collection inside the parse runs a finalizer (a coroutine an interrupt test
    left suspended, in a reference cycle, being closed), which made the tests that parse the whole tree fail by the
    order they ran in. Nothing is collected here (a collection per file of a large heap costs seconds)."""
    source = path.read_text(encoding="utf-8")
    gc.disable()
    try:
        return ast.parse(source, filename=str(path))
    finally:
        gc.enable()


LONGEST_FIRST = (
    "tests/e2e/test_cdk_against_moto.py",
    "tests/agent/bench/command/test_local_rig_e2e.py",
    "tests/e2e/test_rehearse_offline.py",
    "tests/agent/bench/parts/test_bfcl_local_rig.py",
    "tests/agent/bench/parts/test_tasks_local_rig.py",
    "tests/e2e/test_rehearse_interrupted.py",
    "tests/stacks/test_checkov.py",
)
"""The files that take longest (``--durations`` in ``scripts/test`` shows them), first, in the order they are handed
out. The files that synthesize the app again and again (the CDK CLI against moto's server, the rehearsals) alternate
with the local rig's, whose server keeps one core busy while its test waits, so that two of them seldom run at once:
on 2 cores the CDK test took 79 s beside the offline rehearsal (which took 79 s, 64 s alone) and 67 s beside
test_local_rig_e2e.py."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the longest files first: ``scripts/test`` has pytest-xdist hand out files in collection order
    (``--no-loadscope-reorder``), so the long ones start at once, on both workers, and the short ones
    fill in around them; last, one would hold a worker while the other idles."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


_STATE_DIRS = itertools.count()


@pytest.fixture(autouse=True)
def _own_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test its own ``.rigs`` state directory (``RIGS_STATE_DIR``, made only when something writes there): the
    user's placement and measured KV caches never reach a test, and a test's never reach the user's or another's."""
    monkeypatch.setenv("RIGS_STATE_DIR", str(tmp_path_factory.getbasetemp() / "state" / str(next(_STATE_DIRS))))


REAL_PLOTS = "real_plots"
"""The marker of the tests that read the plots (their size, their pixels, REPORT.html's images in a browser)."""


def _one_pixel_png() -> bytes:
    """A valid PNG of one grey pixel: what a plot's file holds in a test that does not read it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


class _Plots:
    """matplotlib's layout and rasterizing, the second a plot costs (text measured for every tick label,
    twice), only where a test reads the plots: elsewhere each figure is still built by the project's
    code, from the same summary, and its file written, holding one pixel. Marked tests (``real_plots``,
    decided per test before its fixtures, so a module's fixtures follow its ``pytestmark``) and every
    process a test starts (the CLI, the rehearsal) draw for real."""

    real = True
    installed = False
    png = _one_pixel_png()

    def install(self) -> None:
        """Put the switch into matplotlib's Figure, once per process that runs tests (not xdist's controller)."""
        if self.installed:
            return
        self.installed = True
        from matplotlib.figure import Figure

        savefig, tight_layout = Figure.savefig, Figure.tight_layout
        plots = self

        def save(figure: Figure, fname: object, *args: object, **kwargs: object) -> None:
            if plots.real:
                return savefig(figure, fname, *args, **kwargs)
            if hasattr(fname, "write"):
                fname.write(plots.png)
            else:
                Path(fname).write_bytes(plots.png)
            return None

        def layout(figure: Figure, *args: object, **kwargs: object) -> None:
            return tight_layout(figure, *args, **kwargs) if plots.real else None

        Figure.savefig, Figure.tight_layout = save, layout

    @contextmanager
    def drawn(self) -> Iterator[None]:
        """Plots drawn for real inside the block (for a module's fixture that only some of its tests read)."""
        before, self.real = self.real, True
        try:
            yield
        finally:
            self.real = before


PLOTS = _Plots()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{REAL_PLOTS}: the test reads the plots, so matplotlib lays them out and "
                                       "rasterizes them (elsewhere each plot's file holds one pixel)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    PLOTS.install()
    PLOTS.real = item.get_closest_marker(REAL_PLOTS) is not None


def synth(outdir: Path, context: dict | None = None) -> Path:
    """Synthesize the whole app into ``outdir`` and return it."""
    from app import build_app

    build_app(context=context, outdir=str(outdir)).synth()
    return outdir


@pytest.fixture(scope="session")
def assembly_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def manifest(assembly_dir: Path) -> dict:
    return json.loads((assembly_dir / "manifest.json").read_text())


@pytest.fixture(scope="session")
def stack_regions(manifest: dict) -> dict[str, str]:
    """Stack name -> the region it deploys to, from the cloud assembly manifest."""
    regions = {}
    for name, artifact in manifest["artifacts"].items():
        if artifact["type"] == "aws:cloudformation:stack":
            regions[name] = artifact["environment"].rsplit("/", 1)[-1]
    return regions


@pytest.fixture(scope="session")
def templates(assembly_dir: Path, stack_regions: dict[str, str]) -> dict[str, dict]:
    """Stack name -> synthesized template."""
    return {name: json.loads((assembly_dir / f"{name}.template.json").read_text()) for name in stack_regions}


def unpinned_sagemaker_rig():
    """The catalog's SageMaker rig with no per-region pin: its digest is read at deploy time everywhere."""
    from rigs.catalog.model import load_catalog

    return load_catalog().get("sagemaker").model_copy(update={"image_digests": {}})


@pytest.fixture(scope="session")
def unpinned_endpoint_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Region -> a cloud assembly of the SageMaker stack alone, with no pin, in each of the rig's regions
    (with cdk-nag, as the app has it). The app's own synth has the pinned default region."""
    import aws_cdk as cdk

    from app import project_context
    from rigs.deploy.options import parse_rig_options
    from stacks.endpoint_stack import InferenceEndpointStack
    from stacks.parts.checks import add_nag_checks

    rig = unpinned_sagemaker_rig()
    dirs = {}
    for region in rig.regions:
        outdir = tmp_path_factory.mktemp(f"endpoint-{region}")
        app = cdk.App(context=project_context(), outdir=str(outdir))
        InferenceEndpointStack(app, rig.stack_name, options=parse_rig_options(rig, region=region),
                               env=cdk.Environment(region=region), stack_name=rig.stack_name)
        add_nag_checks(app)
        app.synth()
        dirs[region] = outdir
    return dirs


@pytest.fixture(scope="session")
def unpinned_endpoint_templates(unpinned_endpoint_dirs: dict[str, Path]) -> dict[str, dict]:
    """Region -> the SageMaker stack's template with no pin (see ``unpinned_endpoint_dirs``)."""
    return {region: json.loads((outdir / "InferenceSageMaker.template.json").read_text())
            for region, outdir in unpinned_endpoint_dirs.items()}
