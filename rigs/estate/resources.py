"""What the estate is made of: a :class:`Resource` of ours, what outlives it (:class:`Outlasting`), the
:class:`Inventory` of both, and how a resource is known as ours (the ``ManagedBy=aws-inference`` tag).

The kinds of resource, what lists each, prices, keeps, deletes and waits for it, are the table of
:mod:`rigs.estate.kinds`; this module only names them, so that every other module can.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from rigs.contract import BASE_STACK_PREFIX, MANAGED_BY, REGIONS, TAG_MANAGED_BY

GLOBAL = "global"
STACK_TAG = "aws:cloudformation:stack-name"

# The kinds' names, in the order status lists them (rigs.estate.kinds.TABLE keeps that order).
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
    kept_by_default: bool = False
    """Long-lived and free, kept by ``sweep`` unless ``--all`` (its kind's, or a base stack)."""
    bills_unpriced: bool = False
    """It bills while it exists even when its price is not known (its kind's: a running build)."""

    @property
    def billing(self) -> bool:
        """It costs money while it exists (a running build does even when its price is not known)."""
        return self.hourly_usd > 0 or self.bills_unpriced

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
    return tag_map(tags).get(TAG_MANAGED_BY) == MANAGED_BY


def tag_map(tags: Iterable[dict] | dict | None) -> dict[str, str]:
    """A tag list (``[{Key, Value}]``, ``[{key, value}]``) or mapping as a plain ``{key: value}``."""
    if not tags:
        return {}
    if isinstance(tags, dict):
        return {str(k): str(v) for k, v in tags.items()}
    return {t.get("Key", t.get("key", "")): t.get("Value", t.get("value", "")) for t in tags}


OUR_TAG_FILTER = [{"Name": f"tag:{TAG_MANAGED_BY}", "Values": [MANAGED_BY]}]
