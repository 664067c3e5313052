"""What builds and holds our images: CodeBuild projects, builds of ours still running (billed even when
their project is gone) and ECR repositories."""

from __future__ import annotations

from typing import Any

from kit import utc
from rigs import aws
from rigs.contract import MANAGED_BY
from rigs.estate import builds, resources
from rigs.estate.kinds.base import Deletion, Finder, Kind, Listing, Price
from rigs.estate.resources import Resource, ours

OUR_BUILD_LOGS = f"/{MANAGED_BY}/"
"""Our image builds log under ``/aws-inference/image-build/…`` (``stacks/parts/images/build.py``): a build whose
project is gone is still known as ours by that."""


def _list_projects(finder: Finder) -> None:
    codebuild = finder.clients("codebuild", finder.region)
    names = aws.paginate(codebuild, "list_projects", "projects")
    for start in range(0, len(names), 100):
        batch = aws.call(codebuild.batch_get_projects, names=names[start:start + 100])
        for project in batch.get("projects", []):
            tags = [{"Key": t.get("key"), "Value": t.get("value")} for t in project.get("tags", [])]
            if ours(tags):
                finder.add(BUILD_PROJECT, project["name"], tags, name=project["name"], state="idle",
                           detail="bills only while a build runs")


def _delete_project(deletion: Deletion, project: Resource) -> None:
    deletion.client("codebuild", project).delete_project(name=project.name)


BUILD_PROJECT = Kind(resources.BUILD_PROJECT, Listing("CodeBuild projects", _list_projects), delete=_delete_project)


def _price_build(finder: Finder, environment: dict[str, Any]) -> Price:
    """A build's compute (``codebuild-arm1.xlarge`` in the price file, a rate per minute), and where from."""
    kind = {"ARM_CONTAINER": "arm1", "LINUX_CONTAINER": "general1"}.get(environment.get("type", ""), "?")
    item = f"codebuild-{kind}.{str(environment.get('computeType', '?')).rsplit('_', 1)[-1].lower()}"
    return finder.price_unit(item, per_minute=True)


def _list_builds(finder: Finder) -> None:
    """Builds of ours in progress: of a project of ours, or logging where ours log (a deleted project's)."""
    running = aws.call(builds.newest_running, finder.clients("codebuild", finder.region))
    projects = {r.id for r in finder.found if r.kind == BUILD_PROJECT.name}
    for build in running:
        project = build.get("projectName", "?")
        logs = build.get("logs") or {}
        group = logs.get("groupName") or (logs.get("cloudWatchLogs") or {}).get("groupName") or ""
        if project not in projects and not group.startswith(OUR_BUILD_LOGS):
            continue
        started = build.get("startTime")
        minutes = (utc.now() - started).total_seconds() / 60 if started else 0.0
        hourly, note = RUNNING_BUILD.price(finder, build.get("environment") or {})
        cost = f"cost so far ${hourly / 60 * minutes:.2f}" if hourly else "cost so far unknown"
        finder.add(RUNNING_BUILD, build["id"], name=build["id"], state=build.get("currentPhase", "IN_PROGRESS"),
                   hourly_usd=hourly, price_note=note,
                   detail=f"project {project}" + ("" if project in projects else " (deleted: it runs on)")
                          + f", running {minutes:.0f} min since {utc.iso_seconds(started) if started else '?'}; "
                          + cost, extra={"project": project, "minutes": round(minutes, 1)})


def _stop_build(deletion: Deletion, build: Resource) -> None:
    deletion.client("codebuild", build).stop_build(id=build.id)


def _wait_build(deletion: Deletion, build: Resource) -> None:
    codebuild = deletion.client("codebuild", build)
    deletion.gone(lambda: builds.in_progress(codebuild, [build.id]))


RUNNING_BUILD = Kind(resources.RUNNING_BUILD, Listing("CodeBuild builds in progress", _list_builds),
                     price=_price_build, delete=_stop_build, wait=_wait_build, verbs=("stopping", "stopped"),
                     with_its_stack=False, bills_unpriced=True)
"""A deleted project's build runs on, billed, up to 8 hours: stopped whatever waits."""


def _list_repositories(finder: Finder) -> None:
    ecr = finder.clients("ecr", finder.region)
    for repository in aws.paginate(ecr, "describe_repositories", "repositories"):
        tags = aws.call(ecr.list_tags_for_resource, resourceArn=repository["repositoryArn"]).get("tags", [])
        if not ours(tags):
            continue
        images = aws.paginate(ecr, "describe_images", "imageDetails", repositoryName=repository["repositoryName"])
        size_gb = sum(i.get("imageSizeInBytes", 0) for i in images) / 1e9
        hourly, note = REPOSITORY.price(finder, size_gb)
        finder.add(REPOSITORY, repository["repositoryName"], tags, name=repository["repositoryName"],
                   state="active", hourly_usd=hourly, price_note=note,
                   detail=f"{len(images)} image(s), {size_gb:.2f} GB")


def _price_repository(finder: Finder, size_gb: float) -> Price:
    return finder.price_unit("ecr-storage", size_gb)


def _delete_repository(deletion: Deletion, repository: Resource) -> None:
    deletion.client("ecr", repository).delete_repository(repositoryName=repository.name, force=True)


REPOSITORY = Kind(resources.REPOSITORY, Listing("ECR repositories", _list_repositories), price=_price_repository,
                  delete=_delete_repository)
