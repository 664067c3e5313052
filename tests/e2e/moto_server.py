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
   (``stacks/parts/handlers``); here each runs in-process, against this server, when its
   resource is created, and its answer (Data, or the failure reason) is applied at once.
4. **SageMaker runtime.** ``InvokeEndpoint`` answers a chat completion with text (the
   endpoint stack's chat probe needs one).
5. **Intrinsics.** moto answers ``Fn::GetAZs: ""`` with four zones of us-east-1 whatever the
   stack's region; here it answers the stack's region's zones (6 in us-east-1, 3 in
   us-east-2, 4 in us-west-2), as AWS does. ``Fn::GetStackOutput`` (CDK's reference to
   another stack's output, which moto does not know) is resolved from that stack's outputs.
6. **Capacity injection** (``--inject-capacity g6.xlarge@us-east-2``, repeatable): Auto Scaling
   groups of that type in that region launch nothing and report ``InsufficientInstanceCapacity``
   in their scaling activities, to exercise ``python -m rigs up``'s failover against the real CLI.
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


def run_custom_resources_in_process(port: int) -> None:
    """Answer Lambda-backed custom resources at creation, in-process, instead of in Docker.

    moto invokes the function in a thread and creates the resources that read its
    attributes in the same pass, before it answered (they get None); here the handler runs
    first and its Data is set before ``create_from_cloudformation_json`` returns.
    """
    from moto.awslambda.utils import get_backend as get_lambda_backend
    from moto.cloudformation import custom_model
    from moto.cloudformation.exceptions import ValidationError
    from moto.moto_api._internal import mock_random

    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name,
                                        **kwargs):  # noqa: ANN001 - moto's signature
        properties = cloudformation_json["Properties"]
        function = get_lambda_backend(account_id, region_name).get_function(properties["ServiceToken"])
        resource = custom_model.CustomModel(region_name, str(mock_random.uuid4()), kwargs["LogicalId"],
                                            resource_name)
        event = {"RequestType": "Create", "ServiceToken": properties["ServiceToken"],
                 "ResponseURL": "http://localhost/captured", "StackId": kwargs["StackId"],
                 "RequestId": resource.request_id, "LogicalResourceId": kwargs["LogicalId"],
                 "ResourceType": kwargs["ResourceType"], "ResourceProperties": properties}
        body = run_handler(function, event, port)
        if body["Status"] != "SUCCESS":
            raise ValidationError(message=f"{kwargs['LogicalId']} ({kwargs['ResourceType']}) failed: "
                                          f"{body.get('Reason', '')}")
        resource.set_data(body.get("Data") or {})
        return resource

    custom_model.CustomModel.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)


def zones_of_the_stack_region() -> None:
    from moto.cloudformation import parsing
    from moto.ec2.models import ec2_backends

    original = parsing.clean_json

    def clean_json(resource_json, resources_map):  # noqa: ANN001 - moto's signature
        if isinstance(resource_json, dict) and "Fn::GetAZs" in resource_json:
            region = resource_json.get("Fn::GetAZs") or resources_map._region_name
            if isinstance(region, dict):
                region = original(region, resources_map) or resources_map._region_name
            zones = ec2_backends[resources_map._account_id][region].describe_availability_zones()
            return sorted(zone.name for zone in zones)
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


_failed_activities: dict[tuple[str, str], list[dict]] = {}


def inject_capacity_failures(specs: list[str]) -> None:
    """``type@region``: Auto Scaling groups of that type there cannot launch.

    As on AWS when a group's launches fail: the stack completes, the group holds no
    instance, and its scaling activities (which moto otherwise leaves empty) say
    ``InsufficientInstanceCapacity`` for each zone tried.
    """
    if not specs:
        return
    from datetime import datetime, timezone

    from moto.autoscaling import models as autoscaling_models
    from moto.autoscaling import responses as autoscaling_responses
    from moto.core.responses import ActionResult

    blocked = {tuple(spec.split("@", 1)) for spec in specs}
    original = autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances

    def replace_autoscaling_group_instances(self, count_needed, propagated_tags):  # noqa: ANN001
        if (self.instance_type, self.region) not in blocked or count_needed <= 0:
            return original(self, count_needed, propagated_tags)
        zones = sorted(self.availability_zones or [])
        if self.vpc_zone_identifier:
            ec2 = self.autoscaling_backend.ec2_backend
            subnets = ec2.describe_subnets(subnet_ids=self.vpc_zone_identifier.split(","))
            zones = sorted({subnet.availability_zone for subnet in subnets})
        now = datetime.now(timezone.utc)
        activities = _failed_activities.setdefault((self.region, self.name), [])
        for zone in zones:
            activities.insert(0, {
                "ActivityId": f"injected-{len(activities)}", "AutoScalingGroupName": self.name,
                "Description": "Launching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances. "
                               "InsufficientInstanceCapacity - We currently do not have sufficient "
                               f"{self.instance_type} capacity in the Availability Zone you requested ({zone}). "
                               "Launching EC2 instance failed.",
                "Cause": f"At {now:%Y-%m-%dT%H:%M:%SZ} an instance was started in response to a difference "
                         "between desired and actual capacity, increasing the capacity from 0 to 1.",
                "StartTime": now, "EndTime": now, "StatusCode": "Failed", "Progress": 100,
                "StatusMessage": "Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently "
                                 f"do not have sufficient {self.instance_type} capacity in the Availability Zone "
                                 f"you requested ({zone}). (injected by tests/e2e/moto_server.py)",
                "Details": json.dumps({"Subnet ID": "", "Availability Zone": zone}),
            })

    def describe_scaling_activities(self):  # noqa: ANN001
        name = self._get_param("AutoScalingGroupName")
        return ActionResult({"Activities": list(_failed_activities.get((self.region, name), []))})

    autoscaling_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = replace_autoscaling_group_instances
    autoscaling_responses.AutoScalingResponse.describe_scaling_activities = describe_scaling_activities


def keep_seeds_on_reset() -> None:
    from moto.moto_api._internal.models import MotoAPIBackend

    original = MotoAPIBackend.reset

    def reset(self) -> None:  # noqa: ANN001
        original(self)
        _failed_activities.clear()
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
    zones_of_the_stack_region()
    run_custom_resources_in_process(args.port)
    inject_capacity_failures(args.inject_capacity)
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
