"""The g5g image build: ECR repository, arm64 CodeBuild project, recipe and the Turing patch."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from rigs.catalog.model import load_catalog
from rigs.contract import ImageOutputKey
from stacks.g5g_image_stack import GIB_PER_JOB, RECIPE_DIR, VLLM_REF
from tests.contract.templates import one
from tests.contract.templates import resources_of
from tests.contract.templates import stack_outputs

CATALOG = load_catalog()
RIG = CATALOG.get("g5g")
STACK = f"{RIG.stack_name}Image"
PATCH = RECIPE_DIR / "turing-shared-memory.patch"
PATCHED_FILE = "vllm/v1/attention/ops/triton_unified_attention.py"


@pytest.fixture(scope="module")
def template(templates) -> dict:
    return templates[STACK]


def test_image_stack_is_in_the_g5g_rigs_region(stack_regions):
    assert stack_regions[STACK] == stack_regions[RIG.stack_name]


def test_repository_is_named_as_the_catalog_names_the_image_and_cleans_up(template):
    repository = one(template, "AWS::ECR::Repository")
    assert repository["Properties"]["RepositoryName"] == RIG.image.repository
    assert repository["Properties"]["EmptyOnDelete"] is True
    assert repository["DeletionPolicy"] == "Delete"
    assert repository["Properties"]["ImageScanningConfiguration"] == {"ScanOnPush": True}


def test_project_builds_on_arm64_with_docker_and_the_catalog_tag(template):
    project = one(template, "AWS::CodeBuild::Project")["Properties"]
    environment = project["Environment"]
    assert environment["Type"] == "ARM_CONTAINER"
    assert environment["PrivilegedMode"] is True
    variables = {v["Name"]: v["Value"] for v in environment["EnvironmentVariables"]}
    assert variables["IMAGE_TAG"] == RIG.image.tag
    assert variables["VLLM_REF"] == VLLM_REF and variables["GIB_PER_JOB"] == GIB_PER_JOB
    assert "MAX_JOBS" not in variables  # the buildspec sets it from the build machine's memory
    assert variables["MODEL_ID"] == RIG.model_id  # the model whose processor the image must load
    assert project["Source"]["Type"] == "S3" and project["Source"]["BuildSpec"] == "buildspec.yml"
    assert project["TimeoutInMinutes"] <= 480


def test_recipe_is_staged_as_an_asset_with_all_its_files(assembly_dir: Path, template):
    project = one(template, "AWS::CodeBuild::Project")["Properties"]
    key = project["Source"]["Location"]["Fn::Join"][1][-1].lstrip("/")
    staged = assembly_dir / f"asset.{key.removesuffix('.zip')}"
    assert sorted(p.name for p in staged.iterdir()) == ["Dockerfile", "buildspec.yml", "image-checks.sh",
                                                        "turing-shared-memory.patch"]


def test_outputs_give_the_image_uri_and_how_to_start_the_build(template):
    outputs = stack_outputs(template)
    assert outputs[ImageOutputKey.IMAGE_URI].endswith(f"/{RIG.image.repository}:{RIG.image.tag}")
    assert outputs[ImageOutputKey.START_BUILD].startswith("aws codebuild start-build --region ")
    assert outputs[ImageOutputKey.BUILD_PROJECT]


def test_dockerfile_builds_the_stacks_vllm_ref_with_the_patch():
    """The stage order, torch's sm_75 check and the runtime's toolchain: tests/rigs/g5g/test_recipe.py."""
    dockerfile = (RECIPE_DIR / "Dockerfile").read_text()
    assert f"ARG VLLM_REF={VLLM_REF}" in dockerfile
    assert f"ARG MODEL_ID={RIG.model_id}" in dockerfile  # a build by hand checks the same model's processor
    assert "COPY turing-shared-memory.patch" in dockerfile and "git apply" in dockerfile
    assert "aws-inference Turing patch" in dockerfile, "the build checks the patch landed"
    assert not re.search(r"^FROM\s+\S+:latest", dockerfile, re.M)


def test_buildspec_pushes_the_tag_the_rig_pulls():
    spec = yaml.safe_load((RECIPE_DIR / "buildspec.yml").read_text())
    commands = " ".join(c for phase in spec["phases"].values() for c in phase["commands"])
    assert 'docker push "${REPOSITORY_URI}:${IMAGE_TAG}"' in commands
    assert "--platform linux/arm64" in commands


def upstream_shaped_file() -> str:
    """The launcher's shape around the patch site, as later vLLM sources have it."""
    return "\n".join([
        "import torch", "",
        "def _get_tile_size(head_size, sliding_window, element_size, is_prefill):",
        "    return 32 if is_prefill else 16", "",
        "def unified_attention(q, head_size, BLOCK_M, sliding_window_val=0, max_seqlen_q=2,",
        "                      total_num_q_blocks=1, num_kv_heads=1):",
        "    launch_num_stages = None",
        "    TILE_SIZE_PREFILL = _get_tile_size(",
        "        head_size, sliding_window_val, q.element_size(), is_prefill=True",
        "    )",
        "    TILE_SIZE_DECODE = _get_tile_size(",
        "        head_size, sliding_window_val, q.element_size(), is_prefill=False",
        "    )",
        "",
        "    # if batch contains a prefill",
        "    if max_seqlen_q > 1 or total_num_q_blocks * num_kv_heads > 128:",
        "        pass",
        "    return TILE_SIZE_PREFILL, TILE_SIZE_DECODE, launch_num_stages",
        ""])


@pytest.fixture(scope="module")
def patched_module(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("vllm")
    target = root / PATCHED_FILE
    target.parent.mkdir(parents=True)
    target.write_text(upstream_shaped_file())
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = subprocess.run(["git", "apply", "--verbose", str(PATCH)], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return {"source": target.read_text()}


class FakeTensor:
    def __init__(self, element_size: int) -> None:
        self._element_size = element_size
        self.device = "cuda:0"

    def element_size(self) -> int:
        return self._element_size


def run_patched(source: str, capability_major: int, head_size: int, element_size: int = 2, block_m: int = 16):
    class FakeCuda:
        @staticmethod
        def get_device_capability(device=None):
            return (capability_major, 5)

    class FakeTorch:
        cuda = FakeCuda

    namespace: dict = {}
    exec(compile(source.replace("import torch", ""), PATCHED_FILE, "exec"), namespace)
    namespace["torch"] = FakeTorch
    return namespace["unified_attention"](FakeTensor(element_size), head_size, block_m)


def test_patch_clamps_tiles_for_512_wide_heads_on_turing(patched_module):
    prefill, decode, stages = run_patched(patched_module["source"], capability_major=7, head_size=512)
    assert (prefill, decode, stages) == (16, 16, 1)
    assert (16 + 2 * prefill) * 512 * 2 <= 60000


def test_patch_keeps_tiles_that_already_fit_and_never_goes_below_16(patched_module):
    prefill, decode, stages = run_patched(patched_module["source"], capability_major=7, head_size=256)
    assert (prefill, decode, stages) == (32, 16, 1)  # (16 + 64) * 256 * 2 = 40,960 B fits
    prefill, decode, _ = run_patched(patched_module["source"], capability_major=7, head_size=1024, element_size=4)
    assert (prefill, decode) == (16, 16)


def test_patch_leaves_ampere_and_later_untouched(patched_module):
    assert run_patched(patched_module["source"], capability_major=8, head_size=512) == (32, 16, None)
    assert run_patched(patched_module["source"], capability_major=9, head_size=512) == (32, 16, None)


def test_patch_says_it_is_unverified_against_the_real_file():
    header = PATCH.read_text().split("--- a/", 1)[0]
    assert "UNVERIFIED" in header and "v0.27.2rc0" in header


def test_deleting_the_stack_stops_a_build_still_running(template, stack_regions):
    """The stop runs before the project is deleted (it references the project), with rights on that project only."""
    project_id = next(iter(resources_of(template, "AWS::CodeBuild::Project")))
    stop = one(template, "Custom::BuildStop")["Properties"]
    assert stop["ProjectName"] == {"Ref": project_id}
    function = template["Resources"][stop["ServiceToken"]["Fn::GetAtt"][0]]["Properties"]
    role = template["Resources"][function["Role"]["Fn::GetAtt"][0]]["Properties"]
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    assert [s for s in statements if s["Action"] != ["logs:CreateLogStream", "logs:PutLogEvents"]] == [{
        "Action": ["codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject", "codebuild:StopBuild"],
        "Effect": "Allow", "Resource": {"Fn::Join": ["", [
            f"arn:aws:codebuild:{stack_regions[STACK]}:", {"Ref": "AWS::AccountId"}, ":project/", {"Ref": project_id}]]}}]
