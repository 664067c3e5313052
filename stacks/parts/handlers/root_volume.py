"""Custom resource: a rig's root volume, sized from its AMI at deploy time.

A root volume smaller than the AMI's root snapshot fails every launch with
InvalidBlockDeviceMapping, and the AMI behind an SSM parameter changes over time. This
reads the AMI (DescribeImages) and returns VolumeSize = max(MinimumGiB, snapshot +
FreeGiB) (the rule of rigs.catalog.model.Ec2Rig.root_volume_gib_for), its root DeviceName and
SnapshotGiB. It fails at once, with the reason, when the AMI is not here, is built for
another architecture, has no EBS root, or would need more than a gp3 volume holds.
Properties: ImageId, Architecture, MinimumGiB, FreeGiB.
"""
import boto3
from botocore.exceptions import ClientError

GP3_MAX_GIB = 16384


def compute(properties, ec2=None):
    ec2 = ec2 or boto3.client("ec2")
    image_id = properties["ImageId"]
    where = f"AMI {image_id} in {ec2.meta.region_name}"
    try:
        images = ec2.describe_images(ImageIds=[image_id])["Images"]
    except ClientError as exc:
        if not exc.response["Error"]["Code"].startswith("InvalidAMIID"):
            raise
        images = []
    if not images:
        raise RuntimeError(f"InvalidAMIID.NotFound: {where} does not exist or is not shared with this "
                           "account; check the AMI parameter or -c ami.<rig>")
    image = images[0]
    if image.get("Architecture") != properties["Architecture"]:
        raise RuntimeError(f"{where} is {image.get('Architecture')}, the rig's instance type is "
                           f"{properties['Architecture']}")
    root = image.get("RootDeviceName")
    mapping = next((m for m in image.get("BlockDeviceMappings", []) if m.get("DeviceName") == root), {})
    if image.get("RootDeviceType") != "ebs" or "Ebs" not in mapping:
        raise RuntimeError(f"{where} has no EBS root volume ({image.get('RootDeviceType')}); rigs need one")
    snapshot = int(mapping["Ebs"].get("VolumeSize") or 0)
    size = max(int(properties["MinimumGiB"]), snapshot + int(properties["FreeGiB"]))
    if size > GP3_MAX_GIB:
        raise RuntimeError(f"{where}: its {snapshot} GiB snapshot plus {properties['FreeGiB']} GiB is over "
                           f"gp3's {GP3_MAX_GIB} GiB")
    return {"VolumeSize": str(size), "DeviceName": root, "SnapshotGiB": str(snapshot)}
