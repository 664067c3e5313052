"""End to end: moto's server, the real CDK CLI, then preflight, up (with a failover), status, sweep, destroy.

One run, in order:

1. start ``rigs/offline/moto_server.py`` (patched moto; g6.xlarge has no capacity in us-east-2; the
   deploy-time handlers run in process: zones, offered subnets, root volume, launch watch);
2. put resources that are not ours in three regions (they must survive everything below);
3. ``cdk bootstrap``; ``python -m rigs preflight`` records the placement;
4. ``python -m rigs up g6``: in us-east-2 the stack's launch watch fails the deploy for capacity
   (the code in the stack events), the attempt is cleaned up and g6 comes up in us-east-1,
   which the placement records; there the server checks the rig's boot scripts, uploaded by the CLI, against
   the sha256 its user data carries;
5. ``cdk deploy --all --method=direct``: the other base and rig stacks of the app; g6 is
   synthesized in us-east-1 from the recorded placement (no changes); SageMaker in us-west-2,
   where the catalog pins no digest: its stack reads the tag's digest from the registry there;
6. ``python -m rigs status`` and ``rigs sweep`` (lists only);
7. from a second clone with no ``.rigs`` state: ``cdk destroy --all --force``; the app asks
   CloudFormation where the stacks are, finds g6 in us-east-1 and removes it there (the base
   stacks' networks with them, the launcher's patch 10); the wrapper then checks that no stack of
   the app is left;
8. back in the first clone (whose placement file is now stale): ``rigs up g6`` again, then
   ``rigs sweep --yes`` removes it and clears its record; ``cdk destroy --all``;
9. nothing of ours is left in the four regions, and everything that is not ours is untouched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from tests.conftest import PROJECT_DIR

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ACCOUNT = "123456789012"
REGIONS = ("us-east-1", "us-east-2", "us-west-1", "us-west-2")
RIG_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
PYTHON = sys.executable
CDK = str(PROJECT_DIR / "scripts" / "cdk")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("w") as handle:
        server = subprocess.Popen(
            [PYTHON, "-m", "rigs.offline.moto_server", "--port", str(port),
             "--inject-capacity", "g6.xlarge@us-east-2", "--stop-on-stdin-eof"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=handle, text=True, cwd=PROJECT_DIR)
    line = server.stdout.readline()  # the launcher prints "ready <port>" once it answers
    assert line.startswith("ready"), f"moto server did not start: {line!r}; see {log}"
    yield f"http://localhost:{port}", log
    server.kill()  # nothing in it outlives the test; its clean exit with moto's state takes seconds
    server.wait()
    server.stdin.close()


@pytest.fixture(scope="module")
def env(moto, tmp_path_factory):
    endpoint, _ = moto
    state = tmp_path_factory.mktemp("state")
    values = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
              "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing", "AWS_REGION": "us-east-1",
              "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "RIGS_STATE_DIR": str(state),
              "COLUMNS": "200", "CI": "true"}
    values.pop("AWS_PROFILE", None)
    return values


def run(args: list[str], env: dict, timeout: int = 300, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    print(f"$ {' '.join(args)}  -> {done.returncode} in {time.monotonic() - started:.1f}s\n"
          f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def second_clone(path: Path) -> Path:
    """The project as another checkout sees it: the same files, no .rigs state, no cdk.out."""
    shutil.copytree(PROJECT_DIR, path, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".venv-*", "node_modules", ".rigs", "cdk.out", ".cdk-home", "results", "__pycache__"))
    for shared in (".venv", "node_modules"):
        (path / shared).symlink_to((PROJECT_DIR / shared).resolve())
    return path


def rigs(*args: str, env: dict) -> subprocess.CompletedProcess:
    return run([PYTHON, "-m", "rigs", *args], env)


def client(service: str, region: str, endpoint: str):
    return boto3.client(service, region_name=region, endpoint_url=endpoint, aws_access_key_id="testing",
                        aws_secret_access_key="testing", aws_session_token="testing")


def make_foreign(endpoint: str) -> dict:
    """Resources without our tag (one with another ManagedBy value): the sweep must leave them alone."""
    ec2 = client("ec2", "us-east-2", endpoint)
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g6.xlarge",
                                 TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                     {"Key": "ManagedBy", "Value": "someone-else"}]}])["Instances"][0]["InstanceId"]
    volume = ec2.create_volume(AvailabilityZone="us-east-2a", Size=10)["VolumeId"]
    sagemaker = client("sagemaker", "us-east-1", endpoint)
    sagemaker.create_model(ModelName="their-model", ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
                           PrimaryContainer={"Image": "img"})
    sagemaker.create_endpoint_config(EndpointConfigName="their-config", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "their-model", "InstanceType": "ml.m5.large",
        "InitialInstanceCount": 1}])
    sagemaker.create_endpoint(EndpointName="their-endpoint", EndpointConfigName="their-config")
    client("ecr", "us-west-2", endpoint).create_repository(repositoryName="their-repo")
    return {"instance": instance, "volume": volume}


def assert_foreign_untouched(endpoint: str, foreign: dict) -> None:
    ec2 = client("ec2", "us-east-2", endpoint)
    state = ec2.describe_instances(InstanceIds=[foreign["instance"]])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] == "running"
    assert ec2.describe_volumes(VolumeIds=[foreign["volume"]])["Volumes"]
    assert client("sagemaker", "us-east-1", endpoint).describe_endpoint(
        EndpointName="their-endpoint")["EndpointStatus"] == "InService"
    assert client("ecr", "us-west-2", endpoint).describe_repositories(repositoryNames=["their-repo"])


def our_stacks(endpoint: str) -> dict[str, list[str]]:
    out = {}
    for region in REGIONS:
        stacks = client("cloudformation", region, endpoint).describe_stacks()["Stacks"]
        names = [s["StackName"] for s in stacks if s["StackName"].startswith("Inference")
                 and s["StackStatus"] != "DELETE_COMPLETE"]
        if names:
            out[region] = sorted(names)
    return out


def test_everything_against_moto_with_the_real_cdk_cli(moto, env, tmp_path):
    endpoint, server_log = moto
    cdk_out = tmp_path / "cdk.out"
    foreign = make_foreign(endpoint)

    # 3. bootstrap and preflight
    # Each command of the CLI gets its own --output: the CLI refuses to synthesize into a folder another
    # test's CLI is synthesizing into (the project's cdk.out).
    bootstrap = run([CDK, "bootstrap", *(f"aws://{ACCOUNT}/{r}" for r in RIG_REGIONS), "--output",
                     str(tmp_path / "bootstrap.out")], env)
    assert bootstrap.returncode == 0, bootstrap.stderr[-2000:]
    # The CLI's AWS SDK announces, on Node before 22, that its releases after January 2027 need Node 22;
    # ./scripts/cdk (scripts/env.sh) turns that notice off, the CLI run directly shows it.
    assert "NodeVersionSupportWarning" not in bootstrap.stderr
    if int(subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"], capture_output=True,
                          text=True).stdout) < 22:
        # the app as the first bootstrap synthesized it (--app a cloud assembly): the CLI does not synthesize again
        direct = run([str(PROJECT_DIR / "node_modules" / ".bin" / "cdk"), "bootstrap", f"aws://{ACCOUNT}/us-east-2",
                      "--app", str(tmp_path / "bootstrap.out"), "--output", str(tmp_path / "direct.out")],
                     {k: v for k, v in env.items() if k != "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"})
        assert direct.returncode == 0 and "NodeVersionSupportWarning" in direct.stderr
    preflight = rigs("preflight", env=env)
    assert preflight.returncode == 0
    assert "us-west-1 offers no g6.xlarge in any zone" in preflight.stdout
    assert "g6: try us-east-2 (us-east-2a,us-east-2b,us-east-2c) -> us-east-1" in preflight.stdout
    placement = json.loads((Path(env["RIGS_STATE_DIR"]) / "placement.json").read_text())
    assert placement["rigs"]["trn1"]["candidates"][0] == {"region": "us-east-2", "zones": ["us-east-2c"]}

    # 4. up g6: no capacity in us-east-2 (injected), so it moves to us-east-1
    up = rigs("up", "g6", "--no-wait", "--capacity-grace", "0", env=env)
    assert up.returncode == 0
    assert ("g6: attempt 1/3: us-east-2 (us-east-2a,us-east-2b,us-east-2c): InsufficientInstanceCapacity "
            "(capacity); clean up, then try us-east-1") in up.stdout
    assert "g6: us-east-2: InferenceG6 deleted" in up.stdout
    assert "g6: attempt 2/3: us-east-1 (us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1f): up in us-east-1" \
        in up.stdout
    placement = json.loads((Path(env["RIGS_STATE_DIR"]) / "placement.json").read_text())
    assert placement["rigs"]["g6"]["deployed"]["region"] == "us-east-1"
    runs = sorted((Path(env["RIGS_STATE_DIR"]) / "runs").iterdir())
    timeline = json.loads((runs[-1] / "timeline-g6.json").read_text())
    assert timeline["region"] == "us-east-1" and timeline["instance_running"] and timeline["deploy_start"]
    assert "InsufficientInstanceCapacity" in (runs[-1] / "up.log").read_text()
    # The stack's own launch watch ended the attempt: its event, printed by the CDK CLI, carries the code.
    first_attempt = (runs[-1] / "cdk-g6-1.log").read_text()
    assert "CREATE_FAILED" in first_attempt and "Custom::LaunchWatch" in first_attempt
    assert "launch failed in us-east-2" in first_attempt and ": InsufficientInstanceCapacity: " in first_attempt
    # The boot scripts' asset, uploaded by the CLI to moto's S3, has the sha256 the user data carries (patch 11).
    assert re.search(r"boot scripts s3://cdk-hnb659fds-assets-123456789012-us-east-1/\w{64}\.sh: sha256 \w{64} as "
                     "synthesized", server_log.read_text())

    # 5. every other stack of the app; g6 stays where up put it (the recorded placement)
    deploy = run([CDK, "deploy", "--all", "--method=direct", "--require-approval", "never", "--concurrency", "4",
                  "-c", "region.sagemaker=us-west-2", "--output", str(cdk_out)], env)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    deployed = our_stacks(endpoint)
    assert deployed["us-east-2"] == ["InferenceBase-us-east-2", "InferenceInf2", "InferenceTrn1"]
    assert deployed["us-east-1"] == ["InferenceBase-us-east-1", "InferenceG5g", "InferenceG5gImage", "InferenceG6"]
    assert "InferenceSageMaker" in deployed["us-west-2"]
    sagemaker_stack = client("cloudformation", "us-west-2", endpoint).describe_stacks(StackName="InferenceSageMaker")
    digest = {o["OutputKey"]: o["OutputValue"] for o in sagemaker_stack["Stacks"][0]["Outputs"]}["ImageDigest"]
    [published] = client("ecr", "us-west-2", endpoint).describe_images(
        registryId="763104351884", repositoryName="vllm")["imageDetails"]  # the server's stand-in for AWS's registry
    assert digest == published["imageDigest"]
    models = client("sagemaker", "us-west-2", endpoint).list_models()["Models"]
    [image] = {client("sagemaker", "us-west-2", endpoint).describe_model(ModelName=m["ModelName"])[
        "PrimaryContainer"]["Image"] for m in models}
    assert image == f"763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm@{digest}"
    manifest = json.loads((cdk_out / "manifest.json").read_text())
    assert manifest["artifacts"]["InferenceG6"]["environment"].endswith("/us-east-1")
    assert "InferenceG6 (no changes)" in deploy.stdout + deploy.stderr
    # Zones chosen at deploy time: us-east-1e offers none of the rig types, so it is not used.
    base = client("cloudformation", "us-east-1", endpoint).describe_stacks(StackName="InferenceBase-us-east-1")
    outputs = {o["OutputKey"]: o["OutputValue"] for o in base["Stacks"][0]["Outputs"]}
    assert outputs["NetworkZones"] == "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1f"

    # 6. status, sweep (lists only), sweep --yes
    status = rigs("status", "--json", env=env)
    assert status.returncode == 0
    inventory = json.loads(status.stdout)
    stacks = {(r["region"], r["id"]) for r in inventory["resources"] if r["kind"] == "stack"}
    assert ("us-east-1", "InferenceG6") in stacks and ("us-east-2", "InferenceG6") not in stacks
    billing = [r for r in inventory["resources"] if r["hourly_usd"] > 0]
    assert {r["kind"] for r in billing} >= {"instance", "sagemaker-endpoint"}
    assert inventory["hourly_usd"] == pytest.approx(sum(r["hourly_usd"] for r in inventory["resources"]), abs=1e-4)
    assert not any("their-" in (r["name"] or "") for r in inventory["resources"])
    listing = rigs("sweep", env=env)
    assert listing.returncode == 0 and "nothing deleted: pass --yes" in listing.stdout
    assert our_stacks(endpoint)["us-east-1"] == ["InferenceBase-us-east-1", "InferenceG5g", "InferenceG5gImage",
                                                 "InferenceG6"]

    # 7. a second clone, without the placement file that knows g6 failed over to us-east-1:
    # `cdk destroy --all` asks CloudFormation where the stacks are and removes g6 where it is.
    clone = second_clone(tmp_path / "clone")
    clone_env = {**env, "RIGS_STATE_DIR": str(tmp_path / "clone-state")}
    clone_cdk = str(clone / "scripts" / "cdk")
    destroy = run([clone_cdk, "destroy", "--all", "--force", "--output", str(tmp_path / "clone.out")], clone_env,
                  cwd=clone)
    said = destroy.stderr
    assert "app: account 123456789012: asked CloudFormation in us-east-1, us-east-2, us-west-2 for" in said
    assert "InferenceG6 in us-east-1 (CREATE_COMPLETE)" in said
    assert "app: InferenceG6 -> us-east-1 (deployed there (CloudFormation))" in said
    manifest = json.loads((tmp_path / "clone.out" / "manifest.json").read_text())
    assert manifest["artifacts"]["InferenceG6"]["environment"].endswith("/us-east-1")
    assert destroy.returncode == 0, destroy.stderr[-2000:]
    assert "asked CloudFormation in us-east-1, us-east-2, us-west-2 for this app's stacks: none " \
           "deployed" in destroy.stderr  # the wrapper's check after the destroy
    assert our_stacks(endpoint) == {}

    # 8. back in the first clone, whose placement file still says us-east-1: the app corrects it;
    # g6 comes up again (failing over again), and `sweep --yes` removes it and clears the record.
    up = rigs("up", "g6", "--no-wait", "--capacity-grace", "0", env=env)
    assert up.returncode == 0 and "g6: up in us-east-1" in up.stdout
    sweep = rigs("sweep", "--yes", env=env)
    assert sweep.returncode == 0
    assert "placement: g6 is gone; its record in" in sweep.stdout
    assert json.loads((Path(env["RIGS_STATE_DIR"]) / "placement.json").read_text())["rigs"]["g6"].get(
        "deployed") is None
    assert "left: nothing of ours in us-east-1, us-east-2, us-west-1, us-west-2" in sweep.stdout
    assert_foreign_untouched(endpoint, foreign)
    after_sweep = json.loads(rigs("status", "--json", env=env).stdout)
    assert [r for r in after_sweep["resources"] if not r["kept_by_default"]] == []
    assert after_sweep["hourly_usd"] == 0
    destroy = run([CDK, "destroy", "--all", "--force", "--output", str(cdk_out)], env)
    assert destroy.returncode == 0, destroy.stderr[-2000:]
    assert our_stacks(endpoint) == {}
    again = run([CDK, "destroy", "--all", "--force", "--output", str(cdk_out)], env)  # nothing is deployed: nothing is "destroyed"
    assert again.returncode == 0 and "nothing to destroy" in again.stderr and "destroyed" not in again.stdout

    # 9. nothing of ours is left (the base stacks took their networks with them); theirs untouched. (The
    # interface moto keeps from a terminated instance carries no tag of ours and no longer holds a VPC.)
    final = json.loads(rigs("status", "--json", env=env).stdout)
    assert final["resources"] == [] and final["hourly_usd"] == 0, final["resources"]
    assert_foreign_untouched(endpoint, foreign)
