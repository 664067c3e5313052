"""CodeBuild builds still in progress: a deleted project's builds run on, billed, up to their timeout.

The g5g image stack's deletion stops its project's builds (``stacks/parts/handlers/build_stop.py``
inlines this module at synth: standard library only, boto3 clients passed in); ``python -m rigs
status`` lists the builds of ours still running and ``sweep`` stops them (:mod:`rigs.estate.inventory`
decides which are ours). BatchGetBuilds reads at most 100 builds a call, so the newest 100 are
looked at: a build runs 8 hours at most, and no project of ours starts 100 in that time.
"""

NEWEST = 100
IN_PROGRESS = "IN_PROGRESS"


def in_progress(codebuild, ids):
    """The builds (BatchGetBuilds' records) among the first 100 of ``ids`` that are still in progress."""
    ids = list(ids)[:NEWEST]
    builds = codebuild.batch_get_builds(ids=ids)["builds"] if ids else []
    return [build for build in builds if build.get("buildStatus") == IN_PROGRESS]


def running_builds(codebuild, project):
    """The ids of the project's builds in progress, among its newest 100 (none if it is gone)."""
    try:
        ids = codebuild.list_builds_for_project(projectName=project, sortOrder="DESCENDING").get("ids", [])
    except Exception as exc:  # noqa: BLE001 - botocore's ClientError, which this module cannot import
        if getattr(exc, "response", {}).get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    return [build["id"] for build in in_progress(codebuild, ids)]


def newest_running(codebuild):
    """Every build in progress among the region's newest 100, whatever its project (deleted ones included)."""
    return in_progress(codebuild, codebuild.list_builds(sortOrder="DESCENDING").get("ids", []))
