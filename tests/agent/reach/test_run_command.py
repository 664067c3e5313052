"""``--load-from rig``'s Run Command against moto's server (rigs/offline/moto_server.py, patch 17 runs the script as
the instance's SSM agent would): the job through the bucket, the load generator fetched by a pre-signed URL and
checked, the results read back, and nothing left in the bucket."""

from __future__ import annotations

import boto3
import pytest

from agent.reach.run_command import RunCommandError, SsmRigCommand
from rigs.userdata import load_generator
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.paced import Pace
from tests.rigs.conftest import endpoint, moto_server  # noqa: F401 - fixtures

BUCKET, ASSETS = "inferencebase-us-east-1-loadresultsbucket-1", "cdk-hnb659fds-assets-123456789012-us-east-1"


@pytest.fixture
def rig(endpoint: str) -> dict:  # noqa: F811
    s3 = boto3.client("s3", region_name="us-east-1")
    for bucket in (BUCKET, ASSETS):
        s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=ASSETS, Key="abc.zip", Body=load_generator.bundle())
    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    return {"s3": s3, "instance_id": instance}


def command(rig: dict, sha256: str) -> SsmRigCommand:
    return SsmRigCommand(instance_id=rig["instance_id"], region="us-east-1", bucket=BUCKET,
                         generator_url=f"s3://{ASSETS}/abc.zip", generator_sha256=sha256, container="vllm",
                         run_id="test", session=boto3.Session(region_name="us-east-1"))


def job(port: int, n: int) -> dict:
    body = {"model": "paced", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "stream": True,
            "stream_options": {"include_usage": True}}
    return {"format": 1, "url": f"http://127.0.0.1:{port}/v1/chat/completions", "mode": "closed", "concurrency": 2,
            "timeout_s": 30, "bodies": [body] * n}


def test_a_job_runs_on_the_instance_and_its_results_come_back_through_the_bucket(rig: dict) -> None:
    with FakeOpenAI(Pace(slots=4, ttft_s=0.01, tpot_s=0.01, tokens=10)) as server:
        lines = command(rig, load_generator.sha256()).run(job(server.port, 4))
    clock, replies = lines[0], lines[1:]
    assert clock["format"] == 1 and sorted(r["i"] for r in replies) == [0, 1, 2, 3]
    assert all(r["reply"]["completion_tokens"] == 10 and r["reply"]["error"] is None for r in replies)
    assert rig["s3"].list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0  # the job and its results deleted


def test_a_load_generator_of_another_sha256_is_not_run_and_the_error_says_why(rig: dict) -> None:
    with pytest.raises(RunCommandError, match=r"ended Failed: run_load: the load generator has sha256 \w+, not 0+ "
                                              r"as synthesized.*aws ssm get-command-invocation"):
        command(rig, "0" * 64).run(job(9, 1))
    assert rig["s3"].list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_a_stopped_local_job_ends_at_once_and_leaves_no_process(tmp_path) -> None:
    """Ctrl-C during a level sent from the rig: the offline stand-in's script and load generator are gone."""
    import os
    import threading
    import time

    from agent.reach.run_command import LocalRigCommand
    from tests.agent.conftest import alive_after, descendants

    rig, failed, seen, before = LocalRigCommand(), [], set(), descendants(os.getpid())
    with FakeOpenAI(Pace(slots=1, ttft_s=0.01, tpot_s=0.5, tokens=20)) as server:  # 10 s a request
        worker = threading.Thread(target=lambda: _run_catching(rig, job(server.port, 2), failed))
        worker.start()
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:  # bash and the load generator under it
            seen |= descendants(os.getpid()) - before
            time.sleep(0.05)
        started = time.monotonic()
        rig.stop()
        worker.join(timeout=10)
    assert time.monotonic() - started < 3 and not worker.is_alive()
    assert [str(e) for e in failed] == ["the load job was stopped"]
    assert alive_after(seen) == set()


def _run_catching(rig, job_: dict, failed: list) -> None:
    try:
        rig.run(job_)
    except RunCommandError as exc:
        failed.append(exc)


def test_a_stopped_run_command_is_cancelled_on_the_instance_and_leaves_nothing_in_the_bucket(rig: dict) -> None:
    import threading
    import time

    ssm = boto3.client("ssm", region_name="us-east-1")
    rig_command, failed = command(rig, load_generator.sha256()), []
    with FakeOpenAI(Pace(slots=1, ttft_s=0.01, tpot_s=0.5, tokens=20)) as server:  # 10 s a request
        worker = threading.Thread(target=lambda: _run_catching(rig_command, job(server.port, 2), failed))
        worker.start()
        time.sleep(2)  # the job under way on the "instance"
        started = time.monotonic()
        rig_command.stop()
        worker.join(timeout=10)
    assert time.monotonic() - started < 3 and [str(e).endswith("was stopped") for e in failed] == [True]
    [sent] = ssm.list_commands()["Commands"]
    status = ssm.get_command_invocation(CommandId=sent["CommandId"], InstanceId=rig["instance_id"])["Status"]
    assert status == "Cancelled" and rig["s3"].list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
