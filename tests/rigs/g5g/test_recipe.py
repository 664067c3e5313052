"""The g5g image's recipe, read as text (no Docker here, and no arm64 GPU host): its stages, the order of its
steps, and its own checks (``rigs/g5g/image-checks.sh``) against a stand-in torch.

What only a real build shows: that the tags, the torch and vLLM sources and the wheels it names exist, the build's
time and memory on CodeBuild, and that the patch applies to the real vLLM file (docs/rig-details.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_DIR

RECIPE = PROJECT_DIR / "rigs" / "g5g"
CHECKS = RECIPE / "image-checks.sh"
SHELLCHECK = PROJECT_DIR / ".venv" / "bin" / "shellcheck"
BASH = shutil.which("bash")


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comments dropped, continued lines joined."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line.strip() else "")
            for line in (raw.strip() for raw in joined.splitlines()) if line]


def stages(text: str) -> tuple[dict[str, str], list[list[tuple[str, str]]]]:
    """The ARG defaults before the first FROM, and each stage's instructions (its FROM first)."""
    found: list[list[tuple[str, str]]] = []
    defaults: dict[str, str] = {}
    for keyword, arguments in instructions(text):
        if keyword == "FROM":
            found.append([])
        if found:
            found[-1].append((keyword, arguments))
        elif keyword == "ARG":
            name, _, value = arguments.partition("=")
            defaults[name] = value
    return defaults, found


DEFAULTS, (BUILD, RUNTIME) = stages((RECIPE / "Dockerfile").read_text())


def index(stage: list[tuple[str, str]], pattern: str) -> int:
    """The position of the one instruction of ``stage`` matching ``pattern``."""
    found = [i for i, (keyword, arguments) in enumerate(stage) if re.search(pattern, f"{keyword} {arguments}")]
    assert len(found) == 1, (pattern, found)
    return found[0]


def test_the_base_images_are_nvidias_cuda_images_by_version_tag():
    assert BUILD[0] == ("FROM", "${CUDA_DEVEL_IMAGE} AS build") and RUNTIME[0] == ("FROM", "${CUDA_RUNTIME_IMAGE}")
    for name, kind in (("CUDA_DEVEL_IMAGE", "devel"), ("CUDA_RUNTIME_IMAGE", "runtime")):
        assert re.fullmatch(rf"nvcr\.io/nvidia/cuda:13\.\d+\.\d+-cudnn-{kind}-ubuntu24\.04(@sha256:[0-9a-f]{{64}})?",
                            DEFAULTS[name]), DEFAULTS[name]


def test_torch_is_built_for_sm75_and_checked_before_vllm_compiles():
    """PyTorch's own arm64 CUDA wheels start at sm_80: torch is built here, for the T4G's 7.5, and a torch
    without sm_75 stops the build before vLLM's hour-long compile."""
    assert ("ARG", "CUDA_ARCH=7.5") in BUILD
    assert not any("download.pytorch.org" in arguments for _, arguments in BUILD + RUNTIME)
    torch_build = index(BUILD, r'TORCH_CUDA_ARCH_LIST="\$\{CUDA_ARCH\}" USE_CUDA=1 .*pip wheel .* \. -w /src/wheels')
    assert "USE_CUDA=1" in BUILD[torch_build][1] and "pip install /src/wheels/torch-" in BUILD[torch_build][1]
    check = index(BUILD, r'^RUN image-checks torch-arch "\$\{CUDA_ARCH\}"$')
    vllm_clone = index(BUILD, r"git clone .*VLLM_REPO")
    vllm_compile = index(BUILD, r'TORCH_CUDA_ARCH_LIST="\$\{CUDA_ARCH\}" .*pip install -v --no-build-isolation \.')
    assert torch_build < check < vllm_clone < vllm_compile
    assert index(BUILD, r"^COPY image-checks.sh /usr/local/bin/image-checks$") < check
    assert "use_existing_torch.py" in BUILD[index(BUILD, "use_existing_torch")][1]  # vLLM keeps the torch built here


def test_the_runtime_stage_has_what_triton_compiles_with_and_checks_it():
    install = RUNTIME[index(RUNTIME, r"apt-get install")][1].split()
    assert {"gcc", "libc6-dev", "python3-dev"} <= set(install)
    copied = index(RUNTIME, r"^COPY --from=build /opt/venv /opt/venv$")
    checks = index(RUNTIME, r"^RUN image-checks triton-toolchain")
    assert copied < checks and RUNTIME[checks][1] == (
        'image-checks triton-toolchain && image-checks imports && image-checks torch-arch "${CUDA_ARCH}"   '
        '&& image-checks torchvision "${TORCHVISION_VERSION}" && image-checks processor "${MODEL_ID}"')
    assert ("ARG", "CUDA_ARCH=7.5") in RUNTIME  # an ARG is per stage: the runtime stage declares its own
    assert {("ARG", "TORCHVISION_VERSION"), ("ARG", "MODEL_ID")} <= set(RUNTIME)  # the defaults before FROM
    assert RUNTIME[-1][0] == "ENTRYPOINT" and "vllm.entrypoints.openai.api_server" in RUNTIME[-1][1]


def test_torchvision_is_built_against_the_torch_built_here_at_its_paired_release_and_checked_before_vllm():
    """vLLM's use_existing_torch.py drops torchvision from vLLM's requirements, and transformers' multimodal
    processors (Gemma 4's) import it: it is built from its release tag against the source-built torch (no wheel
    index, no isolated build that would fetch another torch), for the T4G, and checked before vLLM is cloned."""
    assert (DEFAULTS["TORCHVISION_VERSION"], BUILD[index(BUILD, r"^ARG TORCH_VERSION=")][1]) == (
        "0.27.0", "TORCH_VERSION=2.12.0")  # torch 2.12 pairs with torchvision 0.27 (pytorch/vision README)
    torch_build = index(BUILD, r"pip install /src/wheels/torch-")
    vision = BUILD[index(BUILD, r"git clone .*TORCHVISION_REPO")][1]
    assert '--branch "v${TORCHVISION_VERSION}"' in vision and 'TORCH_CUDA_ARCH_LIST="${CUDA_ARCH}"' in vision
    assert "FORCE_CUDA=1" in vision and "pip wheel --no-build-isolation --no-deps" in vision
    assert "pip install /src/wheels/torchvision-" in vision
    check = index(BUILD, r'^RUN image-checks torchvision "\$\{TORCHVISION_VERSION\}"$')
    assert torch_build < index(BUILD, r"git clone .*TORCHVISION_REPO") < check < index(BUILD, r"git clone .*VLLM_REPO")
    assert ("ARG", "TORCHVISION_VERSION") in BUILD


def test_every_file_the_recipe_copies_is_in_the_recipe():
    sources = [arguments.split()[0] for keyword, arguments in BUILD + RUNTIME
               if keyword == "COPY" and not arguments.startswith("--from")]
    assert sources and all((RECIPE / source).is_file() for source in sources), sources


def test_the_build_prints_the_base_images_digests_for_their_pins():
    spec = yaml.safe_load((RECIPE / "buildspec.yml").read_text())
    pre_build = " ".join(spec["phases"]["pre_build"]["commands"])
    assert "sed -n 's/^ARG CUDA_[A-Z]*_IMAGE=//p' Dockerfile" in pre_build and ".RepoDigests" in pre_build
    listed = subprocess.run(["sed", "-n", "s/^ARG CUDA_[A-Z]*_IMAGE=//p", str(RECIPE / "Dockerfile")],
                            capture_output=True, text=True, check=True).stdout.split()
    assert listed == [DEFAULTS["CUDA_DEVEL_IMAGE"], DEFAULTS["CUDA_RUNTIME_IMAGE"]]


def test_the_image_checks_are_shellcheck_clean_and_strict():
    text = CHECKS.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text
    result = subprocess.run([str(SHELLCHECK), "--severity=style", str(CHECKS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.fixture
def fake_torch(tmp_path: Path):
    """A ``torch`` package whose compiled architectures the test chooses (``None``: a CPU-only torch)."""
    def make(flags: str | None) -> dict[str, str]:
        package = tmp_path / "site" / "torch"
        package.mkdir(parents=True, exist_ok=True)
        cuda = f"    _cuda_getArchFlags = staticmethod(lambda: {flags!r})\n" if flags is not None else "    pass\n"
        (package / "__init__.py").write_text(f'__version__ = "2.12.0"\n\nclass _C:\n{cuda}')
        return {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    return make


def run_check(env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([BASH, str(CHECKS), *arguments], capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.parametrize(("flags", "ok", "line"), [
    ("sm_75", True, "torch 2.12.0 architectures: sm_75"),
    ("sm_75 sm_80", True, "torch 2.12.0 architectures: sm_75 sm_80"),
    ("sm_80 sm_90 sm_100 sm_110 sm_120 compute_120", False,
     "image check failed: torch 2.12.0 has no kernels for sm_75 (its architectures: sm_80 sm_90 sm_100 sm_110 sm_120 "
     "compute_120); build it with TORCH_CUDA_ARCH_LIST including 7.5"),
    ("sm_750", False, "image check failed: torch 2.12.0 has no kernels for sm_75 (its architectures: sm_750)"),
    (None, False, "image check failed: torch 2.12.0 has no CUDA build (torch._C._cuda_getArchFlags is missing)"),
])
def test_the_torch_check_passes_only_a_torch_with_sm75_kernels(fake_torch, flags, ok, line):
    result = run_check(fake_torch(flags), "torch-arch", "7.5")
    assert (result.returncode == 0) is ok
    said = (result.stdout if ok else result.stderr).strip().splitlines()
    assert said[-1].startswith(line), result.stderr


def test_the_toolchain_check_names_a_missing_compiler_or_missing_headers(tmp_path: Path):
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "head").symlink_to(shutil.which("head"))
    (tools / "python3").symlink_to(sys.executable)
    no_compiler = run_check({"PATH": str(tools)}, "triton-toolchain")
    assert no_compiler.returncode == 1
    assert no_compiler.stderr.strip() == "image check failed: no C compiler (gcc --version failed): install gcc"
    (tools / "gcc").write_text("#!/bin/sh\necho 'gcc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0'\n")
    (tools / "gcc").chmod(0o755)
    (tools / "python3").unlink()  # a python whose include folder has no Python.h, as a runtime image's
    (tools / "python3").write_text(f"#!/bin/sh\ncase \"$*\" in *sysconfig*) echo {tmp_path}/include ;; "
                                   f"*) exec {sys.executable} \"$@\" ;; esac\n")
    (tools / "python3").chmod(0o755)
    no_headers = run_check({"PATH": str(tools)}, "triton-toolchain")
    assert no_headers.returncode == 1 and no_headers.stderr.strip() == (
        f"image check failed: no Python headers ({tmp_path}/include/Python.h is missing): install python3-dev")
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "Python.h").write_text("")
    ready = run_check({"PATH": str(tools)}, "triton-toolchain")
    assert ready.returncode == 0 and ready.stdout.strip() == (
        f"C compiler: gcc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0; Python headers: {tmp_path}/include/Python.h")


def test_an_unknown_check_is_one_line(fake_torch):
    result = run_check(fake_torch("sm_75"), "gpu")
    assert result.returncode == 1 and result.stderr.strip() == (
        "image check failed: unknown check 'gpu': give torch-arch CAPABILITY, triton-toolchain, imports, "
        "torchvision VERSION or processor MODEL")


def fake_package(site: Path, name: str, source: str) -> None:
    (site / name).mkdir(parents=True, exist_ok=True)
    (site / name / "__init__.py").write_text(source)


@pytest.mark.parametrize(("vision", "ok", "line"), [
    ('__version__ = "0.27.0"', True, "torchvision 0.27.0 with its ops, on torch 2.12.0"),
    ('__version__ = "0.26.0"', False,
     "image check failed: torchvision 0.26.0 is not 0.27.0, the release paired with this torch"),
    ('__version__ = "0.27.0"\nOPS = False', False,
     "image check failed: torchvision 0.27.0 has no compiled ops: its C++ extension did not load against torch "
     "2.12.0; build it from source against this torch"),
    (None, False, "image check failed: torchvision does not import beside torch: ModuleNotFoundError: No module "
                  "named 'torchvision'"),
])
def test_the_torchvision_check_wants_the_paired_release_with_its_ops(fake_torch, tmp_path, vision, ok, line):
    env = fake_torch("sm_75")
    if vision is not None:
        fake_package(tmp_path / "site", "torchvision", vision + "\n")
        (tmp_path / "site" / "torchvision" / "extension.py").write_text(
            "import torchvision\ndef _has_ops():\n    return getattr(torchvision, 'OPS', True)\n")
    result = run_check(env, "torchvision", "0.27.0")
    assert (result.returncode == 0) is ok
    assert (result.stdout if ok else result.stderr).strip() == line


HUB = """\
import os
def snapshot_download(repo_id, local_dir, allow_patterns):
    assert allow_patterns == ["*.json", "*.jinja", "*.model", "*.txt"]  # the weights are never fetched
    for name in ("processor_config.json", "tokenizer.json", "chat_template.jinja"):
        open(os.path.join(local_dir, name), "w").write(repo_id)
    return local_dir
"""
TRANSFORMERS = """\
import os
class Gemma4ImageProcessor: pass
class GemmaTokenizerFast: pass
class Gemma4Processor:
    def __init__(self):
        self.image_processor, self.tokenizer = Gemma4ImageProcessor(), GemmaTokenizerFast()
class AutoProcessor:
    @staticmethod
    def from_pretrained(folder):
        assert sorted(os.listdir(folder)) == ["chat_template.jinja", "processor_config.json", "tokenizer.json"]
        try:
            import torchvision
        except ImportError:
            raise ImportError("Gemma4ImageProcessor requires the Torchvision library but it was not found in your "
                              "environment. Check out the instructions on the\\ninstallation page.")
        return Gemma4Processor()
"""


@pytest.mark.parametrize(("with_torchvision", "ok", "line"), [
    (True, True, "google/gemma-4-E2B-it: Gemma4Processor (Gemma4ImageProcessor, GemmaTokenizerFast)"),
    (False, False, "image check failed: google/gemma-4-E2B-it's processor does not load: ImportError: "
                   "Gemma4ImageProcessor requires the Torchvision library but it was not found in your environment. "
                   "Check out the instructions on the"),
])
def test_the_processor_check_loads_the_models_processor_from_its_files_as_vllm_will(fake_torch, tmp_path,
                                                                                   with_torchvision, ok, line):
    """A transformers whose Gemma 4 processor needs torchvision, as transformers 5.4 on: without it the build stops
    with transformers' own first line, instead of the rig at its first boot."""
    env = fake_torch("sm_75")
    fake_package(tmp_path / "site", "huggingface_hub", HUB)
    fake_package(tmp_path / "site", "transformers", TRANSFORMERS)
    if with_torchvision:
        fake_package(tmp_path / "site", "torchvision", '__version__ = "0.27.0"\n')
    result = run_check(env, "processor", "google/gemma-4-E2B-it")
    assert (result.returncode == 0) is ok
    assert (result.stdout if ok else result.stderr).strip() == line


BUILDSPEC = yaml.safe_load((RECIPE / "buildspec.yml").read_text())


def test_the_buildspec_commands_are_shellcheck_clean_for_codebuilds_sh(tmp_path: Path):
    script = tmp_path / "buildspec.sh"
    script.write_text("#!/bin/sh\n" + "\n".join(c for phase in BUILDSPEC["phases"].values()
                                                 for c in phase["commands"]) + "\n")
    result = subprocess.run([str(SHELLCHECK), "--severity=style", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(("memory_kib", "vcpus", "jobs"), [
    (64 * 1024 * 1024, 32, 10),  # CodeBuild's ARM XLarge as AWS lists it: 64 GB, 32 vCPUs
    (63 * 1024 * 1024, 32, 9),  # the same less what the kernel keeps
    (16 * 1024 * 1024, 8, 2),  # ARM Large
    (4 * 1024 * 1024, 2, 1),  # never none
    (512 * 1024 * 1024, 32, 32),  # never more than one a vCPU
])
def test_max_jobs_comes_from_the_build_machines_memory(tmp_path: Path, memory_kib, vcpus, jobs):
    """The buildspec's own command, on a machine of that memory and vCPU count, at the stack's GIB_PER_JOB."""
    from stacks.g5g_image_stack import GIB_PER_JOB

    [command] = [c for c in BUILDSPEC["phases"]["pre_build"]["commands"] if c.startswith("MAX_JOBS=")]
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       {memory_kib} kB\nMemFree:        1024 kB\n")
    (tmp_path / "nproc").write_text(f"#!/bin/sh\necho {vcpus}\n")
    (tmp_path / "nproc").chmod(0o755)
    result = subprocess.run(["sh", "-c", command.replace("/proc/meminfo", str(meminfo)) + '\necho "jobs=$MAX_JOBS"'],
                            capture_output=True, text=True, env={**os.environ, "GIB_PER_JOB": GIB_PER_JOB,
                                                                 "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"MAX_JOBS={jobs}: {memory_kib} kB of memory at {GIB_PER_JOB} GiB a job, {vcpus} vCPUs", f"jobs={jobs}"]
    build = " ".join(BUILDSPEC["phases"]["build"]["commands"])
    assert '--build-arg "MAX_JOBS=${MAX_JOBS}"' in build and '--build-arg "MODEL_ID=${MODEL_ID}"' in build
