"""Our IAM roles and instance profiles (global): names narrow the search, tags decide; kept between runs."""

from __future__ import annotations

from rigs import aws
from rigs.estate import resources
from rigs.estate.kinds.base import Deletion, Finder, Kind, Listing, unless_gone
from rigs.estate.resources import GLOBAL, STACK_TAG, Resource, ours, tag_map

NAME_PREFIX = "Inference"
"""CloudFormation names our roles and instance profiles after their stack (``InferenceBase-…``)."""


def _list(finder: Finder) -> None:
    iam = finder.clients("iam", None)
    our_roles: set[str] = set()
    for role in aws.paginate(iam, "list_roles", "Roles"):
        if not role["RoleName"].startswith(NAME_PREFIX):
            continue
        tags = aws.paginate(iam, "list_role_tags", "Tags", RoleName=role["RoleName"])
        if ours(tags):
            our_roles.add(role["RoleName"])
            finder.add(ROLE, role["RoleName"], name=role["RoleName"], stack=tag_map(tags).get(STACK_TAG))
    for profile in aws.paginate(iam, "list_instance_profiles", "InstanceProfiles"):
        if not profile["InstanceProfileName"].startswith(NAME_PREFIX):
            continue
        roles = tuple(r["RoleName"] for r in profile.get("Roles", []))
        # CloudFormation cannot tag instance profiles: one that holds only our roles is ours.
        if ours(profile.get("Tags") or []) or (roles and all(r in our_roles for r in roles)):
            finder.add(INSTANCE_PROFILE, profile["InstanceProfileName"], name=profile["InstanceProfileName"],
                       detail=f"roles: {', '.join(roles) or 'none'}", extra={"roles": roles})


LISTING = Listing("IAM roles and instance profiles", _list, scope=GLOBAL)


def _delete_profile(deletion: Deletion, profile: Resource) -> None:
    iam = deletion.client("iam", profile)
    for role in profile.get("roles", ()):
        unless_gone(lambda: iam.remove_role_from_instance_profile(InstanceProfileName=profile.id, RoleName=role))
    aws.call(iam.delete_instance_profile, InstanceProfileName=profile.id)


def _delete_role(deletion: Deletion, role: Resource) -> None:
    iam = deletion.client("iam", role)
    for profile in aws.paginate(iam, "list_instance_profiles_for_role", "InstanceProfiles", RoleName=role.id):
        aws.call(iam.remove_role_from_instance_profile, InstanceProfileName=profile["InstanceProfileName"],
                 RoleName=role.id)
    for policy in aws.paginate(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=role.id):
        aws.call(iam.detach_role_policy, RoleName=role.id, PolicyArn=policy["PolicyArn"])
    for name in aws.paginate(iam, "list_role_policies", "PolicyNames", RoleName=role.id):
        aws.call(iam.delete_role_policy, RoleName=role.id, PolicyName=name)
    aws.call(iam.delete_role, RoleName=role.id)


ROLE = Kind(resources.ROLE, LISTING, kept=True, delete=_delete_role)
INSTANCE_PROFILE = Kind(resources.INSTANCE_PROFILE, LISTING, kept=True, delete=_delete_profile)
