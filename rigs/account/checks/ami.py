"""Each EC2 rig's AMI in each of its regions: its SSM parameter resolves, and the root volume the deploy will size
for it (snapshot plus what the rig needs free, never below the catalog's floor; a failure only where no gp3 volume
could hold it)."""

from __future__ import annotations

from rigs import aws
from rigs.account.checks.base import FAIL, OK, WARN, Check, Finding, Scope, each_rig, on_instances, unknown
from rigs.catalog.model import MAX_ROOT_VOLUME_GIB, Ec2Rig


def ami(scope: Scope, rig: Ec2Rig, region: str) -> list[Finding]:
    """The rig's AMI parameter resolves, and the root volume it needs (each parameter read once a region)."""
    resolved = scope.once(("ami", rig.ami_ssm_parameter, region),
                          lambda: resolve_ami(scope.clients, rig.ami_ssm_parameter, region))
    return _ami_findings(rig, region, resolved)


def _ami_findings(rig: Ec2Rig, region: str, resolved: tuple[str, int | None] | Exception) -> list[Finding]:
    """The rig's AMI in ``region``: the parameter resolves, and the root volume the deploy will size for it.

    The stacks size the root volume from the AMI at deploy time (``Custom::RootVolume``, the rule of
    :meth:`rigs.catalog.model.Ec2Rig.root_volume_gib_for`), so a snapshot larger than the catalog's floor is no
    failure: only one no gp3 volume could hold is.
    """
    fix_param = (f"use another AMI: `-c ami.{rig.name}=ami-...` (or change ami_ssm_parameter in rigs/catalog.yaml)")
    if isinstance(resolved, Exception):
        code = aws.error_code(resolved)
        if code in ("ParameterNotFound", "InvalidAMIID.NotFound", "InvalidAMIID.Malformed", "AmiNotFound"):
            what = (f"{rig.ami_ssm_parameter} does not resolve here" if code == "ParameterNotFound"
                    else f"the AMI {rig.ami_ssm_parameter} names is not available here ({code})")
            return [Finding("AMI", rig.name, region, FAIL, what, fix_param, (rig.name,))]
        return [unknown("AMI", rig.name, region, resolved, "ssm/ec2")]
    ami, root_gib = resolved
    if root_gib is None:
        return [Finding("AMI", rig.name, region, WARN, f"{ami}: root snapshot size unknown",
                        "the deploy fails at once if the AMI has no EBS root volume")]
    volume = rig.root_volume_gib_for(root_gib)
    if volume > MAX_ROOT_VOLUME_GIB:
        return [Finding("AMI", rig.name, region, FAIL,
                        f"{ami}: root snapshot {root_gib} GiB + {rig.root_free_gib} GiB free needs a {volume} GiB "
                        f"root volume, more than a gp3 volume holds ({MAX_ROOT_VOLUME_GIB} GiB)", fix_param,
                        (rig.name,))]
    sized = (f"the floor; snapshot {root_gib} GiB" if volume == rig.root_volume_gib
             else f"snapshot {root_gib} + {rig.root_free_gib} GiB free")
    return [Finding("AMI", rig.name, region, OK, f"root volume {volume} GiB ({sized})")]


def resolve_ami(clients: aws.Clients, parameter: str, region: str) -> tuple[str, int | None] | Exception:
    """(AMI id, root snapshot GiB) for an SSM AMI parameter, or the exception that stopped it."""
    try:
        ami = aws.call(clients("ssm", region).get_parameter, Name=parameter, attempts=3)["Parameter"]["Value"]
        images = aws.call(clients("ec2", region).describe_images, ImageIds=[ami], attempts=3)["Images"]
    except Exception as exc:  # noqa: BLE001 - the caller turns it into a finding
        return exc
    if not images:
        return _client_error("AmiNotFound", f"{ami} not found")
    image = images[0]
    root = image.get("RootDeviceName")
    for mapping in image.get("BlockDeviceMappings", []):
        if mapping.get("DeviceName") == root and "Ebs" in mapping:
            size = mapping["Ebs"].get("VolumeSize")
            return ami, int(size) if size is not None else None
    return ami, None


def _client_error(code: str, message: str) -> Exception:
    import botocore.exceptions

    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message}}, "DescribeImages")


CHECK = Check("AMI", each_rig(on_instances), ami)
