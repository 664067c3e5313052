"""The deploy-time custom resources: offered subnets, the lifetime deadline, the endpoint chat probe."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from unittest import mock

import pytest

from stacks.parts.handlers import deadline, endpoint_probe, offered_subnets
from stacks.parts import inline_function
from stacks.parts.inline_function import INLINE_LIMIT, inline_source, shared_code


class FakeEc2:
    """Subnets in three zones; the type is offered in some of them (as in us-east-2 for trn1)."""

    def __init__(self, offered: list[str]) -> None:
        self.offered = offered

    def describe_subnets(self, SubnetIds):  # noqa: N803 (boto3 naming)
        zones = {"subnet-a": "us-east-2a", "subnet-b": "us-east-2b", "subnet-c": "us-east-2c"}
        return {"Subnets": [{"SubnetId": s, "AvailabilityZone": zones[s]} for s in SubnetIds]}

    def get_paginator(self, name):
        assert name == "describe_instance_type_offerings"
        offered = self.offered

        class Paginator:
            def paginate(self, LocationType, Filters):  # noqa: N803
                assert LocationType == "availability-zone"
                assert Filters[0]["Name"] == "instance-type"
                return [{"InstanceTypeOfferings": [{"Location": zone} for zone in offered]}]

        return Paginator()


PROPS = {"SubnetIds": ["subnet-c", "subnet-a", "subnet-b"], "InstanceType": "trn1.2xlarge", "AllowedZones": []}


def test_only_subnets_in_zones_that_offer_the_type_are_used():
    result = offered_subnets.compute(PROPS, ec2=FakeEc2(["us-east-2c"]))
    assert result == {"SubnetIds": "subnet-c", "Zones": "us-east-2c"}


def test_a_zone_the_network_repeats_is_used_once():
    class Repeating(FakeEc2):
        def describe_subnets(self, SubnetIds):  # noqa: N803 (boto3 naming)
            zones = {"subnet-a": "us-east-2a", "subnet-b": "us-east-2b", "subnet-a2": "us-east-2a"}
            return {"Subnets": [{"SubnetId": s, "AvailabilityZone": zones[s]} for s in SubnetIds]}

    props = {**PROPS, "SubnetIds": ["subnet-a2", "subnet-b", "subnet-a"]}
    result = offered_subnets.compute(props, ec2=Repeating(["us-east-2a", "us-east-2b"]))
    assert result == {"SubnetIds": "subnet-a,subnet-b", "Zones": "us-east-2a,us-east-2b"}


def test_every_offering_zone_is_used_in_zone_order():
    result = offered_subnets.compute(PROPS, ec2=FakeEc2(["us-east-2b", "us-east-2a", "us-east-2c"]))
    assert result == {"SubnetIds": "subnet-a,subnet-b,subnet-c", "Zones": "us-east-2a,us-east-2b,us-east-2c"}


def test_allowed_zones_narrow_the_offering_zones():
    props = {**PROPS, "AllowedZones": ["us-east-2a", "us-east-2c"]}
    result = offered_subnets.compute(props, ec2=FakeEc2(["us-east-2a", "us-east-2b"]))
    assert result == {"SubnetIds": "subnet-a", "Zones": "us-east-2a"}


def test_no_offering_zone_fails_the_deploy_with_the_facts():
    with pytest.raises(RuntimeError, match=r"can launch trn1.2xlarge.*zones offering it none.*region"):
        offered_subnets.compute(PROPS, ec2=FakeEc2([]))


def test_deadline_is_the_lifetime_after_now_in_utc():
    now = datetime(2026, 10, 5, 16, 32, 18, 123456, tzinfo=timezone.utc)
    assert deadline.compute({"LifetimeMinutes": "240"}, now=now) == {"At": "2026-10-05T20:32:18",
                                                                     "Iso": "2026-10-05T20:32:18Z"}


def test_deadline_refuses_a_lifetime_under_a_minute():
    with pytest.raises(ValueError, match="at least 1"):
        deadline.compute({"LifetimeMinutes": "0"})


class FakeRuntime:
    def __init__(self, replies: list) -> None:
        self.replies = replies
        self.calls = []

    def invoke_endpoint(self, **kwargs):
        self.calls.append(kwargs)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return {"Body": io.BytesIO(json.dumps(reply).encode())}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


PROBE_PROPS = {"EndpointName": "endpoint-1", "ModelId": "model", "BudgetSeconds": "60"}


def test_probe_retries_until_the_endpoint_answers_with_text():
    runtime = FakeRuntime([RuntimeError("ModelError: loading"),
                           {"choices": [{"message": {"content": ""}}]},
                           {"choices": [{"message": {"content": " ok "}}]}])
    clock = Clock()
    assert endpoint_probe.compute(PROBE_PROPS, runtime=runtime, sleep=clock.sleep, clock=clock) == {"Reply": "ok"}
    body = json.loads(runtime.calls[0]["Body"])
    assert body["model"] == "model" and body["messages"][0]["role"] == "user"
    assert runtime.calls[0]["EndpointName"] == "endpoint-1"


def test_probe_fails_with_the_last_error_when_the_budget_runs_out():
    runtime = FakeRuntime([{"choices": [{"message": {"content": None}}]}] * 10)
    clock = Clock()
    with pytest.raises(RuntimeError, match="endpoint-1 gave no chat completion.*empty text"):
        endpoint_probe.compute(PROBE_PROPS, runtime=runtime, sleep=clock.sleep, clock=clock)


class FakeContext:
    """The Lambda context's clock: the time the function has left, read off the fake clock."""

    def __init__(self, clock: Clock, timeout_s: float) -> None:
        self.clock, self.ends = clock, clock.now + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return int((self.ends - self.clock.now) * 1000)


class SlowRuntime(FakeRuntime):
    """Every request ends in an error after ``seconds`` (a read timeout, say)."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__([])
        self.clock, self.seconds, self.started = clock, seconds, []

    def invoke_endpoint(self, **kwargs):
        self.started.append(self.clock.now)
        self.clock.now += self.seconds
        raise TimeoutError("Read timeout on endpoint URL")


def test_probe_starts_no_request_that_could_outlast_the_function():
    """A budget longer than the function has left: every request, and the answer to CloudFormation,
    still fit in the function's time, so the deploy fails with the reason instead of a silent timeout."""
    clock = Clock()
    runtime = SlowRuntime(clock, endpoint_probe.ATTEMPT_S)
    context = FakeContext(clock, timeout_s=300)
    with pytest.raises(RuntimeError, match=r"endpoint-1 gave no chat completion with text in 185 s; last: "
                                           r"TimeoutError: Read timeout"):
        endpoint_probe.compute({**PROBE_PROPS, "BudgetSeconds": "600"}, runtime=runtime, sleep=clock.sleep,
                               clock=clock, context=context)
    assert runtime.started == [0, 95]
    assert context.get_remaining_time_in_millis() >= endpoint_probe.ANSWER_S * 1000


def test_probe_with_no_time_for_one_request_fails_at_once():
    clock = Clock()
    runtime = FakeRuntime([])
    with pytest.raises(RuntimeError, match="no attempt: no time left for one"):
        endpoint_probe.compute(PROBE_PROPS, runtime=runtime, sleep=clock.sleep, clock=clock,
                               context=FakeContext(clock, timeout_s=endpoint_probe.ATTEMPT_S))
    assert runtime.calls == []


def test_probe_asks_once_per_request_with_short_timeouts(monkeypatch):
    made = []
    monkeypatch.setattr(endpoint_probe.boto3, "client", lambda service, config: made.append((service, config))
                        or FakeRuntime([{"choices": [{"message": {"content": "ok"}}]}]))
    assert endpoint_probe.compute(PROBE_PROPS) == {"Reply": "ok"}
    [(service, config)] = made
    assert service == "sagemaker-runtime"
    assert (config.connect_timeout, config.read_timeout) == (5, 70)  # SageMaker gives a container 60 s
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"}


def test_the_lambda_context_reaches_a_handler_that_asks_for_it():
    namespace: dict = {}
    exec(compile(inline_source("endpoint_probe"), "endpoint_probe.py", "exec"), namespace)
    seen = []
    namespace["compute"] = lambda properties, context=None: seen.append(context) or {}
    event = {"RequestType": "Create", "ResponseURL": "https://cfn-response.example/put", "StackId": "stack",
             "RequestId": "req", "LogicalResourceId": "Res", "ResourceProperties": {}}
    with mock.patch("urllib.request.urlopen", lambda request, timeout: None):
        namespace["handler"](event, "the-context")
    assert seen == ["the-context"]


@pytest.mark.parametrize("handler", ["usable_zones", "offered_subnets", "root_volume", "launch_watch", "deadline",
                                     "endpoint_probe", "image_digest", "build_stop"])
def test_inline_code_fits_lambda_and_answers_cloudformation(handler):
    source = inline_source(handler)
    assert len(source) <= INLINE_LIMIT
    namespace: dict = {}
    exec(compile(source, f"{handler}.py", "exec"), namespace)
    event = {"RequestType": "Create", "ResponseURL": "https://cfn-response.example/put", "StackId": "stack",
             "RequestId": "req", "LogicalResourceId": "Res", "ResourceProperties": {"X": "1"}}
    sent, deleted_with = [], []
    if "on_delete" in namespace:  # a handler that stops something on delete: Delete runs it, nothing else does
        namespace["on_delete"] = deleted_with.append
    with mock.patch("urllib.request.urlopen", lambda request, timeout: sent.append(request)):
        namespace["compute"] = lambda props: {"Seen": props["X"]}
        assert namespace["handler"](event, None) == "SUCCESS"
        namespace["compute"] = lambda props: (_ for _ in ()).throw(RuntimeError("no zone offers it"))
        assert namespace["handler"](event, None) == "FAILED"
        assert deleted_with == []
        assert namespace["handler"]({**event, "RequestType": "Delete", "PhysicalResourceId": "p"}, None) == "SUCCESS"
    assert deleted_with == ([{"X": "1"}] if handler == "build_stop" else [])
    first, failed, deleted = (json.loads(r.data) for r in sent)
    assert first["Data"] == {"Seen": "1"} and first["PhysicalResourceId"] == "Res"
    assert failed["Status"] == "FAILED" and failed["Reason"] == "RuntimeError: no zone offers it"
    assert deleted["PhysicalResourceId"] == "p" and deleted["Data"] == {}
    assert all(r.get_method() == "PUT" for r in sent)


def test_a_handler_inlines_only_standard_library_code_of_rigs(tmp_path, monkeypatch):
    """The Lambda has neither rigs nor the project's packages; a __future__ import must open a file."""
    monkeypatch.setattr(inline_function, "SHARED_DIR", tmp_path)
    (tmp_path / "pure.py").write_text('"""Why."""\nimport json\n\n\ndef f():\n    return json.dumps(1)\n')
    assert shared_code("pure") == "# rigs/pure.py\nimport json\n\n\ndef f():\n    return json.dumps(1)\n"
    for name, text, problem in (("heavy", "import boto3\n", "imports boto3"),
                                ("future", "from __future__ import annotations\n", "imports __future__"),
                                ("sibling", "from . import aws\n", "imports a relative module"),
                                ("late", "def f():\n    from rigs import aws\n", "imports rigs")):
        (tmp_path / f"{name}.py").write_text(text)
        with pytest.raises(ValueError, match=f"rigs/{name}.py {problem}: a handler can inline only"):
            shared_code(name)


def test_every_custom_resource_gives_up_minutes_after_its_function(templates, unpinned_endpoint_templates):
    """A handler that dies without answering fails its stack within minutes, not CloudFormation's hour:
    each custom resource's service timeout is its function's timeout plus a margin."""
    every = {**templates, **{f"InferenceSageMaker-{r}": t for r, t in unpinned_endpoint_templates.items()}}
    seen = set()
    for stack, template in every.items():
        for logical_id, resource in template["Resources"].items():
            if not resource["Type"].startswith("Custom::") and resource["Type"] != "AWS::CloudFormation::CustomResource":
                continue
            function = template["Resources"][resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]]
            timeout_s = function["Properties"]["Timeout"]
            service_timeout_s = int(resource["Properties"].get("ServiceTimeout", 3600))
            assert timeout_s < service_timeout_s <= timeout_s + 300, (stack, logical_id, timeout_s, service_timeout_s)
            seen.add(resource["Type"])
    assert seen == {"Custom::UsableZones", "Custom::OfferedSubnets", "Custom::RootVolume", "Custom::LaunchWatch",
                    "Custom::Deadline", "Custom::EndpointChatProbe", "Custom::ImageDigest", "Custom::BuildStop"}
