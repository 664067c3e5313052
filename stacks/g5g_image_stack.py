"""The one-time build stack for the g5g server image (vLLM for sm_75 on arm64, Turing patch)."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from constructs import Construct

from rigs.catalog.model import Ec2Rig
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, ImageOutputKey

from .parts.images.build import ImageBuild

RECIPE_DIR = Path(__file__).resolve().parent.parent / "rigs" / "g5g"
VLLM_REF = "v0.27.2rc0"
"""The vLLM version the reference built, the floor for Gemma 4 (docs/reference-run.md, "The g5g image")."""
GIB_PER_JOB = "6"
"""Memory one compile job may take, GiB (an estimate): the buildspec runs as many jobs as the build machine's
memory, less 4 GiB for the system and Docker, holds at this size, at most one a vCPU; on CodeBuild's ARM XLarge
(64 GB, 32 vCPUs: https://docs.aws.amazon.com/codebuild/latest/userguide/build-env-ref-compute-types.html) 9 or 10,
where a fixed 16 left 4 GB a job. The reference's vLLM build ran 12 jobs in a g5g.4xlarge's 32 GiB (about 2.7 GiB a
job, docs/reference-run.md); nvcc on CUTLASS-heavy units (torch's memory-efficient attention, vLLM's scaled-mm
kernels) takes several GiB each, and machines of 64 GB run out of memory at high MAX_JOBS in
vllm-project/vllm#14452, so 6 leaves room; a build killed for memory costs hours."""


class InferenceG5gImageStack(cdk.Stack):
    """An ECR repository named as the catalog names the g5g image, and the CodeBuild project that fills it.

    Deploy once per region the g5g rig runs in, then start the build (the
    ``StartBuildCommand`` output; hours). The g5g rig pulls ``ImageUri`` at boot.
    """

    def __init__(self, scope: Construct, id_: str, *, rig: Ec2Rig, recipe_dir: Path = RECIPE_DIR,
                 vllm_ref: str = VLLM_REF, **kwargs) -> None:
        super().__init__(scope, id_, tags={TAG_MANAGED_BY: MANAGED_BY}, **kwargs)
        build = ImageBuild(
            self,
            "Image",
            repository_name=rig.image.repository,
            image_tag=rig.image.tag,
            recipe_dir=recipe_dir,
            build_args={"VLLM_REF": vllm_ref, "GIB_PER_JOB": GIB_PER_JOB, "MODEL_ID": rig.model_id},
        )
        cdk.CfnOutput(self, ImageOutputKey.IMAGE_URI, value=build.image_uri)
        cdk.CfnOutput(self, ImageOutputKey.BUILD_PROJECT, value=build.project.project_name)
        cdk.CfnOutput(self, ImageOutputKey.START_BUILD, value=build.start_build_command)
