"""Custom resource: when its stack is deleted, stop the builds of a CodeBuild project still running.

Deleting a CodeBuild project does not stop its builds: one goes on (and bills) up to its
timeout, 8 hours for the g5g image. This resource references the project, so
CloudFormation deletes it first; on Delete it stops every build of the project in
progress among the newest 100 (ListBuildsForProject, BatchGetBuilds, StopBuild; the
listing is rigs/estate/builds.py, inlined here at synth, which rigs status and sweep use too). It fails
the delete, naming the builds, when it cannot stop them: a rerun of the delete tries again.
Create and Update do nothing. Properties: ProjectName.
"""
import boto3
from botocore.exceptions import ClientError
from rigs.estate.builds import running_builds


def compute(properties):
    return {}


def on_delete(properties, codebuild=None):
    codebuild = codebuild or boto3.client("codebuild")
    running = running_builds(codebuild, properties["ProjectName"])
    failed = []
    for build in running:
        try:
            codebuild.stop_build(id=build)
        except ClientError as exc:
            failed.append(f"{build} ({exc.response['Error']['Code']})")
    if failed:
        raise RuntimeError(f"could not stop {', '.join(failed)}: stop it with `aws codebuild stop-build --id "
                           "<id>` and delete the stack again")
    return running
