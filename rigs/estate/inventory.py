"""Everything of ours that exists now: found by the ``ManagedBy=aws-inference`` tag, never by local state.

One :class:`Resource` per thing found, with what it costs per hour while it exists. The
``status`` command prints this; ``sweep`` deletes from it. A resource without our tag is
never listed (and so never touched). Where a service cannot be listed (no permission,
an API the endpoint does not implement) the inventory says so in ``problems`` instead of
pretending the region is clean.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from rigs import aws, utc

from rigs.estate import builds
from rigs.contract import (BASE_STACK_PREFIX, BOOTSTRAP_STACK, HF_TOKEN_SECRET, MANAGED_BY, REGIONS, TAG_MANAGED_BY,
                       TAG_RIG, OutputKey, base_stack_name)
from rigs.catalog.pricing import PriceBook, PriceError

GLOBAL = "global"
STACK_TAG = "aws:cloudformation:stack-name"
ENDPOINT_LOG_PREFIX = "/aws/sagemaker/Endpoints/"

# Kinds, in the order status lists them.
STACK = "stack"
INSTANCE = "instance"
VOLUME = "volume"
ASG = "auto-scaling-group"
LAUNCH_TEMPLATE = "launch-template"
ENDPOINT = "sagemaker-endpoint"
ENDPOINT_CONFIG = "sagemaker-endpoint-config"
MODEL = "sagemaker-model"
BUILD_PROJECT = "codebuild-project"
RUNNING_BUILD = "codebuild-build"
REPOSITORY = "ecr-repository"
SECURITY_GROUP = "security-group"
SUBNET = "subnet"
ROUTE_TABLE = "route-table"
INTERNET_GATEWAY = "internet-gateway"
VPC = "vpc"
ROLE = "iam-role"
INSTANCE_PROFILE = "instance-profile"

KINDS = (STACK, INSTANCE, VOLUME, ASG, LAUNCH_TEMPLATE, ENDPOINT, ENDPOINT_CONFIG, MODEL, BUILD_PROJECT,
         RUNNING_BUILD, REPOSITORY, SECURITY_GROUP, SUBNET, ROUTE_TABLE, INTERNET_GATEWAY, VPC, ROLE, INSTANCE_PROFILE)
KEPT_KINDS = frozenset({SECURITY_GROUP, SUBNET, ROUTE_TABLE, INTERNET_GATEWAY, VPC, ROLE, INSTANCE_PROFILE})
"""Long-lived and free: kept by ``sweep`` unless ``--all``."""

LIVE_INSTANCE_STATES = ["pending", "running", "shutting-down", "stopping", "stopped"]
OUR_BUILD_LOGS = f"/{MANAGED_BY}/"
"""Our image builds log under ``/aws-inference/image-build/…`` (``stacks/parts/images/build.py``): a build whose
project is gone is still known as ours by that."""


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    region: str
    id: str
    name: str = ""
    state: str = ""
    rig: str | None = None
    stack: str | None = None
    """The CloudFormation stack that manages it, if any."""
    hourly_usd: float = 0.0
    price_note: str = ""
    detail: str = ""
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def billing(self) -> bool:
        """It costs money while it exists (a running build does even when its price is not known)."""
        return self.hourly_usd > 0 or self.kind == RUNNING_BUILD

    @property
    def kept_by_default(self) -> bool:
        return self.kind in KEPT_KINDS or (self.kind == STACK and self.id.startswith(BASE_STACK_PREFIX))

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.extra).get(key, default)

    def label(self) -> str:
        return f"{self.kind} {self.name or self.id}" + (f" ({self.id})" if self.name and self.name != self.id else "")

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "region": self.region, "id": self.id, "name": self.name, "state": self.state,
                "rig": self.rig, "stack": self.stack, "hourly_usd": round(self.hourly_usd, 6),
                "price_note": self.price_note, "detail": self.detail, "kept_by_default": self.kept_by_default}


@dataclass(frozen=True, slots=True)
class Outlasting:
    """Something that outlives ``cdk destroy`` and the sweep: never deleted by this project, listed by
    ``status`` with what it costs and how to remove it by hand.

    The CDK bootstrap stack (shared by every CDK app of the account), the log group SageMaker creates
    for an endpoint (it carries no tag and stays after the endpoint is deleted) and the optional
    Hugging Face token secret the user creates.
    """

    kind: str
    region: str
    name: str
    monthly_usd: float | None
    cost: str
    remove: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "region": self.region, "name": self.name,
                "monthly_usd": None if self.monthly_usd is None else round(self.monthly_usd, 4),
                "cost": self.cost, "remove": self.remove}


@dataclass(frozen=True, slots=True)
class Inventory:
    resources: tuple[Resource, ...]
    problems: tuple[str, ...] = ()
    """What could not be checked: the inventory may be incomplete."""
    regions: tuple[str, ...] = REGIONS
    notes: tuple[str, ...] = ()
    """Things seen but not ours by tag (never touched), worth a line."""
    outlasting: tuple[Outlasting, ...] = ()
    """What outlives destroy and sweep (see :class:`Outlasting`)."""

    @property
    def hourly_usd(self) -> float:
        return sum(r.hourly_usd for r in self.resources)

    def of_kind(self, *kinds: str) -> list[Resource]:
        return [r for r in self.resources if r.kind in kinds]

    def in_region(self, region: str) -> "Inventory":
        return Inventory(tuple(r for r in self.resources if r.region == region), self.problems, (region,),
                         self.notes, tuple(o for o in self.outlasting if o.region == region))

    def swept(self, resource: Resource, everything: bool) -> bool:
        """Whether ``sweep`` deletes it: all with ``--all``; else all but what is kept between runs
        (network, security groups, IAM of the base stacks). A role of a rig stack goes with its stack."""
        if everything or not resource.kept_by_default:
            return True
        owner = self.stack_of(resource)
        return owner is not None and not owner.startswith(BASE_STACK_PREFIX)

    def stack_of(self, resource: Resource) -> str | None:
        """The stack of ours that manages ``resource`` (by CloudFormation's tag, else by name), if it exists."""
        names = {r.id for r in self.resources if r.kind == STACK and r.region in (resource.region, GLOBAL)} \
            if resource.region != GLOBAL else {r.id for r in self.resources if r.kind == STACK}
        if resource.stack in names:
            return resource.stack
        label = resource.name or resource.id
        owners = [name for name in names if label.startswith(f"{name}-")]
        if owners:
            return max(owners, key=len)
        if resource.rig:  # e.g. a launch template, tagged with its rig but not with its stack
            same_rig = [r.id for r in self.resources if r.kind == STACK and r.region == resource.region
                        and r.rig == resource.rig]
            if len(same_rig) == 1:
                return same_rig[0]
        return None


def ours(tags: Iterable[dict] | dict | None) -> bool:
    """True when the tag list (EC2/CFN ``[{Key, Value}]`` or a plain mapping) carries our ManagedBy tag."""
    return _tags(tags).get(TAG_MANAGED_BY) == MANAGED_BY


def _tags(tags: Iterable[dict] | dict | None) -> dict[str, str]:
    if not tags:
        return {}
    if isinstance(tags, dict):
        return {str(k): str(v) for k, v in tags.items()}
    return {t.get("Key", t.get("key", "")): t.get("Value", t.get("value", "")) for t in tags}


OUR_TAG_FILTER = [{"Name": f"tag:{TAG_MANAGED_BY}", "Values": [MANAGED_BY]}]


class _Finder:
    """Lists our resources in one region; each lister appends to ``found`` or notes a problem."""

    def __init__(self, clients: aws.Clients, region: str, prices: PriceBook) -> None:
        self.clients = clients
        self.region = region
        self.prices = prices
        self.found: list[Resource] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.outlasting: list[Outlasting] = []

    def guard(self, what: str, lister: Callable[[], None]) -> None:
        try:
            lister()
        except Exception as exc:  # noqa: BLE001 - reported, never hidden
            failure = aws.classify(exc)
            if failure.kind == aws.CREDENTIALS:
                raise aws.CredentialsError(failure.code) from None
            self.problems.append(f"{self.region}: could not list {what} ({failure.code})")

    def add(self, kind: str, id_: str, tags: Any = None, **fields: Any) -> None:
        tag_map = _tags(tags)
        fields.setdefault("rig", tag_map.get(TAG_RIG))
        fields.setdefault("stack", tag_map.get(STACK_TAG))
        extra = fields.pop("extra", {})
        self.found.append(Resource(kind=kind, region=self.region, id=id_, extra=tuple(sorted(extra.items())),
                                   **fields))

    def price_instance(self, instance_type: str) -> tuple[float, str]:
        try:
            price = self.prices.instance_hourly_price(instance_type, self.region)
        except PriceError as exc:
            return 0.0, f"price unknown: {exc}"
        return price.usd_per_hour, price.describe()

    def price_unit(self, item: str, quantity: float) -> tuple[float, str]:
        try:
            price = self.prices.unit_price(item, self.region)
        except PriceError as exc:
            return 0.0, f"price unknown: {exc}"
        return price.hourly(quantity), f"${price.usd:g}/{price.unit} ({price.source}, as of {price.as_of})"

    # listers

    def stacks(self) -> None:
        cfn = self.clients("cloudformation", self.region)
        for stack in aws.paginate(cfn, "describe_stacks", "Stacks"):
            if stack.get("StackStatus") == "DELETE_COMPLETE":
                continue
            if stack["StackName"] == BOOTSTRAP_STACK:
                self.outlasting.append(Outlasting(
                    "cdk-bootstrap", self.region, BOOTSTRAP_STACK, None,
                    "storage only: its S3 bucket and ECR repository hold the assets CDK apps uploaded (this "
                    "app's templates and the g5g build recipe: kilobytes)",
                    "shared by every CDK app of the account; delete only if none uses it: empty its bucket, then "
                    f"`aws cloudformation delete-stack --stack-name {BOOTSTRAP_STACK} --region {self.region}`"))
            if not ours(stack.get("Tags")):
                if stack["StackName"] == base_stack_name(self.region):
                    self.notes.append(f"{self.region}: stack {stack['StackName']} carries no {TAG_MANAGED_BY} tag, "
                                      "so it is not swept; `./scripts/cdk destroy --all` removes it")
                continue
            outputs = {o.get("OutputKey"): o.get("OutputValue") for o in stack.get("Outputs", []) or []}
            details = [stack.get("StackStatusReason", "") or ""]
            if outputs.get(OutputKey.EXPIRES_AT):
                details.append(f"lifetime ends {outputs[OutputKey.EXPIRES_AT]}")
            self.add(STACK, stack["StackName"], stack.get("Tags"), name=stack["StackName"],
                     state=stack.get("StackStatus", ""), stack=stack["StackName"],
                     detail="; ".join(d for d in details if d),
                     extra={"stack_id": stack.get("StackId", ""), "expires_at": outputs.get(OutputKey.EXPIRES_AT)})

    def endpoint_log_groups(self) -> None:
        """The log groups SageMaker made for endpoints: of ours (still there) or of endpoints that are gone."""
        sagemaker = self.clients("sagemaker", self.region)
        live = {e["EndpointName"]: e["EndpointArn"] for e in aws.paginate(sagemaker, "list_endpoints", "Endpoints")}
        logs = self.clients("logs", self.region)
        groups = aws.paginate(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=ENDPOINT_LOG_PREFIX)
        for group in groups:
            name = group["logGroupName"]
            endpoint = name[len(ENDPOINT_LOG_PREFIX):]
            if endpoint in live:
                if not ours(aws.paginate(sagemaker, "list_tags", "Tags", ResourceArn=live[endpoint])):
                    continue
                whose = f"endpoint {endpoint} of ours; stays after the endpoint is deleted"
            else:
                whose = "left by a deleted endpoint (SageMaker does not tag it: it may be another app's)"
            stored_gb = (group.get("storedBytes") or 0) / 1e9
            monthly, cost = None, "storage only"
            try:
                price = self.prices.unit_price("cloudwatch-logs-storage", self.region)
                monthly = price.monthly(stored_gb)
                cost = f"${monthly:.4f}/month: {stored_gb * 1000:.1f} MB at ${price.usd:g}/{price.unit}"
            except PriceError as exc:
                cost = f"storage only; price unknown: {exc}"
            self.outlasting.append(Outlasting(
                "log-group", self.region, name, monthly, f"{cost} ({whose})",
                f"`aws logs delete-log-group --log-group-name {name} --region {self.region}`"))

    def token_secret(self) -> None:
        """The optional Hugging Face token secret: created by the user, read by rigs at boot, never deleted here."""
        secrets = self.clients("secretsmanager", self.region)
        try:
            aws.call(secrets.describe_secret, SecretId=HF_TOKEN_SECRET)
        except Exception as exc:  # noqa: BLE001 - absent is the usual case
            if aws.classify(exc).kind == aws.NOT_FOUND:
                return
            raise
        monthly, cost = None, "per secret per month"
        try:
            price = self.prices.unit_price("secrets-manager-secret", self.region)
            monthly, cost = price.monthly(), f"${price.usd:g}/month (Secrets Manager, per secret)"
        except PriceError as exc:
            cost = f"price unknown: {exc}"
        self.outlasting.append(Outlasting(
            "secret", self.region, HF_TOKEN_SECRET, monthly, cost,
            f"`aws secretsmanager delete-secret --secret-id {HF_TOKEN_SECRET} --region {self.region}`"))

    def instances(self) -> None:
        ec2 = self.clients("ec2", self.region)
        reservations = aws.paginate(ec2, "describe_instances", "Reservations", Filters=[
            *OUR_TAG_FILTER, {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}])
        for reservation in reservations:
            for instance in reservation.get("Instances", []):
                state = instance.get("State", {}).get("Name", "")
                hourly, note = 0.0, "stopped: only its volumes bill"
                if state in ("pending", "running"):
                    hourly, note = self.price_instance(instance["InstanceType"])
                    if instance.get("PublicIpAddress"):
                        ip_hourly, _ = self.price_unit("public-ipv4", 1)
                        hourly += ip_hourly
                        note += f" + public IPv4 ${ip_hourly:g}/h"
                tags = instance.get("Tags")
                self.add(INSTANCE, instance["InstanceId"], tags, name=_tags(tags).get("Name", ""), state=state,
                         hourly_usd=hourly, price_note=note,
                         detail=f"{instance['InstanceType']} in {instance.get('Placement', {}).get('AvailabilityZone', '?')}",
                         extra={"instance_type": instance["InstanceType"],
                                "launch_time": str(instance.get("LaunchTime", ""))})

    def volumes(self) -> None:
        ec2 = self.clients("ec2", self.region)
        for volume in aws.paginate(ec2, "describe_volumes", "Volumes", Filters=OUR_TAG_FILTER):
            size = volume.get("Size", 0)
            volume_type = volume.get("VolumeType", "gp3")
            hourly, note = self.price_unit(f"ebs-{volume_type}", size)
            attached = [a.get("InstanceId") for a in volume.get("Attachments", []) if a.get("InstanceId")]
            self.add(VOLUME, volume["VolumeId"], volume.get("Tags"), state=volume.get("State", ""),
                     hourly_usd=hourly, price_note=note,
                     detail=f"{size} GiB {volume_type}" + (f", attached to {', '.join(attached)}" if attached else ""))

    def auto_scaling_groups(self) -> None:
        autoscaling = self.clients("autoscaling", self.region)
        for group in aws.paginate(autoscaling, "describe_auto_scaling_groups", "AutoScalingGroups"):
            if not ours(group.get("Tags")):
                continue
            self.add(ASG, group["AutoScalingGroupName"], group.get("Tags"), name=group["AutoScalingGroupName"],
                     state=group.get("Status", "") or "active",
                     detail=f"desired {group.get('DesiredCapacity', 0)}, {len(group.get('Instances', []))} instance(s); "
                            "its instances are priced on their own rows")

    def launch_templates(self) -> None:
        ec2 = self.clients("ec2", self.region)
        for template in aws.paginate(ec2, "describe_launch_templates", "LaunchTemplates", Filters=OUR_TAG_FILTER):
            self.add(LAUNCH_TEMPLATE, template["LaunchTemplateId"], template.get("Tags"),
                     name=template.get("LaunchTemplateName", ""), state="available")

    def sagemaker(self) -> None:
        sagemaker = self.clients("sagemaker", self.region)

        def tags_of(arn: str) -> list[dict]:
            return aws.paginate(sagemaker, "list_tags", "Tags", ResourceArn=arn)

        for endpoint in aws.paginate(sagemaker, "list_endpoints", "Endpoints"):
            tags = tags_of(endpoint["EndpointArn"])
            if not ours(tags):
                continue
            name = endpoint["EndpointName"]
            described = aws.call(sagemaker.describe_endpoint, EndpointName=name)
            status = described.get("EndpointStatus", "")
            hourly, notes, types = 0.0, [], []
            for variant in described.get("ProductionVariants", []) or []:
                count = variant.get("CurrentInstanceCount") or 0
                instance_type = variant.get("InstanceType") or (variant.get("CurrentServerlessConfig") and "serverless")
                if not instance_type:
                    try:
                        config = aws.call(sagemaker.describe_endpoint_config,
                                          EndpointConfigName=described["EndpointConfigName"])
                        instance_type = next((v.get("InstanceType") for v in config.get("ProductionVariants", [])
                                              if v.get("VariantName") == variant.get("VariantName")), None)
                    except Exception:  # noqa: BLE001 - price stays unknown
                        instance_type = None
                if instance_type and instance_type != "serverless":
                    types.append(f"{count}x {instance_type}")
                    if count:
                        price, note = self.price_instance(instance_type)
                        hourly += price * count
                        notes.append(note)
            if status in ("Creating", "Updating") and not hourly:
                notes.append("bills from the moment its instance is placed")
            self.add(ENDPOINT, name, tags, name=name, state=status, hourly_usd=hourly, price_note="; ".join(notes),
                     detail=", ".join(types) or "", extra={"config": described.get("EndpointConfigName", ""),
                                                           "created": str(described.get("CreationTime", "")),
                                                           "failure": described.get("FailureReason", "")})
        for config in aws.paginate(sagemaker, "list_endpoint_configs", "EndpointConfigs"):
            tags = tags_of(config["EndpointConfigArn"])
            if ours(tags):
                self.add(ENDPOINT_CONFIG, config["EndpointConfigName"], tags, name=config["EndpointConfigName"])
        for model in aws.paginate(sagemaker, "list_models", "Models"):
            tags = tags_of(model["ModelArn"])
            if ours(tags):
                self.add(MODEL, model["ModelName"], tags, name=model["ModelName"])

    def build_projects(self) -> None:
        codebuild = self.clients("codebuild", self.region)
        names = aws.paginate(codebuild, "list_projects", "projects")
        for start in range(0, len(names), 100):
            batch = aws.call(codebuild.batch_get_projects, names=names[start:start + 100])
            for project in batch.get("projects", []):
                tags = [{"Key": t.get("key"), "Value": t.get("value")} for t in project.get("tags", [])]
                if ours(tags):
                    self.add(BUILD_PROJECT, project["name"], tags, name=project["name"], state="idle",
                             detail="bills only while a build runs")

    def running_builds(self) -> None:
        """Builds of ours in progress: of a project of ours, or logging where ours log (a deleted project's)."""
        running = aws.call(builds.newest_running, self.clients("codebuild", self.region))
        projects = {r.id for r in self.found if r.kind == BUILD_PROJECT}
        for build in running:
            project = build.get("projectName", "?")
            logs = build.get("logs") or {}
            group = logs.get("groupName") or (logs.get("cloudWatchLogs") or {}).get("groupName") or ""
            if project not in projects and not group.startswith(OUR_BUILD_LOGS):
                continue
            started = build.get("startTime")
            minutes = (utc.now() - started).total_seconds() / 60 if started else 0.0
            per_minute, note = self.price_build(build.get("environment") or {})
            cost = (f"cost so far ${per_minute * minutes:.2f}" if per_minute else "cost so far unknown")
            self.add(RUNNING_BUILD, build["id"], name=build["id"], state=build.get("currentPhase", "IN_PROGRESS"),
                     hourly_usd=per_minute * 60, price_note=note,
                     detail=f"project {project}" + ("" if project in projects else " (deleted: it runs on)")
                            + f", running {minutes:.0f} min since {utc.iso_seconds(started) if started else '?'}; "
                            + cost, extra={"project": project, "minutes": round(minutes, 1)})

    def price_build(self, environment: dict[str, Any]) -> tuple[float, str]:
        """USD per minute of a build's compute (``codebuild-arm1.xlarge`` in the price file), and where from."""
        kind = {"ARM_CONTAINER": "arm1", "LINUX_CONTAINER": "general1"}.get(environment.get("type", ""), "?")
        item = f"codebuild-{kind}.{str(environment.get('computeType', '?')).rsplit('_', 1)[-1].lower()}"
        try:
            price = self.prices.unit_price(item, self.region)
        except PriceError as exc:
            return 0.0, f"price unknown: {exc}"
        per_minute = price.usd if price.unit == "minute" else price.usd / 60
        return per_minute, f"${price.usd:g}/{price.unit} ({price.source}, as of {price.as_of})"

    def repositories(self) -> None:
        ecr = self.clients("ecr", self.region)
        for repository in aws.paginate(ecr, "describe_repositories", "repositories"):
            tags = aws.call(ecr.list_tags_for_resource, resourceArn=repository["repositoryArn"]).get("tags", [])
            if not ours(tags):
                continue
            images = aws.paginate(ecr, "describe_images", "imageDetails", repositoryName=repository["repositoryName"])
            size_gb = sum(i.get("imageSizeInBytes", 0) for i in images) / 1e9
            hourly, note = self.price_unit("ecr-storage", size_gb)
            self.add(REPOSITORY, repository["repositoryName"], tags, name=repository["repositoryName"],
                     state="active", hourly_usd=hourly, price_note=note,
                     detail=f"{len(images)} image(s), {size_gb:.2f} GB")

    def network(self) -> None:
        ec2 = self.clients("ec2", self.region)
        for group in aws.paginate(ec2, "describe_security_groups", "SecurityGroups", Filters=OUR_TAG_FILTER):
            if group.get("GroupName") == "default":
                continue
            self.add(SECURITY_GROUP, group["GroupId"], group.get("Tags"), name=group.get("GroupName", ""),
                     detail=f"in {group.get('VpcId', '?')}", extra={"vpc": group.get("VpcId", "")})
        for subnet in aws.paginate(ec2, "describe_subnets", "Subnets", Filters=OUR_TAG_FILTER):
            self.add(SUBNET, subnet["SubnetId"], subnet.get("Tags"), detail=subnet.get("AvailabilityZone", ""),
                     extra={"vpc": subnet.get("VpcId", "")})
        for table in aws.paginate(ec2, "describe_route_tables", "RouteTables", Filters=OUR_TAG_FILTER):
            main = any(a.get("Main") for a in table.get("Associations", []))
            self.add(ROUTE_TABLE, table["RouteTableId"], table.get("Tags"), state="main" if main else "",
                     extra={"vpc": table.get("VpcId", ""),
                            "associations": tuple(a["RouteTableAssociationId"] for a in table.get("Associations", [])
                                                  if not a.get("Main") and a.get("RouteTableAssociationId"))})
        for gateway in aws.paginate(ec2, "describe_internet_gateways", "InternetGateways", Filters=OUR_TAG_FILTER):
            vpcs = tuple(a["VpcId"] for a in gateway.get("Attachments", []) if a.get("VpcId"))
            self.add(INTERNET_GATEWAY, gateway["InternetGatewayId"], gateway.get("Tags"),
                     detail=f"attached to {', '.join(vpcs)}" if vpcs else "detached", extra={"vpcs": vpcs})
        for vpc in aws.paginate(ec2, "describe_vpcs", "Vpcs", Filters=OUR_TAG_FILTER):
            self.add(VPC, vpc["VpcId"], vpc.get("Tags"), detail=vpc.get("CidrBlock", ""), state=vpc.get("State", ""))


REGIONAL_LISTERS = (
    ("CloudFormation stacks", "stacks"),
    ("EC2 instances", "instances"),
    ("EBS volumes", "volumes"),
    ("Auto Scaling groups", "auto_scaling_groups"),
    ("launch templates", "launch_templates"),
    ("SageMaker endpoints, configs and models", "sagemaker"),
    ("CodeBuild projects", "build_projects"),
    ("CodeBuild builds in progress", "running_builds"),
    ("ECR repositories", "repositories"),
    ("network (security groups, subnets, route tables, gateways, VPCs)", "network"),
)

OUTLASTING_LISTERS = (
    ("SageMaker endpoint log groups", "endpoint_log_groups"),
    ("the Hugging Face token secret", "token_secret"),
)
"""What outlives ``cdk destroy`` and is never swept: listed for ``status`` only, so a sweep neither
pays for these calls nor counts a permission it lacks for them as a region it could not check."""

IAM_NAME_PREFIX = "Inference"
"""CloudFormation names our roles and instance profiles after their stack (``InferenceBase-…``)."""


def _iam(clients: aws.Clients) -> tuple[list[Resource], list[str]]:
    """Our IAM roles and instance profiles (global). Names narrow the search; tags decide."""
    iam = clients("iam", None)
    found: list[Resource] = []
    problems: list[str] = []
    try:
        our_roles: set[str] = set()
        for role in aws.paginate(iam, "list_roles", "Roles"):
            if not role["RoleName"].startswith(IAM_NAME_PREFIX):
                continue
            tags = aws.paginate(iam, "list_role_tags", "Tags", RoleName=role["RoleName"])
            if ours(tags):
                our_roles.add(role["RoleName"])
                found.append(Resource(ROLE, GLOBAL, role["RoleName"], name=role["RoleName"],
                                      stack=_tags(tags).get(STACK_TAG)))
        for profile in aws.paginate(iam, "list_instance_profiles", "InstanceProfiles"):
            if not profile["InstanceProfileName"].startswith(IAM_NAME_PREFIX):
                continue
            roles = tuple(r["RoleName"] for r in profile.get("Roles", []))
            tags = profile.get("Tags") or []
            # CloudFormation cannot tag instance profiles: one that holds only our roles is ours.
            if ours(tags) or (roles and all(r in our_roles for r in roles)):
                found.append(Resource(INSTANCE_PROFILE, GLOBAL, profile["InstanceProfileName"],
                                      name=profile["InstanceProfileName"],
                                      detail=f"roles: {', '.join(roles) or 'none'}", extra={"roles": roles}))
    except Exception as exc:  # noqa: BLE001
        failure = aws.classify(exc)
        if failure.kind == aws.CREDENTIALS:
            raise aws.CredentialsError(failure.code) from None
        problems.append(f"global: could not list IAM roles and instance profiles ({failure.code})")
    return found, problems


def discover(session: Any, regions: Sequence[str] = REGIONS, prices: PriceBook | None = None,
             include_iam: bool = True, clients: aws.Clients | None = None, outlasting: bool = False) -> Inventory:
    """Everything tagged ours in ``regions`` (in parallel), plus our IAM roles and profiles; with
    ``outlasting``, also what outlives ``cdk destroy`` (:data:`OUTLASTING_LISTERS`)."""
    clients = clients or aws.Clients(session)
    prices = prices or PriceBook(session)
    listers = REGIONAL_LISTERS + (OUTLASTING_LISTERS if outlasting else ())

    def one_region(region: str) -> _Finder:
        finder = _Finder(clients, region, prices)
        for what, method in listers:
            finder.guard(what, getattr(finder, method))
        return finder

    resources: list[Resource] = []
    problems: list[str] = []
    notes: list[str] = []
    lasting: list[Outlasting] = []
    with ThreadPoolExecutor(max_workers=max(1, len(regions)) + 1) as pool:
        iam_future = pool.submit(_iam, clients) if include_iam else None
        for finder in pool.map(one_region, regions):
            resources.extend(finder.found)
            problems.extend(finder.problems)
            notes.extend(finder.notes)
            lasting.extend(finder.outlasting)
        if iam_future is not None:
            found, trouble = iam_future.result()
            resources.extend(found)
            problems.extend(trouble)
    order = {kind: index for index, kind in enumerate(KINDS)}
    region_order = {region: index for index, region in enumerate((*REGIONS, GLOBAL))}
    resources.sort(key=lambda r: (region_order.get(r.region, 99), order.get(r.kind, 99), r.name or r.id))
    return Inventory(tuple(resources), tuple(problems), tuple(regions), tuple(notes), tuple(lasting))


# --- rendering ------------------------------------------------------------------------


def render(inventory: Inventory, title: str, everything: bool = False) -> Any:
    """A rich Table. By default: stacks, whatever bills, and resources no stack of ours manages;
    the rest is counted on its stack's row. ``everything`` lists every resource."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, header_style="bold")
    for column in ("Region", "Kind", "Name / id", "State", "Rig", "$/h", "Detail"):
        table.add_column(column, overflow="fold")
    managed: dict[tuple[str, str], list[Resource]] = {}
    shown: list[Resource] = []
    kept = 0
    for resource in inventory.resources:
        owner = inventory.stack_of(resource) if resource.kind != STACK else None
        if everything or resource.kind == STACK or resource.billing or (owner is None
                                                                        and not resource.kept_by_default):
            shown.append(resource)
        elif owner is None:
            kept += 1
        else:
            region = resource.region if resource.region != GLOBAL else next(
                (r.region for r in inventory.resources if r.kind == STACK and r.id == owner), GLOBAL)
            managed.setdefault((region, owner), []).append(resource)
    for resource in shown:
        price = f"{resource.hourly_usd:.4f}" if resource.hourly_usd else "?" if resource.billing else "-"
        name = resource.name or resource.id
        if resource.name and resource.name != resource.id and resource.kind not in (STACK, ENDPOINT, MODEL,
                                                                                    ENDPOINT_CONFIG):
            name = f"{resource.name} ({resource.id})"
        detail = resource.detail
        if resource.price_note and resource.billing:
            detail = f"{detail}; {resource.price_note}" if detail else resource.price_note
        if resource.kind == STACK and (resource.region, resource.id) in managed:
            counts: dict[str, int] = {}
            for member in managed[(resource.region, resource.id)]:
                counts[member.kind] = counts.get(member.kind, 0) + 1
            summary = "also manages " + ", ".join(f"{n} {kind}" for kind, n in counts.items())
            detail = f"{detail}; {summary}" if detail else summary
        table.add_row(*(escape(cell) for cell in (resource.region, resource.kind, name, resource.state,
                                                   resource.rig or "", price, detail)))
    if kept:
        table.caption = (f"plus {kept} network and IAM resource(s) kept between runs (security groups, subnets, "
                         "VPCs, roles, instance profiles); --all-resources lists them")
    return table


def render_outlasting(inventory: Inventory) -> Any:
    """A rich Table of what outlives ``cdk destroy`` and the sweep, with its cost and how to remove it."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Outlives cdk destroy and the sweep (never deleted by this project)", header_style="bold")
    for column in ("Region", "Kind", "Name", "Cost", "To remove"):
        table.add_column(column, overflow="fold")
    for item in inventory.outlasting:
        table.add_row(*(escape(cell) for cell in (item.region, item.kind, item.name, item.cost, item.remove)))
    return table
