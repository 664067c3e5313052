"""Custom resource: a rig group's first launch, or its launch error within minutes.

Finds the group by tag and launch template version and polls it every 15 s; the rules are
in stacks/parts/custom_resources.py (LaunchWatch).
"""
import json
import re
import time

import boto3

PER_ZONE = {"InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
            "InsufficientCapacityOnHost", "Unsupported"}
UNCODED = "LaunchFailed"  # a message without a code: it may be one zone's shortage, so judged per zone too
CODED = re.compile(r"(?:^|\. )([A-Z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)*) - (.+?)(?: Launching EC2 instance failed\.?)?$")
FREE_PLAN = "not eligible for Free Tier"  # EC2's InvalidParameterCombination on a Free-plan account: no zone fixes it


def failure_of(activity):
    text = (activity.get("StatusMessage") or activity.get("Description") or "").strip()
    found = CODED.search(text)
    zone = json.loads(activity.get("Details") or "{}").get("Availability Zone", "?")
    code, message = found.groups() if found else (UNCODED, text)
    if FREE_PLAN in text:
        code = "InvalidParameterCombination" if code == UNCODED else code
        message += " (a Free-plan account: upgrade the account to the Paid plan)"
    return zone, code, message


def find_group(autoscaling, properties):
    tag = {"Name": f"tag:{properties['TagKey']}", "Values": [properties["TagValue"]]}
    groups = [g for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate(Filters=[tag])
              for g in page["AutoScalingGroups"]
              if (g.get("LaunchTemplate") or {}).get("LaunchTemplateId") == properties["LaunchTemplateId"]
              and str(g["LaunchTemplate"].get("Version")) == str(properties["LaunchTemplateVersion"])]
    return max(groups, key=lambda g: g.get("CreatedTime") or 0, default=None)


def compute(properties, autoscaling=None, sleep=time.sleep, clock=time.monotonic):
    autoscaling = autoscaling or boto3.client("autoscaling")
    zones = {z for z in properties["Zones"].split(",") if z}
    budget = int(properties["BudgetSeconds"])
    deadline = clock() + budget
    last = "the group has no launch activity"
    while True:
        group = find_group(autoscaling, properties)
        states = {i["LifecycleState"]: i for i in (group or {}).get("Instances", [])}
        if "InService" in states:
            return {"InstanceId": states["InService"]["InstanceId"], "Zone": states["InService"]["AvailabilityZone"]}
        if group and not any(state.startswith("Pending") for state in states):  # a launch under way: wait
            failures = [failure_of(a) for a in autoscaling.describe_scaling_activities(
                AutoScalingGroupName=group["AutoScalingGroupName"])["Activities"] if a.get("StatusCode") == "Failed"]
            final = [f for f in failures if f[1] not in PER_ZONE | {UNCODED}]
            if final or (failures and zones <= {f[0] for f in failures}):  # every zone failed: a coded one first
                raise RuntimeError("launch failed in %s: %s: %s"
                                   % (final or sorted(failures, key=lambda f: f[1] == UNCODED))[0])
            if failures:
                last = "launch failed in %s: %s: %s" % failures[0]
        if clock() >= deadline:
            raise RuntimeError(f"no instance in service after {budget // 60} minutes; last: {last}")
        sleep(15)
