"""moto's server, patched so the real CDK CLI can deploy this app's stacks into it.

Run: ``python -m rigs.offline.moto_server --port 5123`` (``--port 0``: a free port) prints
``ready <port>`` once it answers, then serves until stdin closes (``--stop-on-stdin-eof``) or it
is terminated. Clients use ``AWS_ENDPOINT_URL=http://localhost:<port>``: ``localhost``, not
``127.0.0.1``, because the CDK CLI passes template URLs with the endpoint's host, and moto reads
any host but ``localhost`` as a virtual-host-style bucket name (the deploy then fails with
``NoSuchBucket``). Everything here was observed against moto 5.2.5 (the version pinned in
``requirements.txt``); ``docs/offline-testing.md`` states each behaviour with moto's own
documentation or source (https://docs.getmoto.org/en/latest/docs/services/index.html lists what
moto implements per service), and ``tests/e2e/test_moto_behaviour.py`` checks them.

Patches, always on:

1. **SSM public parameters.** The catalog's DLAMI and Neuron AMI parameters (``/aws/service/...``)
   are seeded into moto's backend in the four regions, pointing at an AMI moto knows. moto has
   none of them, ``put_parameter`` refuses reserved names (``AccessDeniedException``), and a stack
   that reads a missing one fails inside moto.
2. **SageMaker instance types.** moto's validator accepts only older families (no ``ml.g6.*``);
   here it accepts any ``ml.*`` type.
3. **Custom resources without Docker.** moto runs a Lambda-backed custom resource by invoking
   the function in Docker, in a thread, and creates the resources that read its attributes
   before it answered. The app's custom-resource handlers are small inline Python
   (``stacks/parts/handlers``: usable zones, offered subnets, root volume, launch watch,
   deadline, endpoint probe); here each runs in-process, against this server, when its
   resource is created, and its answer (Data, or the failure reason) is applied at once.
   A FAILED answer fails the stack as CloudFormation does: a ``CREATE_FAILED`` event for the
   resource with ``Received response status [FAILED] from custom resource. Message returned:
   <reason>``, the created resources deleted, and the stack ``ROLLBACK_COMPLETE``. moto
   creates resources in template order, so the launch watch (after its group in the
   template) finds the group already launched, or its launches already failed.
4. **SageMaker runtime.** moto's ``InvokeEndpoint`` returns a static body for any endpoint
   name; here it answers a chat completion (the endpoint stack's chat probe needs one).
5. **Intrinsics.** ``Fn::GetStackOutput`` (CDK's reference to another stack's output, which
   moto does not know) is resolved from that stack's outputs.
6. **Launch failures** (``--inject-capacity g6.xlarge@us-east-2``, repeatable): Auto Scaling
   groups of that type in that region launch nothing and report ``InsufficientInstanceCapacity``
   for each of their zones in their scaling activities, as AWS does, to exercise the launch
   watch and ``python -m rigs up``'s failover against the real CLI. :func:`failing_launches`
   injects any other launch error code the same way (the handler tests use it in process).
7. **AWS's SageMaker image.** The catalog's SageMaker image tag is in a stand-in for AWS's own
   registry (account ``763104351884``) in every region of the rig, at the region's pinned digest where
   the catalog pins one: the SageMaker stack reads the tag's digest there at deploy time, and
   ``rigs doctor`` checks the pins. The repository does not carry our tag.
8. **Reset keeps the seeds.** ``POST /moto-api/reset`` empties every backend; the seeds are
   applied again (and injected activities forgotten), so a test can start from a clean account.
9. **One CloudFormation call at a time.** moto creates a stack's resources in the thread of the
   call that creates the stack, and creates any resource not created yet on a read
   (``DescribeStackResources``, outputs), so a read from another thread during the creation (``rigs
   up`` watches the stack while it deploys) can create a resource twice. Seen here once without
   this lock: a rig's second instance, outside its stack, still running after the stack was deleted.
10. **A network stack's deletion.** moto leaves a stack's route tables and internet gateway when it
    deletes the stack, so the VPC's deletion fails (``DependencyViolation``) and the network stays;
    here they are deleted with their stack, as on AWS, and so the VPC is too.
11. **A rig's boot scripts, fetched and checked.** moto runs no user data. When a rig stack's wait condition is
    created (on AWS its instance is booting then), the server does what the rig's user data does first
    (``rigs/userdata/bootstrap.sh``): it fetches the boot scripts the user data names from this server's S3 (where
    ``cdk deploy`` uploaded the asset) and checks their sha256 against the one baked in at synth. A missing object
    or another hash fails the stack with the bootstrap's own line as the wait condition's reason, as on AWS.
12. **Parameters kept on update.** CloudFormation keeps a parameter's previous value when an update says
    ``UsePreviousValue`` for it; moto looks the value up among the parameters the create call passed, so a
    parameter the stack took from its default (CDK's ``BootstrapVersion``) fails the update with a ``KeyError``
    (an HTML error page to the CLI). Here the stack's previous value is used, else the template's default.
    A rig moving to another region changes the base stacks' ``AWS::CDK::Metadata`` (the constructs that attach
    policies to their role), so ``cdk deploy --all`` updates a base stack the CLI created earlier.

With ``--stand-in URL`` (what ``python -m rigs rehearse --offline`` runs), an OpenAI-compatible
server at URL (the local rig) plays every rig's server, and the account is one a rehearsal can
run in:

13. **SSM agents.** ``DescribeInstanceInformation`` (which moto does not implement) lists every
    running instance of the region as ``Online``.
14. **Readiness.** A ``SendCommand`` that runs the rigs' readiness check (``curl ... /health``)
    succeeds only when the stand-in answers ``GET /health``; moto would report every command a
    success without running it.
15. **SageMaker endpoints answer from the stand-in.** ``InvokeEndpoint`` and
    ``InvokeEndpointWithResponseStream`` (which moto does not implement) on an ``InService``
    endpoint send the request body to the stand-in's ``/v1/chat/completions`` and return its
    answer; the stream as the AWS event stream of ``PayloadPart`` events SageMaker sends. An
    endpoint that does not exist is refused as SageMaker refuses it.
16. **The g5g image present.** The g5g image is in the account's ECR as if ``InferenceG5gImage``
    had built it, so ``rigs doctor`` passes its image check. The repository does not carry our tag.

Always on again:

17. **Run Command runs the load generator.** moto records a ``SendCommand`` and reports it a success at once,
    running nothing. A command that runs the rigs' load generator (``rigs/userdata/run_load.sh``, ``--load-from
    rig``) is run here, in a thread, as the instance's SSM agent would run it, with this Python in place of the
    server image's: its invocation is ``InProgress`` until the script ends, then ``Success`` or ``Failed`` with its
    output and exit status, as on AWS; ``CancelCommand`` (which moto does not implement) kills it and reports it
    ``Cancelled``. The script fetches and puts through this server's pre-signed S3 URLs; its job names the server to
    load (offline, the stand-in).
"""

from __future__ import annotations

import binascii
import io
import json
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import zipfile
from typing import Any, Callable, Iterable, Iterator

from kit.command import EXIT_OK, Parser
from kit.options import Option, Options
from rigs.shared_options import INJECT_CAPACITY

ACCOUNT = "123456789012"
REGIONS = ("us-east-1", "us-east-2", "us-west-1", "us-west-2")


def seed_ssm_parameters() -> list[str]:
    """The catalog's /aws/service/* AMI parameters, in every region, pointing at an AMI moto has."""
    from datetime import datetime, timezone

    from moto.ec2.models import ec2_backends
    from moto.ssm.models import Parameter, ssm_backends

    from rigs.catalog.model import load_catalog

    names = sorted({rig.ami_ssm_parameter for rig in load_catalog().ec2_rigs()})
    for region in REGIONS:
        images = ec2_backends[ACCOUNT][region].describe_images()
        by_arch = {}
        for image in images:
            by_arch.setdefault(getattr(image, "architecture", "x86_64"), image.id)
        for name in names:
            arch = "arm64" if "arm64" in name else "x86_64"
            ami = by_arch.get(arch) or next(iter(by_arch.values()))
            ssm_backends[ACCOUNT][region]._parameters[name].append(Parameter(
                account_id=ACCOUNT, name=name, value=ami, parameter_type="String", description=None,
                allowed_pattern=None, keyid=None, last_modified_date=datetime.now(timezone.utc), version=1,
                data_type="aws:ec2:image"))
    return names


def relax_sagemaker_instance_types() -> None:
    from moto.sagemaker import validators

    original = validators.is_one_of

    def is_one_of(value, choices, optional=False):
        if isinstance(value, str) and value.startswith("ml."):
            return True
        return original(value, choices, optional)

    validators.is_one_of = is_one_of


_custom_resource_lock = threading.Lock()
LAUNCH_WATCH_BUDGET_SECONDS = 20
"""The launch watch's budget here: moto launches (or fails) synchronously, so a watch that
waits at all has found nothing, and it must not hold the server for the real 13 minutes."""


class _CapturedResponse:
    """Stands in for ``urllib.request`` inside a handler: keeps the answer it would PUT to CloudFormation."""

    def __init__(self) -> None:
        self.body: dict | None = None

    def Request(self, url, data=None, method=None, headers=None):  # noqa: N802, ANN001 - urllib's names
        return data

    def urlopen(self, data, timeout=None):  # noqa: ANN001
        self.body = json.loads(data)


def run_handler(function, event: dict, port: int) -> dict:
    """Run an inline-Python Lambda handler here; return the response it sends CloudFormation."""
    module_name, entry = function.handler.rsplit(".", 1)
    with zipfile.ZipFile(io.BytesIO(function.code_bytes)) as archive:
        source = archive.read(f"{module_name}.py").decode()
    namespace: dict = {"__name__": module_name}
    captured = _CapturedResponse()
    with _custom_resource_lock:  # the handlers read the region from the environment
        saved = {k: os.environ.get(k) for k in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")}
        os.environ.update(AWS_REGION=function.region, AWS_DEFAULT_REGION=function.region,
                          AWS_ENDPOINT_URL=f"http://localhost:{port}")
        try:
            exec(compile(source, f"<lambda {function.function_name}>", "exec"), namespace)  # noqa: S102
            namespace["_request"] = captured
            namespace[entry](event, None)
        except Exception as exc:  # noqa: BLE001 - a crash is a FAILED answer
            captured.body = {"Status": "FAILED", "Reason": f"{type(exc).__name__}: {exc}", "Data": {}}
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    body = captured.body or {"Status": "FAILED", "Reason": "the handler sent no response", "Data": {}}
    print(f"custom resource {event['LogicalResourceId']} ({event['RequestType']}) in {function.region}: "
          f"{body['Status']} {body.get('Reason', '')} {body.get('Data', {})}", file=sys.stderr, flush=True)
    return body


class CustomResourceFailed(Exception):
    """A custom resource's handler answered FAILED (or a wait condition received FAILURE); the stack fails as on
    CloudFormation, with ``event_reason`` (CloudFormation's words for the resource's failure) in its events."""

    def __init__(self, logical_id: str, resource_type: str, reason: str, event_reason: str | None = None) -> None:
        self.logical_id, self.resource_type, self.reason = logical_id, resource_type, reason
        self.event_reason = event_reason or ("Received response status [FAILED] from custom resource. Message "
                                             f"returned: {reason} (RequestId: {_request_id()})")
        super().__init__(f"{logical_id} ({resource_type}): {reason}")


def _request_id() -> str:
    from moto.moto_api._internal import mock_random

    return str(mock_random.uuid4())


def run_custom_resources_in_process(port: int) -> None:
    """Answer Lambda-backed custom resources at creation, in-process, instead of in Docker.

    moto invokes the function in a thread and creates the resources that read its
    attributes in the same pass, before it answered (they get None); here the handler runs
    first and its Data is set before ``create_from_cloudformation_json`` returns. A FAILED
    answer fails and rolls back the stack, with the reason in its events, as CloudFormation does.
    """
    from moto.awslambda.utils import get_backend as get_lambda_backend
    from moto.cloudformation import custom_model
    from moto.cloudformation.models import Event, Stack
    from moto.moto_api._internal import mock_random

    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name,
                                        **kwargs):  # noqa: ANN001 - moto's signature
        properties = dict(cloudformation_json["Properties"])
        if kwargs["ResourceType"] == "Custom::LaunchWatch":
            properties["BudgetSeconds"] = str(LAUNCH_WATCH_BUDGET_SECONDS)
        function = get_lambda_backend(account_id, region_name).get_function(properties["ServiceToken"])
        resource = custom_model.CustomModel(region_name, str(mock_random.uuid4()), kwargs["LogicalId"],
                                            resource_name)
        event = {"RequestType": "Create", "ServiceToken": properties["ServiceToken"],
                 "ResponseURL": "http://localhost/captured", "StackId": kwargs["StackId"],
                 "RequestId": resource.request_id, "LogicalResourceId": kwargs["LogicalId"],
                 "ResourceType": kwargs["ResourceType"], "ResourceProperties": properties}
        body = run_handler(function, event, port)
        if body["Status"] != "SUCCESS":
            raise CustomResourceFailed(kwargs["LogicalId"], kwargs["ResourceType"], body.get("Reason", ""))
        resource.set_data(body.get("Data") or {})
        return resource

    original_create_resources = Stack.create_resources

    def create_resources(self) -> None:  # noqa: ANN001
        try:
            original_create_resources(self)
        except CustomResourceFailed as failed:
            def add(logical_id: str, physical_id: str, kind: str, status: str, reason: str) -> None:
                self.events.append(Event(stack_id=self.stack_id, stack_name=self.name, logical_resource_id=logical_id,
                                         physical_resource_id=physical_id, resource_type=kind,
                                         resource_status=status, resource_status_reason=reason,
                                         resource_properties=None))

            add(failed.logical_id, "", failed.resource_type, "CREATE_FAILED", failed.event_reason)
            add(self.name, self.stack_id, "AWS::CloudFormation::Stack", "ROLLBACK_IN_PROGRESS",
                f"The following resource(s) failed to create: [{failed.logical_id}]. Rollback requested by user.")
            self.resource_map.delete()
            # moto creates resources lazily on any later read (describe_stack_resources, outputs):
            # a rolled-back stack has none left to create, as on CloudFormation.
            self.resource_map._resource_json_map = {}
            self.output_map._output_json_map = {}
            add(self.name, self.stack_id, "AWS::CloudFormation::Stack", "ROLLBACK_COMPLETE", "")
            self.status = "ROLLBACK_COMPLETE"

    custom_model.CustomModel.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)
    Stack.create_resources = create_resources


def resolve_stack_outputs() -> None:
    from moto.cloudformation import parsing

    original = parsing.clean_json

    def clean_json(resource_json, resources_map):  # noqa: ANN001 - moto's signature
        if isinstance(resource_json, dict) and "Fn::GetStackOutput" in resource_json:
            # CDK's cross-stack reference within one account; moto does not know this intrinsic
            from moto.cloudformation.models import cloudformation_backends

            spec = {k: original(v, resources_map) for k, v in resource_json["Fn::GetStackOutput"].items()}
            backend = cloudformation_backends[resources_map._account_id][spec.get("Region")
                                                                          or resources_map._region_name]
            stack = backend.get_stack(spec["StackName"])
            for output in stack.output_map.values():
                if output.key == spec["OutputName"]:
                    return output.value
            return None
        return original(resource_json, resources_map)

    parsing.clean_json = clean_json


def keep_previous_parameters() -> None:
    """Patch 12: ``UsePreviousValue`` takes the stack's previous value, else the template's default."""
    from moto.cloudformation.models import CloudFormationBackend

    original = CloudFormationBackend._resolve_update_parameters

    def resolve(self, instance, incoming_params):  # noqa: ANN001 - moto's signature
        defaults = {key: spec.get("Default") for key, spec in instance.template_dict.get("Parameters", {}).items()}
        kept = [{"ParameterKey": p["ParameterKey"],
                 "ParameterValue": instance.parameters.get(p["ParameterKey"], defaults.get(p["ParameterKey"]))}
                if p.get("UsePreviousValue") and p["ParameterKey"] not in instance.parameters else p
                for p in incoming_params]
        return original(self, instance, kept)

    CloudFormationBackend._resolve_update_parameters = resolve


def check_boot_scripts() -> Callable[[], None]:
    """Patch 11: a rig stack's wait condition is created only if its boot scripts are in S3 with the sha256 its user
    data carries; otherwise the stack fails with the bootstrap's line. Returns the function that undoes the patch."""
    from moto.cloudformation import parsing

    original = parsing.parse_and_create_resource

    def parse_and_create_resource(logical_id, resource_json, resources_map, account_id, region_name):  # noqa: ANN001
        if resource_json.get("Type") == "AWS::CloudFormation::WaitCondition":
            refusal = boot_scripts_refusal(resources_map._parsed_resources.values(), account_id)
            if refusal is not None:
                raise CustomResourceFailed(logical_id, resource_json["Type"], refusal,
                                           f"WaitCondition received failed message: '{refusal}' for uniqueId: boot")
        return original(logical_id, resource_json, resources_map, account_id, region_name)

    parsing.parse_and_create_resource = parse_and_create_resource

    def undo() -> None:
        parsing.parse_and_create_resource = original

    return undo


def boot_scripts_refusal(resources: Iterable[Any], account_id: str) -> str | None:
    """What the bootstrap of the stack's launch template would refuse with (``<rig>: <line>``), or None: its boot
    scripts are there with the sha256 it carries (said on stderr), or the stack has no rig."""
    import hashlib
    import shlex

    from moto.ec2.models.launch_templates import LaunchTemplate
    from moto.s3.models import s3_backends

    for resource in resources:
        if not isinstance(resource, LaunchTemplate) or resource.latest_version().user_data is None:
            continue
        settings = {}
        for line in resource.latest_version().user_data.decode().splitlines():
            if line.startswith("export RIG_"):
                name, _, value = shlex.split(line)[1].partition("=")
                settings[name] = value
        url, wanted = settings.get("RIG_BOOT_SCRIPTS_URL"), settings.get("RIG_BOOT_SCRIPTS_SHA256")
        if url is None or wanted is None:
            continue
        bucket, _, key = url.removeprefix("s3://").partition("/")
        try:
            found = s3_backends[account_id]["aws"].get_object(bucket, key)
        except Exception as exc:  # noqa: BLE001 - moto's MissingBucket: the bucket is not there
            found, missing = None, f"{type(exc).__name__}: {exc}"
        else:
            missing = "An error occurred (404) when calling the HeadObject operation: Not Found"
        if found is None:  # as `aws s3 cp` says it, with the bootstrap's words around it
            return f"{settings['RIG_NAME']}: could not fetch the boot scripts {url}: fatal error: {missing} "
        data = found.value
        got = hashlib.sha256(data).hexdigest()
        if got != wanted:
            return (f"{settings['RIG_NAME']}: boot scripts {url} have sha256 {got}, not {wanted} as synthesized: "
                    "not running them")
        print(f"boot scripts {url}: sha256 {got} as synthesized", file=sys.stderr, flush=True)
    return None


def answer_sagemaker_chat() -> None:
    from moto.moto_api._internal.models import moto_api_backend

    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
                       "usage": {"prompt_tokens": 12, "completion_tokens": 1}})
    for region in REGIONS:
        moto_api_backend.set_sagemaker_result(body=body, content_type="application/json", prod_variant="AllTraffic",
                                              custom_attrs="", account_id=ACCOUNT, region=region)


LAUNCH_ERRORS = {
    "InsufficientInstanceCapacity": "We currently do not have sufficient {type} capacity in the Availability Zone "
                                    "you requested ({zone}). Our system will be working on provisioning additional "
                                    "capacity.",
}
"""AWS's message for an injected launch error code; any other code takes the message given."""


INJECTED_ACTIVITIES: list[dict[tuple[str, str], list[dict]]] = []
"""Per active injection: (region, group name) -> the scaling activities its launch failures recorded."""


def failing_launches(blocked: dict[tuple[str, str], tuple[str, str]]) -> Callable[[], None]:
    """Auto Scaling groups of ``(type, region)`` launch nothing and record ``(code, message)``.

    As on AWS when a group's launches fail: the group holds no instance, and its scaling
    activities (which moto otherwise leaves empty) say ``Could not launch On-Demand
    Instances. <Code> - <message>. Launching EC2 instance failed.`` for each zone tried (for a
    capacity code; any other code fails the same way in every zone, so it is recorded once).
    ``{type}`` and ``{zone}`` in a message are filled in. Returns the function that undoes
    the patch (the server never calls it; in-process tests do).
    """
    if not blocked:
        return lambda: None
    from moto.autoscaling import models as autoscaling_models
    from moto.autoscaling import responses as autoscaling_responses
    from moto.core.responses import ActionResult

    from kit import utc

    activities_by_group: dict[tuple[str, str], list[dict]] = {}
    INJECTED_ACTIVITIES.append(activities_by_group)
    original_replace = autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances
    original_describe = autoscaling_responses.AutoScalingResponse.describe_scaling_activities

    def replace_autoscaling_group_instances(self, count_needed, propagated_tags):  # noqa: ANN001
        failure = blocked.get((self.instance_type, self.region))
        if failure is None or count_needed <= 0:
            return original_replace(self, count_needed, propagated_tags)
        code, message = failure
        zones = sorted(self.availability_zones or [])
        if self.vpc_zone_identifier:
            ec2 = self.autoscaling_backend.ec2_backend
            subnets = ec2.describe_subnets(subnet_ids=self.vpc_zone_identifier.split(","))
            zones = sorted({subnet.availability_zone for subnet in subnets})
        if code not in LAUNCH_ERRORS:
            zones = zones[:1]
        now = utc.now()
        activities = activities_by_group.setdefault((self.region, self.name), [])
        for zone in zones:
            text = (LAUNCH_ERRORS.get(code) or message).format(type=self.instance_type, zone=zone)
            activities.insert(0, {
                "ActivityId": f"injected-{len(activities)}", "AutoScalingGroupName": self.name,
                "Description": f"Launching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances. "
                               f"{code} - {text} Launching EC2 instance failed.",
                "Cause": f"At {utc.iso_seconds(now)} an instance was started in response to a difference "
                         "between desired and actual capacity, increasing the capacity from 0 to 1.",
                "StartTime": now, "EndTime": now, "StatusCode": "Failed", "Progress": 100,
                "StatusMessage": f"Could not launch On-Demand Instances. {code} - {text} Launching EC2 instance failed.",
                "Details": json.dumps({"Subnet ID": "", "Availability Zone": zone}),
            })

    def describe_scaling_activities(self):  # noqa: ANN001
        name = self._get_param("AutoScalingGroupName")
        return ActionResult({"Activities": list(activities_by_group.get((self.region, name), []))})

    def undo() -> None:
        INJECTED_ACTIVITIES.remove(activities_by_group)
        autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = original_replace
        autoscaling_responses.AutoScalingResponse.describe_scaling_activities = original_describe

    autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = replace_autoscaling_group_instances
    autoscaling_responses.AutoScalingResponse.describe_scaling_activities = describe_scaling_activities
    return undo


def delete_networks_with_their_stacks() -> Callable[[], None]:
    """A stack's route tables and internet gateway go with it, so its VPC can go too.

    moto's CloudFormation deletes a stack's VPC and subnets but not its ``AWS::EC2::RouteTable``
    or ``AWS::EC2::InternetGateway`` (neither model has a deletion step), so the VPC's deletion
    fails with ``DependencyViolation`` and the network stays after the stack is gone; CloudFormation
    on AWS deletes all of them. Here each route table is deleted, and each gateway detached and
    deleted, when its stack is; moto's stack deletion retries what failed until nothing is left.
    Returns the function that undoes the patch (in-process tests call it).
    """
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.internet_gateways import InternetGateway
    from moto.ec2.models.route_tables import RouteTable

    def delete_route_table(cls, resource_name, cloudformation_json, account_id, region_name):  # noqa: ANN001
        ec2_backends[account_id][region_name].delete_route_table(resource_name)

    def delete_gateway(cls, resource_name, cloudformation_json, account_id, region_name):  # noqa: ANN001
        backend = ec2_backends[account_id][region_name]
        gateway = backend.internet_gateways.get(resource_name)
        if gateway is None:
            return
        if gateway.vpc is not None:
            backend.detach_internet_gateway(resource_name, gateway.vpc.id)
        backend.delete_internet_gateway(resource_name)

    patched = {RouteTable: delete_route_table, InternetGateway: delete_gateway}
    originals = {model: model.__dict__.get("delete_from_cloudformation_json") for model in patched}
    for model, function in patched.items():
        model.delete_from_cloudformation_json = classmethod(function)

    def undo() -> None:
        for model, original in originals.items():
            if original is None:
                del model.delete_from_cloudformation_json
            else:
                model.delete_from_cloudformation_json = original

    return undo


def keep_seeds_on_reset(seeds: Iterable[Callable[[], Any]]) -> None:
    """``POST /moto-api/reset`` empties every backend; the seeds are applied again after it."""
    from moto.moto_api._internal.models import MotoAPIBackend

    original = MotoAPIBackend.reset
    seeds = tuple(seeds)

    def reset(self) -> None:  # noqa: ANN001
        original(self)
        for activities in INJECTED_ACTIVITIES:
            activities.clear()
        for seed in seeds:
            seed()

    MotoAPIBackend.reset = reset


# --- the stand-in: one server plays every rig's (--stand-in) --------------------------------------


class StandIn:
    """The OpenAI-compatible server that plays every rig's server (``http://127.0.0.1:P``, with or
    without ``/v1``)."""

    def __init__(self, url: str, timeout_s: float = 600.0) -> None:
        self.root = url.rstrip("/").removesuffix("/v1")
        self.timeout_s = timeout_s

    def healthy(self) -> bool:
        """Whether ``GET /health`` answers 200 (what the rigs' readiness check asks of their server)."""
        try:
            with urllib.request.urlopen(f"{self.root}/health", timeout=10) as response:  # noqa: S310 - loopback
                return response.status == 200
        except (OSError, ValueError):
            return False

    def chat(self, body: bytes) -> Any:
        """POST the body to ``/v1/chat/completions``; the open response (raises urllib's errors)."""
        request = urllib.request.Request(f"{self.root}/v1/chat/completions", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        return urllib.request.urlopen(request, timeout=self.timeout_s)  # noqa: S310 - loopback


def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of the AWS event stream encoding (string headers only): a prelude with the total
    and header lengths and its CRC32, the headers, the payload, and the message's CRC32."""
    encoded = b"".join(struct.pack(">B", len(name)) + name.encode() + b"\x07" + struct.pack(">H", len(value))
                       + value.encode() for name, value in headers.items())
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message))


def payload_part(data: bytes) -> bytes:
    """A ``PayloadPart`` event of ``InvokeEndpointWithResponseStream`` carrying ``data``."""
    return event_message({":event-type": "PayloadPart", ":content-type": "application/octet-stream",
                          ":message-type": "event"}, data)


_CREDENTIAL_REGION = re.compile(r"Credential=[^/]+/\d{8}/(?P<region>[a-z0-9-]+)/")
_INVOCATION = re.compile(r"^/endpoints/(?P<name>[^/]+)/(?P<kind>invocations|invocations-response-stream)$")
_READINESS = re.compile(r"\bcurl\b.*/health\b")


def _region(environ: dict) -> str:
    match = _CREDENTIAL_REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
    return match.group("region") if match else "us-east-1"


def _body(environ: dict) -> bytes:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    return environ["wsgi.input"].read(length) if length else b""


def _json_reply(start_response: Callable, status: str, data: dict, error: str | None = None) -> list[bytes]:
    headers = [("Content-Type", "application/x-amz-json-1.1")]
    if error:
        headers.append(("x-amzn-ErrorType", error))
    start_response(status, headers)
    return [json.dumps(data, default=str).encode()]


def describe_instance_information(environ: dict, start_response: Callable) -> list[bytes]:
    """SSM ``DescribeInstanceInformation``: every running instance of the region is ``Online``."""
    from datetime import datetime, timezone

    from moto.ec2.models import ec2_backends

    request = json.loads(_body(environ) or b"{}")
    wanted: set[str] | None = None
    for item in request.get("Filters") or []:
        if item.get("Key") == "InstanceIds":
            wanted = set(item.get("Values") or [])
    for item in request.get("InstanceInformationFilterList") or []:
        if item.get("key") == "InstanceIds":
            wanted = set(item.get("valueSet") or [])
    now = datetime.now(timezone.utc).timestamp()
    listed = [{"InstanceId": instance.id, "PingStatus": "Online", "LastPingDateTime": now,
               "AgentVersion": "stand-in", "PlatformType": "Linux", "ResourceType": "EC2Instance",
               "IPAddress": instance.private_ip}
              for instance in ec2_backends[ACCOUNT][_region(environ)].all_instances()
              if instance.state == "running" and (wanted is None or instance.id in wanted)]
    return _json_reply(start_response, "200 OK", {"InstanceInformationList": listed})


def invoke_endpoint(stand_in: StandIn, name: str, streamed: bool, environ: dict,
                    start_response: Callable) -> Iterable[bytes]:
    """``InvokeEndpoint`` / ``InvokeEndpointWithResponseStream`` answered by the stand-in."""
    from moto.sagemaker.models import sagemaker_backends

    region = _region(environ)
    endpoint = sagemaker_backends[ACCOUNT][region].endpoints.get(name)
    body = _body(environ)
    if endpoint is None or endpoint.endpoint_status != "InService":
        message = (f"Endpoint {name} of account {ACCOUNT} not found." if endpoint is None
                   else f"Endpoint {name} is {endpoint.endpoint_status}, not InService.")
        return _json_reply(start_response, "400 Bad Request", {"__type": "ValidationError", "message": message},
                           "ValidationError")
    try:
        response = stand_in.chat(body)
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:500].decode(errors="replace")
        return _json_reply(start_response, "424 Failed Dependency", {
            "__type": "ModelError", "OriginalStatusCode": exc.code,
            "message": f"Received server error ({exc.code}) from primary with message \"{detail}\"."}, "ModelError")
    except OSError as exc:
        return _json_reply(start_response, "424 Failed Dependency", {
            "__type": "ModelError", "message": f"the stand-in at {stand_in.root} did not answer: {exc}"},
            "ModelError")
    variant = ("x-Amzn-Invoked-Production-Variant", "AllTraffic")
    if not streamed:
        with response:
            data = response.read()
        start_response("200 OK", [("Content-Type", response.headers.get("Content-Type", "application/json")), variant])
        return [data]

    def parts() -> Iterator[bytes]:
        with response:
            while chunk := response.read1(65536):
                yield payload_part(chunk)

    start_response("200 OK", [("Content-Type", "application/vnd.amazon.eventstream"), variant])
    return parts()


_SERVICE = re.compile(r"Credential=[^/]+/\d{8}/[a-z0-9-]+/(?P<service>[a-z0-9-]+)/")
_CLOUDFORMATION_LOCK = threading.Lock()


def dispatch(stand_in: StandIn | None) -> None:
    """Before moto's own dispatch: one CloudFormation call at a time, SSM ``CancelCommand`` (patch 17), and (with a
    stand-in) SSM ``DescribeInstanceInformation`` and the SageMaker runtime answered here."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.__call__

    def __call__(self, environ, start_response):  # noqa: ANN001, N807 - WSGI
        if environ.get("HTTP_X_AMZ_TARGET") == "AmazonSSM.CancelCommand":
            return cancel_command(environ, start_response)
        if stand_in is not None:
            if environ.get("HTTP_X_AMZ_TARGET") == "AmazonSSM.DescribeInstanceInformation":
                return describe_instance_information(environ, start_response)
            match = _INVOCATION.match(environ.get("PATH_INFO", ""))
            if match and environ.get("REQUEST_METHOD") == "POST":
                return invoke_endpoint(stand_in, match.group("name"), match.group("kind") != "invocations", environ,
                                       start_response)
        service = _SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
        if service and service.group("service") == "cloudformation":
            with _CLOUDFORMATION_LOCK:
                return list(original(self, environ, start_response))
        return original(self, environ, start_response)

    DomainDispatcherApplication.__call__ = __call__


def check_readiness_on_stand_in(stand_in: StandIn) -> None:
    """A readiness command (``curl ... /health``) succeeds only when the stand-in answers ``/health``."""
    from moto.ssm.models import Command

    original = Command.get_invocation

    def get_invocation(self, instance_id, plugin_name):  # noqa: ANN001
        invocation = original(self, instance_id, plugin_name)
        commands = (self.parameters or {}).get("commands") or []
        if not any(_READINESS.search(str(command)) for command in commands):
            return invocation
        if stand_in.healthy():
            return {**invocation, "Status": "Success", "StatusDetails": "Success", "ResponseCode": 0}
        return {**invocation, "Status": "Failed", "StatusDetails": "Failed", "ResponseCode": 22,
                "StandardErrorContent": f"the stand-in at {stand_in.root} did not answer GET /health"}

    Command.get_invocation = get_invocation


_LOAD_RUNS: dict[str, dict[str, Any]] = {}
"""Patch 17's load generator commands by command id: the script's process, then how it ended."""
_LOAD_LOCK = threading.Lock()


def run_load_commands() -> None:
    """A Run Command of the load generator runs its script here, in a thread; the invocation follows it."""
    from moto.ssm.models import Command

    original = Command.get_invocation

    def run(script: str, state: dict[str, Any]) -> None:
        process = subprocess.Popen(["bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True, env={**os.environ, "LOAD_PYTHON": sys.executable})
        state["process"] = process
        out, err = process.communicate(script)
        state.update(code=process.returncode, out=out[-24000:], err=err[-8000:])

    def get_invocation(self, instance_id, plugin_name):  # noqa: ANN001
        invocation = original(self, instance_id, plugin_name)
        commands = (self.parameters or {}).get("commands") or []
        if not any("LOAD_GENERATOR_URL=" in str(command) for command in commands):
            return invocation
        with _LOAD_LOCK:
            state = _LOAD_RUNS.get(self.command_id)
            if state is None:
                state = _LOAD_RUNS[self.command_id] = {}
                threading.Thread(target=run, args=("\n".join(map(str, commands)), state), daemon=True).start()
        if state.get("cancelled"):
            return {**invocation, "Status": "Cancelled", "StatusDetails": "Cancelled", "ResponseCode": -1}
        if "code" not in state:
            return {**invocation, "Status": "InProgress", "StatusDetails": "InProgress", "ResponseCode": -1}
        status = "Success" if state["code"] == 0 else "Failed"
        return {**invocation, "Status": status, "StatusDetails": status, "ResponseCode": state["code"],
                "StandardOutputContent": state["out"], "StandardErrorContent": state["err"]}

    Command.get_invocation = get_invocation


def cancel_command(environ: dict, start_response: Callable) -> list[bytes]:
    """SSM ``CancelCommand`` (which moto does not implement): a load generator command of patch 17 is stopped, its
    script's process group killed; any other command has run already (moto runs nothing)."""
    command_id = json.loads(_body(environ) or b"{}").get("CommandId")
    with _LOAD_LOCK:
        state = _LOAD_RUNS.get(command_id)
    if state is not None and "code" not in state:
        state["cancelled"] = True
        if state.get("process") is not None:
            try:
                os.killpg(state["process"].pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return _json_reply(start_response, "200 OK", {})


DLC_REGISTRY = "763104351884"
"""AWS's Deep Learning Containers registry, where the SageMaker image is pinned by digest per region."""


def seed_dlc_images() -> None:
    """The catalog's SageMaker image tag in a stand-in for AWS's registry, in every region of the rig: at
    the pinned digest where the catalog pins one, else at the digest moto gives it (the stack reads it at
    deploy time, as from AWS's registry). Not tagged ours."""
    from moto.ecr.models import ecr_backends

    from rigs.catalog.model import load_catalog
    from rigs.catalog.images import ecr_image

    for rig in load_catalog().sagemaker_rigs():
        for region in rig.regions:
            image = ecr_image(rig.image.reference(region))
            if image is not None:
                _put_image(ecr_backends[ACCOUNT][region], image.repository, image.account, rig.image.tag,
                           rig.image.digest_for(region))


def seed_images() -> None:
    """The g5g image in the account's ECR, as ``InferenceG5gImage`` would build it; not tagged ours."""
    from moto.ecr.models import ecr_backends

    from rigs.catalog.model import load_catalog
    from rigs.catalog.images import OWN_IMAGE_PREFIX

    catalog = load_catalog()
    for rig in catalog.ec2_rigs():
        if rig.image.repository.startswith(OWN_IMAGE_PREFIX):
            for region in rig.regions:
                _put_image(ecr_backends[ACCOUNT][region], rig.image.repository, None, rig.image.tag,
                           rig.image.digest)


def _put_image(backend: Any, repository: str, registry: str | None, tag: str, digest: str | None) -> None:
    if repository not in backend.repositories:
        backend.create_repository(repository_name=repository, registry_id=registry, encryption_config=None,
                                  image_scan_config={"scanOnPush": False}, image_tag_mutability="MUTABLE", tags=[])
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"digest": f"sha256:{'0' * 64}"}, "layers": [], "tag": tag})
    backend.put_image(repository, manifest, tag, digest=digest)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerOptions(Options):
    """The options of ``python -m rigs.offline.moto_server``."""

    port = Option(("--port",), "port on 127.0.0.1 (0: a free one)", type=int, required=True)
    inject_capacity = INJECT_CAPACITY.but(help="groups of that type in that region report "
                                               "InsufficientInstanceCapacity")
    stand_in = Option(("--stand-in",), "an OpenAI-compatible server that plays every rig's server (see above)",
                      metavar="URL")
    stop_on_stdin_eof = Option(("--stop-on-stdin-eof",), "stop when stdin closes (a parent process holding a pipe)",
                               default=False, switch=True)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m rigs.offline.moto_server", description=__doc__.split("\n\n")[0])
    ServerOptions.add_arguments(parser)
    args = ServerOptions.of(parser.parse_args(argv))
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SESSION_TOKEN": "testing", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        os.environ.setdefault(key, value)
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("MOTO_EC2_LOAD_DEFAULT_AMIS", None)  # the seeded AMI parameters point at moto's default AMIs
    port = args.port or free_port()

    from moto.server import ThreadedMotoServer

    relax_sagemaker_instance_types()
    resolve_stack_outputs()
    run_custom_resources_in_process(port)
    delete_networks_with_their_stacks()
    check_boot_scripts()
    keep_previous_parameters()
    run_load_commands()
    failing_launches({tuple(spec.split("@", 1)): ("InsufficientInstanceCapacity", "")
                      for spec in args.inject_capacity})
    seeds: list[Callable[[], Any]] = [seed_ssm_parameters, seed_dlc_images]
    stand_in = StandIn(args.stand_in) if args.stand_in else None
    dispatch(stand_in)
    if stand_in is not None:
        check_readiness_on_stand_in(stand_in)
        seeds.append(seed_images)
    else:
        seeds.append(answer_sagemaker_chat)
    keep_seeds_on_reset(seeds)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    for seed in seeds:
        seed()
    print(f"ready {port}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.stop_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    server.stop()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
