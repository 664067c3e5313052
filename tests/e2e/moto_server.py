"""moto's server, patched so the real CDK CLI can deploy this app's stacks into it.

Run: ``.venv/bin/python tests/e2e/moto_server.py --port 5123`` prints ``ready <port>`` once it
answers, then serves until stdin closes or it is terminated. Clients use
``AWS_ENDPOINT_URL=http://localhost:<port>`` (``localhost``, not ``127.0.0.1``: the CDK CLI
passes template URLs with the endpoint's host and moto parses other hosts as
virtual-host-style buckets; TOOLING.md 8.6).

Patches (TOOLING.md 8.2, 8.4, plus what the rig stacks need):

1. **SSM public parameters.** The catalog's DLAMI and Neuron AMI parameters
   (``/aws/service/...``) are seeded into moto's backend in the four regions, pointing at
   an AMI moto knows (``put_parameter`` refuses reserved names).
2. **SageMaker instance types.** moto rejects ``ml.g6.*``; its validator accepts any ``ml.*``.
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
4. **SageMaker runtime.** ``InvokeEndpoint`` answers a chat completion with text (the
   endpoint stack's chat probe needs one).
5. **Intrinsics.** ``Fn::GetStackOutput`` (CDK's reference to another stack's output, which
   moto does not know) is resolved from that stack's outputs.
6. **Launch failures** (``--inject-capacity g6.xlarge@us-east-2``, repeatable): Auto Scaling
   groups of that type in that region launch nothing and report ``InsufficientInstanceCapacity``
   for each of their zones in their scaling activities, as AWS does, to exercise the launch
   watch and ``python -m rigs up``'s failover against the real CLI. :func:`failing_launches`
   injects any other launch error code the same way (the handler tests use it in process).
7. **Reset keeps the seeds.** ``POST /moto-api/reset`` empties every backend; 1 and 4 are
   applied again (and injected activities forgotten), so a test can start from a clean account.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
import zipfile
from pathlib import Path
from typing import Callable

PROJECT_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_DIR))

ACCOUNT = "123456789012"
REGIONS = ("us-east-1", "us-east-2", "us-west-1", "us-west-2")

for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_SESSION_TOKEN": "testing", "AWS_EC2_METADATA_DISABLED": "true"}.items():
    os.environ.setdefault(key, value)
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("MOTO_EC2_LOAD_DEFAULT_AMIS", None)  # the seeded AMI parameters point at moto's default AMIs


def seed_ssm_parameters() -> list[str]:
    """The catalog's /aws/service/* AMI parameters, in every region, pointing at an AMI moto has."""
    from datetime import datetime, timezone

    from moto.ec2.models import ec2_backends
    from moto.ssm.models import Parameter, ssm_backends

    from rigs.catalog import load_catalog

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
    """A custom resource's handler answered FAILED; the stack fails as on CloudFormation."""

    def __init__(self, logical_id: str, resource_type: str, reason: str) -> None:
        self.logical_id, self.resource_type, self.reason = logical_id, resource_type, reason
        super().__init__(f"{logical_id} ({resource_type}): {reason}")


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

            add(failed.logical_id, "", failed.resource_type, "CREATE_FAILED",
                "Received response status [FAILED] from custom resource. Message returned: "
                f"{failed.reason} (RequestId: {mock_random.uuid4()})")
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


INJECTED_ACTIVITIES: dict[tuple[str, str], list[dict]] = {}
"""(region, group name) -> the scaling activities an injected launch failure recorded."""


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
    from datetime import datetime, timezone

    from moto.autoscaling import models as autoscaling_models
    from moto.autoscaling import responses as autoscaling_responses
    from moto.core.responses import ActionResult

    activities_by_group = INJECTED_ACTIVITIES
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
        now = datetime.now(timezone.utc)
        activities = activities_by_group.setdefault((self.region, self.name), [])
        for zone in zones:
            text = (LAUNCH_ERRORS.get(code) or message).format(type=self.instance_type, zone=zone)
            activities.insert(0, {
                "ActivityId": f"injected-{len(activities)}", "AutoScalingGroupName": self.name,
                "Description": f"Launching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances. "
                               f"{code} - {text} Launching EC2 instance failed.",
                "Cause": f"At {now:%Y-%m-%dT%H:%M:%SZ} an instance was started in response to a difference "
                         "between desired and actual capacity, increasing the capacity from 0 to 1.",
                "StartTime": now, "EndTime": now, "StatusCode": "Failed", "Progress": 100,
                "StatusMessage": f"Could not launch On-Demand Instances. {code} - {text} Launching EC2 instance failed.",
                "Details": json.dumps({"Subnet ID": "", "Availability Zone": zone}),
            })

    def describe_scaling_activities(self):  # noqa: ANN001
        name = self._get_param("AutoScalingGroupName")
        return ActionResult({"Activities": list(activities_by_group.get((self.region, name), []))})

    def undo() -> None:
        autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = original_replace
        autoscaling_responses.AutoScalingResponse.describe_scaling_activities = original_describe

    autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = replace_autoscaling_group_instances
    autoscaling_responses.AutoScalingResponse.describe_scaling_activities = describe_scaling_activities
    return undo


def keep_seeds_on_reset() -> None:
    from moto.moto_api._internal.models import MotoAPIBackend

    original = MotoAPIBackend.reset

    def reset(self) -> None:  # noqa: ANN001
        original(self)
        INJECTED_ACTIVITIES.clear()
        seed_ssm_parameters()
        answer_sagemaker_chat()

    MotoAPIBackend.reset = reset


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--inject-capacity", action="append", default=[], metavar="TYPE@REGION")
    parser.add_argument("--stop-on-stdin-eof", action="store_true",
                        help="stop when stdin closes (a parent test process holding a pipe)")
    args = parser.parse_args()

    from moto.server import ThreadedMotoServer

    relax_sagemaker_instance_types()
    resolve_stack_outputs()
    run_custom_resources_in_process(args.port)
    failing_launches({tuple(spec.split("@", 1)): ("InsufficientInstanceCapacity", "")
                      for spec in args.inject_capacity})
    keep_seeds_on_reset()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=args.port, verbose=False)
    server.start()
    seed_ssm_parameters()
    answer_sagemaker_chat()
    print(f"ready {args.port}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.stop_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
