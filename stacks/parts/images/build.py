"""A private ECR repository and an arm64 CodeBuild project that builds a server image into it."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from ..checks import acknowledge, skip_checkov
from ..custom_resources import BuildStop
from ..instance_profile import RIG_LOG_GROUP_PREFIX


class ImageBuild(Construct):
    """Build ``recipe_dir`` (a Dockerfile and a ``buildspec.yml``) on arm64 and push it to ECR.

    The recipe travels as a CDK file asset (staged offline at synth, uploaded by
    ``cdk deploy``); nothing is built at synth or deploy. Start a build with the
    ``start_build_command``; it pushes ``repository_name:image_tag``. Deleting the stack
    stops a build still running (:class:`BuildStop`): a deleted project's builds run on.

    Props:
        repository_name: the ECR repository, named as the catalog names the image.
        image_tag: the tag the build pushes.
        recipe_dir: the folder with the Dockerfile, the patch and buildspec.yml.
        build_args: extra environment for the build (e.g. VLLM_REF, GIB_PER_JOB).
        compute_type: the CodeBuild size (arm64 XLARGE: 32 vCPU, 64 GiB).
        timeout: the build's time limit.

    Attributes:
        repository, project: the ECR repository and the CodeBuild project.
        image_uri: ``<repository uri>:<image_tag>``.
        start_build_command: the AWS CLI command that starts a build.
    """

    def __init__(self, scope: Construct, id_: str, *, repository_name: str, image_tag: str, recipe_dir: Path,
                 build_args: dict[str, str], compute_type: codebuild.ComputeType = codebuild.ComputeType.X_LARGE,
                 timeout: cdk.Duration = cdk.Duration.hours(8)) -> None:
        super().__init__(scope, id_)
        stack = cdk.Stack.of(self)
        self.repository = ecr.Repository(
            self,
            "Repository",
            repository_name=repository_name,
            image_scan_on_push=True,
            # A tag names one build for good: a rebuild under the same tag is refused, so the rig
            # never boots another image under a tag it was tested with (bump the catalog's tag).
            image_tag_mutability=ecr.TagMutability.IMMUTABLE,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            empty_on_delete=True,
            lifecycle_rules=[ecr.LifecycleRule(description="keep the last five builds", max_image_count=5)],
        )
        skip_checkov(self.repository, "CKV_AWS_136",
                     "ECR encrypts every image at rest (AES-256) by default; this image is built from public sources "
                     "and holds no secret, and a customer-managed key would bill monthly and need grants for "
                     "CodeBuild and the rig role.")
        recipe = s3_assets.Asset(self, "Recipe", path=str(recipe_dir))
        log_group = logs.LogGroup(self, "BuildLog", log_group_name=f"{RIG_LOG_GROUP_PREFIX}image-build/{repository_name}",
                                  retention=logs.RetentionDays.ONE_MONTH, removal_policy=cdk.RemovalPolicy.DESTROY)
        skip_checkov(log_group, "CKV_AWS_158",
                     "Image build output (compiler and docker logs from public sources, no secrets); CloudWatch Logs "
                     "encrypts it at rest with a service key, and a customer-managed key would bill every month.")
        environment = {"REPOSITORY_URI": self.repository.repository_uri, "IMAGE_TAG": image_tag, **build_args}
        self.project = codebuild.Project(
            self,
            "Project",
            description=f"aws-inference: build {repository_name}:{image_tag} for arm64 and push it to ECR",
            source=codebuild.Source.s3(bucket=recipe.bucket, path=recipe.s3_object_key),
            build_spec=codebuild.BuildSpec.from_source_filename("buildspec.yml"),
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxArmBuildImage.AMAZON_LINUX_2023_STANDARD_3_0,
                compute_type=compute_type,
                privileged=True,
            ),
            environment_variables={key: codebuild.BuildEnvironmentVariable(value=value)
                                   for key, value in sorted(environment.items())},
            timeout=timeout,
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=log_group)),
        )
        self.repository.grant_pull_push(self.project)
        # The project's ARN spelled out from its name (a Ref), not read with Fn::GetAtt: the same ARN, and
        # moto's CloudFormation, which has no CodeBuild projects, resolves a Ref but not a GetAtt.
        BuildStop(self, "StopBuildsOnDelete", project_name=self.project.project_name,
                  project_arn=stack.format_arn(service="codebuild", resource="project",
                                               resource_name=self.project.project_name))
        self.image_uri: str = self.repository.repository_uri_for_tag(image_tag)
        self.start_build_command: str = cdk.Fn.join("", [
            "aws codebuild start-build --region ", stack.region, " --project-name ", self.project.project_name])

        project_id = stack.resolve(stack.get_logical_id(self.project.node.default_child))
        role_findings = {
            "AwsSolutions-IAM5[Resource::*]":
                "ecr:GetAuthorizationToken issues the registry login for the push and supports no resource-level "
                "permissions; pushes and pulls are limited to the one image repository.",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]":
                "CDK's asset grant: the build reads its recipe (the Dockerfile, patch and buildspec) from the "
                "bootstrap asset bucket, read-only.",
            "AwsSolutions-IAM5[Action::s3:GetObject*]":
                "CDK's asset grant: the build reads its recipe object from the bootstrap asset bucket, read-only.",
            "AwsSolutions-IAM5[Action::s3:List*]":
                "CDK's asset grant: the build lists the bootstrap asset bucket to fetch its recipe, read-only.",
            f"AwsSolutions-IAM5[Resource::arn:aws:logs:{stack.region}:<AWS::AccountId>:"
            f"log-group:/aws/codebuild/<{project_id}>:*]":
                "CodeBuild's default log permission for this project's own log group and its per-build streams.",
            f"AwsSolutions-IAM5[Resource::arn:aws:codebuild:{stack.region}:<AWS::AccountId>:"
            f"report-group/<{project_id}>-*]":
                "CodeBuild's default test-report permission, limited to report groups named after this project.",
        }
        for rule, reason in role_findings.items():
            acknowledge(self.project.role, rule, reason)
        acknowledge(self.project, "AwsSolutions-CB4",
                    "The build produces no CodeBuild artifacts: its only output is an image pushed to ECR, which "
                    "encrypts it at rest; logs go to a CloudWatch log group.")
