"""Read synthesized rig templates the way CloudFormation would, with deploy-time values faked.

Tokens a template leaves to deploy time (``Ref``, ``Fn::GetAtt``, ``Fn::GetStackOutput``)
are replaced by realistic stand-ins, so tests can check the user data a rig would
really boot with (its size, shellcheck) and the outputs the agent would really read.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

ACCOUNT = "123456789012"
# A real wait-condition handle URL is a pre-signed S3 URL of about 500 characters.
WAIT_HANDLE_URL = ("https://cloudformation-waitcondition-us-east-2.s3.us-east-2.amazonaws.com/"
                   "arn%3Aaws%3Acloudformation%3Aus-east-2%3A123456789012%3Astack/InferenceG6/"
                   "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/RigReadyHandle10A0EFEE?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                   "&X-Amz-Date=20261005T163218Z&X-Amz-SignedHeaders=host&X-Amz-Expires=86399"
                   "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20261005%2Fus-east-2%2Fs3%2Faws4_request"
                   "&X-Amz-Signature=" + "a" * 64 + "&X-Amz-Security-Token=" + "b" * 160)


def resources_of(template: dict, type_: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def one(template: dict, type_: str) -> dict:
    found = resources_of(template, type_)
    assert len(found) == 1, f"expected one {type_}, found {sorted(found)}"
    return next(iter(found.values()))


def stand_in(template: dict, node: dict) -> str:
    """A realistic deploy-time value for one intrinsic."""
    if "Ref" in node:
        name = node["Ref"]
        pseudo = {"AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com", "AWS::Partition": "aws",
                  "AWS::StackName": "InferenceStack"}
        if name in pseudo:
            return pseudo[name]
        resource = template["Resources"].get(name, {})
        kind = resource.get("Type")
        if kind == "AWS::CloudFormation::WaitConditionHandle":
            return WAIT_HANDLE_URL
        if kind == "AWS::Logs::LogGroup":
            return resource["Properties"].get("LogGroupName", f"/aws/generated/{name}")
        if kind == "AWS::AutoScaling::AutoScalingGroup":
            return f"InferenceStack-{name}-AbCdEfGh1234"
        if kind == "AWS::ECR::Repository":
            return resource["Properties"]["RepositoryName"]
        if kind == "AWS::SageMaker::Endpoint":
            return f"arn:aws:sagemaker:us-east-2:{ACCOUNT}:endpoint/endpoint-abcdef123456"
        return f"{name}-physical-id"
    if "Fn::GetAtt" in node:
        logical_id, attribute = node["Fn::GetAtt"]
        values = {"Zones": "us-east-2a,us-east-2b", "Iso": "2026-10-05T20:32:18Z", "At": "2026-10-05T20:32:18",
                  "EndpointName": "Endpoint8024A810-abcdef123456", "SubnetIds": "subnet-0a,subnet-0b",
                  "Digest": "sha256:" + "5e" * 32}
        if attribute == "Arn":
            resource = template["Resources"].get(logical_id, {})
            if resource.get("Type") == "AWS::ECR::Repository":
                return f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/{resource['Properties']['RepositoryName']}"
            return f"arn:aws:service:us-east-1:{ACCOUNT}:{logical_id}"
        return values.get(attribute, f"{logical_id}.{attribute}")
    if "Fn::GetStackOutput" in node:
        return f"{node['Fn::GetStackOutput']['OutputName']}-value"
    if "Fn::Sub" in node and isinstance(node["Fn::Sub"], str):
        return node["Fn::Sub"].replace("${AWS::AccountId}", ACCOUNT)
    raise ValueError(f"no stand-in for {node}")


def resolve(template: dict, value: Any) -> Any:
    """``value`` with intrinsics replaced: ``Fn::Join`` joined, references given stand-ins."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list):
        return [resolve(template, item) for item in value]
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(template, part)) for part in parts)
    if "Fn::Base64" in value:
        return base64.b64encode(str(resolve(template, value["Fn::Base64"])).encode()).decode()
    if "Fn::Select" in value:
        index, items = value["Fn::Select"]
        return resolve(template, items)[int(index)]
    if "Fn::Split" in value:
        separator, text = value["Fn::Split"]
        return str(resolve(template, text)).split(separator)
    if len(value) == 1 and next(iter(value)).startswith(("Ref", "Fn::")):
        return stand_in(template, value)
    return {key: resolve(template, item) for key, item in value.items()}


def user_data_script(template: dict) -> str:
    """The boot script of the stack's launch template, as the instance would receive it."""
    launch_template = one(template, "AWS::EC2::LaunchTemplate")
    encoded = resolve(template, launch_template["Properties"]["LaunchTemplateData"]["UserData"])
    return base64.b64decode(encoded).decode("utf-8")


def stack_outputs(template: dict) -> dict[str, str]:
    """``{OutputKey: OutputValue}`` as ``describe-stacks`` would return them after deploy."""
    return {key: str(resolve(template, output["Value"])) for key, output in template.get("Outputs", {}).items()}


def boot_environment(script: str) -> dict[str, str]:
    """The ``RIG_*`` variables as bash sees them after running the script's preamble."""
    import json
    import subprocess
    import sys

    preamble = script.split("\n# --- ", 1)[0]
    dump = f'{sys.executable} -c "import json, os; print(json.dumps({{k: v for k, v in os.environ.items() if k.startswith(\'RIG_\')}}))"'
    result = subprocess.run(["bash", "-c", f"{preamble}\n{dump}"], capture_output=True, text=True, check=True,
                            env={"PATH": "/usr/bin:/bin"})
    return json.loads(result.stdout)


def boot_scripts_text(template: dict, assembly_dir: Path) -> str:
    """The boot scripts the rig's user data fetches (its ``RIG_BOOT_SCRIPTS_URL``), as staged in the cloud assembly
    (``asset.<key>``), byte for byte what ``cdk deploy`` uploads."""
    url = boot_environment(user_data_script(template))["RIG_BOOT_SCRIPTS_URL"]
    return (assembly_dir / f"asset.{url.rsplit('/', 1)[1]}").read_text(encoding="utf-8")


def rig_environment(template: dict, assembly_dir: Path) -> dict[str, str]:
    """Every ``RIG_*`` variable the rig's boot sees: the user data's (the stack's) and the boot scripts' (the
    catalog entry's)."""
    return {**boot_environment(user_data_script(template)),
            **boot_environment(boot_scripts_text(template, assembly_dir))}
