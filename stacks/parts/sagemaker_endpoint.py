"""A SageMaker real-time endpoint for a serving container: role, model, config, endpoint."""

from __future__ import annotations

from typing import Mapping

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from .checks import acknowledge, skip_checkov

VARIANT = "AllTraffic"
LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints/"


class SageMakerEndpoint(Construct):
    """Model, endpoint config and endpoint, wired by attribute tokens, with generated names.

    Props:
        image: the container image URI (an ECR image, by digest where pinned).
        image_repository_arn: the ECR repository the role may pull from.
        environment: the container environment.
        instance_type: the ``ml.*`` instance type; one instance.
        startup_timeout_seconds: container health-check and model-download timeouts.

    Attributes:
        role: the execution role (ECR pull of that image, its own logs and metrics only).
        model, endpoint_config, endpoint: the L1 resources.
        endpoint_name, endpoint_arn: deploy-time strings.
        log_group_name: where SageMaker writes the container's logs.
    """

    def __init__(self, scope: Construct, id_: str, *, image: str, image_repository_arn: str,
                 environment: Mapping[str, str], instance_type: str, startup_timeout_seconds: int) -> None:
        super().__init__(scope, id_)
        stack = cdk.Stack.of(self)
        endpoint_logs = stack.format_arn(service="logs", resource="log-group",
                                         resource_name=f"{LOG_GROUP_PREFIX}*",
                                         arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        self.role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="aws-inference SageMaker endpoint: pull its serving image, write its logs and metrics",
            inline_policies={"Container": iam.PolicyDocument(statements=[
                iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
                iam.PolicyStatement(sid="PullServingImage", resources=[image_repository_arn], actions=[
                    "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]),
                iam.PolicyStatement(sid="WriteEndpointLogs", resources=[endpoint_logs, f"{endpoint_logs}:*"], actions=[
                    "logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"]),
                iam.PolicyStatement(sid="PutEndpointMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
                                    conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}),
            ])},
        )
        self.model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image, environment=dict(sorted(environment.items()))),
        )
        skip_checkov(self.model, "CKV_AWS_370",
                     "The serving container downloads its model from the Hugging Face Hub at start-up "
                     "(SM_VLLM_MODEL is a hub id); network isolation would block that download. Nothing reaches "
                     "the container but the SageMaker runtime API.")
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "Config",
            production_variants=[sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name=VARIANT,
                model_name=self.model.attr_model_name,
                initial_instance_count=1,
                instance_type=instance_type,
                container_startup_health_check_timeout_in_seconds=startup_timeout_seconds,
                model_data_download_timeout_in_seconds=startup_timeout_seconds,
            )],
        )
        self.endpoint = sagemaker.CfnEndpoint(self, "Endpoint",
                                              endpoint_config_name=self.endpoint_config.attr_endpoint_config_name)
        self.endpoint_name: str = self.endpoint.attr_endpoint_name
        self.endpoint_arn: str = self.endpoint.ref
        self.log_group_name: str = cdk.Fn.join("", [LOG_GROUP_PREFIX, self.endpoint_name])

        reasons = {
            "AwsSolutions-IAM5[Resource::*]":
                "ecr:GetAuthorizationToken and cloudwatch:PutMetricData support no resource-level permissions; "
                "metrics are limited to the /aws/sagemaker/* namespaces by condition, pulls to the one image repository.",
            f"AwsSolutions-IAM5[Resource::arn:aws:logs:{stack.region}:<AWS::AccountId>:"
            f"log-group:{LOG_GROUP_PREFIX}*]":
                "SageMaker names the endpoint's log group after the generated endpoint name; writes are limited "
                "to SageMaker endpoint log groups in this region.",
            f"AwsSolutions-IAM5[Resource::arn:aws:logs:{stack.region}:<AWS::AccountId>:"
            f"log-group:{LOG_GROUP_PREFIX}*:*]":
                "Log streams are named per instance by SageMaker; writes are limited to streams of SageMaker "
                "endpoint log groups in this region.",
        }
        for rule, reason in reasons.items():
            acknowledge(self.role, rule, reason)
