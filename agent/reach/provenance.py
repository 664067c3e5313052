"""What served each backend, read at run time over the way the benchmark reaches it.

- **An OpenAI-compatible server** (a rig through its SSM port forward or the stand-in's relay, the local
  rig, a ``*_URL`` server): ``GET /v1/models`` (the model, vLLM's ``max_model_len``, ``owned_by`` naming the
  engine), vLLM's ``GET /version``, llama.cpp's ``GET /props`` (``build_info``, the context of one request).
  Nothing but the backend's own base URL is asked: no new network path.
- **An EC2 rig**: instance type, zone and AMI as discovery read them (``DescribeInstances``); the accelerator,
  its driver and the server image's digest from the rig's own boot report, one ``rig report:`` line of its
  user-data log in CloudWatch Logs (``rigs/userdata/common.sh``), and the KV cache vLLM allocated from its own
  start-up lines, which the boot script copies there as ``engine report:`` lines.
- **A SageMaker endpoint**: the image SageMaker resolved (``DescribeEndpoint``
  ``ProductionVariants[].DeployedImages[].ResolvedImage``) and the instance type of its endpoint config;
  the container's own ``/version`` and ``/v1/models`` cannot be asked (the runtime passes only
  ``/invocations`` to it).
- **Bedrock**: the foundation model an inference profile routes to (``GetInferenceProfile``) and the service
  tier Bedrock reports serving a one-token ``Converse`` request in (``serviceTier``).
- **Bedrock's OpenAI-compatible endpoint**: whether its ``GET <route>/models`` (the model's route, ``/v1`` or
  ``/openai/v1``), authenticated as every request is, lists the model requests name, and the region its host names
  (requests are signed for the expected one). A model its route refuses, or does not list, leaves the backend out of
  the run with one line naming the other route (:func:`route_refusal`): the one check made before the run.

Any other fact that is not answered is recorded as not reported, with the reason; reading never fails a run.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import logging
import re
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from botocore.config import Config

from kit import utc
from rigs import aws
from rigs.catalog.facts import fact
from rigs.catalog.pricing import STANDARD_TIER

from ..backends import Backend, service_tier_args
from ..kinds import FROM_ENDPOINT, FROM_MODEL, descriptor
from .probe import describe_error

logger = logging.getLogger(__name__)

READ_TIMEOUT_S = 5.0
"""How long one ``GET`` may take (a server that answers chat answers these at once)."""
AWS_CONFIG = Config(connect_timeout=5, read_timeout=15, retries={"total_max_attempts": 2, "mode": "standard"})
REPORT_MARK = "rig report: "
"""The boot script's line: ``rig report: accelerator=NVIDIA L4; count=1; driver=570.1; image=repo@sha256:...``."""
ENGINE_MARK = "engine report: "
"""The boot script's copy of one of the engine's own start-up lines (``rigs/userdata``, ``describe_engine``)."""
REPORT_PAGES = 5
ENGINE_NAMES = {"vllm": "vLLM", "llamacpp": "llama.cpp"}
"""``owned_by`` in ``/v1/models`` -> the engine's name."""
SAGEMAKER_UNREAD = ("the SageMaker runtime passes only /invocations to the container, so its /version and "
                    "/v1/models cannot be asked")
PROBE_TEXT = "Say OK."


def missing(source: str, reason: str) -> dict[str, Any]:
    """A fact that could not be read: where it was asked, and why it is not there."""
    return {"value": None, "source": source, "not_reported": reason}


# --- an OpenAI-compatible server -----------------------------------------------------------------


def _get(url: str, timeout_s: float, headers: Mapping[str, str] | None = None, said: bool = False
         ) -> tuple[Any, str | None]:
    """The JSON at ``url``, or None and a one-line reason (with ``said``, an error answer's own message after its
    status: how Bedrock's endpoint says a route does not serve a model)."""
    request = urllib.request.Request(url, method="GET", headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:  # noqa: S310
            return json.loads(reply.read()), None
    except urllib.error.HTTPError as exc:
        message = _error_message(exc) if said else ""
        return None, f"HTTP {exc.code}" + (f": {message}" if message else "")
    except (OSError, http.client.HTTPException) as exc:
        return None, describe_error(exc)
    except ValueError:
        return None, "not JSON"


def _error_message(exc: urllib.error.HTTPError) -> str:
    """The ``error.message`` of an OpenAI-shaped error answer, in 200 characters at most ("" for any other)."""
    try:
        body = json.loads(exc.read() or b"null")
    except (OSError, ValueError):
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message)[:200] if message else ""


def server_facts(base_url: str, model_id: str, timeout_s: float = READ_TIMEOUT_S) -> dict[str, Any]:
    """Engine, engine version, model and context length as the server at ``base_url`` (``.../v1``) reports them."""
    root = base_url.removesuffix("/v1")
    models, models_why = _get(f"{base_url}/models", timeout_s)
    version, version_why = _get(f"{root}/version", timeout_s)
    props, props_why = _get(f"{root}/props", timeout_s)
    entries = [m for m in (models.get("data") if isinstance(models, dict) else None) or [] if isinstance(m, dict)]
    models_why = models_why or ("no model in its list" if not entries else None)
    ids = [str(m.get("id")) for m in entries if m.get("id")]
    entry = next((m for m in entries if m.get("id") == model_id), entries[0] if entries else {})
    props = props if isinstance(props, dict) else {}
    return {
        "engine": _engine(entry, props, models_why),
        "engine_version": _version(version, version_why, props, props_why),
        "model": _model(entry, ids, models_why),
        "context_tokens": _context(entry, props, models_why, props_why),
    }


def _model(entry: Mapping[str, Any], ids: list[str], models_why: str | None) -> dict[str, Any]:
    """The model requests name when the server lists it, else the first it lists (the others named)."""
    if not entry.get("id"):
        return missing("GET /v1/models", models_why or "no model id")
    others = [i for i in ids if i != entry["id"]]
    return fact(str(entry["id"]), "GET /v1/models" + (f", which also lists {', '.join(others)}" if others else ""))


def _engine(entry: Mapping[str, Any], props: Mapping[str, Any], models_why: str | None) -> dict[str, Any]:
    owner = entry.get("owned_by")
    if isinstance(owner, str) and owner:
        return fact(ENGINE_NAMES.get(owner, owner), f"GET /v1/models owned_by {owner}")
    if "build_info" in props:
        return fact("llama.cpp", "GET /props (llama.cpp's properties endpoint answers)")
    return missing("GET /v1/models owned_by", models_why or "the model list names no owner")


def _version(version: Any, version_why: str | None, props: Mapping[str, Any], props_why: str | None) -> dict[str, Any]:
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        return fact(version["version"], "GET /version")
    build = props.get("build_info")
    if isinstance(build, str) and build:
        if build.startswith("b0-"):
            return missing("GET /props build_info", f"build_info is {build}: this llama.cpp build does not know its "
                                                    "version")
        return fact(build, "GET /props build_info")
    return missing("GET /version, GET /props", f"/version: {version_why or 'no version in it'}; "
                                               f"/props: {props_why or 'no build_info in it'}")


def _context(entry: Mapping[str, Any], props: Mapping[str, Any], models_why: str | None,
             props_why: str | None) -> dict[str, Any]:
    if isinstance(entry.get("max_model_len"), int):
        return fact(entry["max_model_len"], "GET /v1/models max_model_len")
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
        return fact(settings["n_ctx"], "GET /props default_generation_settings.n_ctx, one request's context")
    meta = entry.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int):
        return fact(meta["n_ctx"], "GET /v1/models meta.n_ctx")
    return missing("GET /v1/models, GET /props", f"/v1/models: {models_why or 'no max_model_len'}; "
                                                 f"/props: {props_why or 'no n_ctx'}")


# --- an EC2 rig ----------------------------------------------------------------------------------


def instance_facts(metadata: Mapping[str, str]) -> dict[str, Any]:
    """Instance type, zone and AMI of a discovered rig, as discovery read them from ``DescribeInstances``."""
    source = f"EC2 DescribeInstances {metadata.get('instance_id', '')}".strip()
    return {name: fact(metadata[name], source) for name in ("instance_type", "availability_zone", "ami_id")
            if metadata.get(name)}


def boot_report(session: Any, region: str, log_group: str, instance_id: str,
                engine_expected: bool = False) -> dict[str, Any]:
    """The accelerator, its driver and the image digest from the rig's ``rig report:`` line in its user-data log;
    vLLM's own KV cache lines from its ``engine report:`` lines (:func:`engine_facts`), reported missing only where
    ``engine_expected``."""
    stream = f"{instance_id}/user-data"
    source = f"the rig's boot report ({log_group} {stream})"
    logs = session.client("logs", region_name=region, config=AWS_CONFIG)
    engine = ("kv_cache_tokens", "max_concurrency") if engine_expected else ()
    try:
        line, engine_lines = _report_lines(logs, log_group, stream)
    except Exception as exc:  # noqa: BLE001 - any failure: not reported, with the reason
        why = aws.describe_error(exc, "logs")
        return {name: missing(source, why) for name in ("accelerator", "driver", "image_digest", *engine)}
    out = {**engine_facts(engine_lines, source), **_rig_facts(line, source)}
    for name in engine:
        out.setdefault(name, missing(source, "no engine report line with vLLM's KV cache size in the log (a rig "
                                             "booted before its boot script copied them, or not shipped yet)"))
    return out


def _rig_facts(line: str | None, source: str) -> dict[str, Any]:
    if line is None:
        why = "no rig report line in the log (a rig booted before its boot script wrote one, or not shipped yet)"
        return {name: missing(source, why) for name in ("accelerator", "driver", "image_digest")}
    fields = {key: value for key, _, value in (part.partition("=") for part in line.split("; ")) if value}
    values = {"accelerator": fields.get("accelerator"), "driver": fields.get("driver"),
              "image_digest": fields.get("image")}
    out = {name: fact(value, source) if value and value != "unknown" else
           missing(source, f"the report says {value or 'nothing'}") for name, value in values.items()}
    if out["accelerator"]["value"] and fields.get("count", "").isdigit():
        out["accelerator"]["value"] = f"{fields['count']} x {out['accelerator']['value']}"
    return out


KV_CACHE_LINE = re.compile(r"GPU KV cache size: (?P<tokens>[\d,]+) tokens")
CONCURRENCY_LINE = re.compile(r"Maximum concurrency for (?P<context>[\d,]+) tokens per request: (?P<times>[\d.]+)x")
"""vLLM's start-up lines (``vllm/v1/core/kv_cache_utils.py``: ``"GPU KV cache size: %s tokens"`` and ``"Maximum
concurrency for %s tokens per request: %.2fx"``, the counts with thousands separators)."""


COMPILE_START = "Unable to find precompiled"
"""vLLM's Neuron plugin's warning before NxD Inference compiles (``Unable to find precompiled artifacts from ...
Recompiling...``, vllm_neuron/worker/neuronx_distributed_model_loader.py)."""
COMPILE_END = "Sharding weights on load"
"""NxD Inference's first line of the load that follows the compile (models/application_base.py)."""
COMPILE_SKIPPED = "loaded pre-compiled"
"""The plugin's line when it loads artifacts compiled before (``Successfully loaded pre-compiled model artifacts``)."""
FIRST_ANSWER_LINE = re.compile(r"neuron server: first good answer (?P<seconds>\d+) s after it started")
"""The Neuron vLLM rig's boot script: from its container's start to the first good chat completion."""


def engine_facts(lines: Sequence[str], source: str) -> dict[str, Any]:
    """The KV cache vLLM allocated, from its own log lines: ``kv_cache_tokens`` and ``max_concurrency`` (the last of
    each; a server restarted logs them again); on AWS's vLLM Neuron image, how long NxD Inference compiled
    (:func:`neuron_compile`) and the first good answer after the server started."""
    out: dict[str, Any] = {}
    for line in lines:
        if found := KV_CACHE_LINE.search(line):
            out["kv_cache_tokens"] = fact(int(found["tokens"].replace(",", "")), f"vLLM's log, {source}")
        if found := CONCURRENCY_LINE.search(line):
            out["max_concurrency"] = fact(found["times"], f"vLLM's log for {found['context']} tokens per request, "
                                                          f"{source}")
        if found := FIRST_ANSWER_LINE.search(line):
            out["first_answer_seconds"] = fact(int(found["seconds"]), f"the boot script's clock, {source}")
    compiled = neuron_compile(lines, source)
    return {**out, **({"compile_seconds": compiled} if compiled else {})}


def neuron_compile(lines: Sequence[str], source: str) -> dict[str, Any] | None:
    """NxD Inference's compile in seconds, from the server's own lines with docker's time stamps (the boot script
    copies them): from the plugin's "Unable to find precompiled" to NxD Inference's "Sharding weights on load"; 0
    where artifacts compiled before were loaded; None where the lines say nothing of a compile."""
    stamps = {}
    for line in lines:
        for mark in (COMPILE_START, COMPILE_END, COMPILE_SKIPPED):
            if mark in line and mark not in stamps:
                stamps[mark] = line.split(" ", 1)[0]
    where = f"the server's log, docker's time stamps, {source}"
    if COMPILE_SKIPPED in stamps:
        return fact(0, f"artifacts compiled before were loaded ({where})")
    if COMPILE_START not in stamps:
        return None
    try:
        start, end = (datetime.fromisoformat(stamps[m][:26].rstrip("Z")) for m in (COMPILE_START, COMPILE_END))
    except (KeyError, ValueError):
        return missing(where, f"a compile started ({COMPILE_START!r}) but no {COMPILE_END!r} line with a time stamp")
    return fact(round((end - start).total_seconds()), f"{COMPILE_START!r} to {COMPILE_END!r} ({where})")


def _report_lines(logs: Any, log_group: str, stream: str) -> tuple[str | None, list[str]]:
    """The last ``rig report:`` line of the stream's first pages (or None), and its ``engine report:`` lines."""
    token, found, engine = None, None, []
    for _ in range(REPORT_PAGES):
        page = logs.get_log_events(logGroupName=log_group, logStreamName=stream, startFromHead=True,
                                   **({"nextToken": token} if token else {}))
        for event in page.get("events", []):
            message = str(event.get("message", ""))
            if REPORT_MARK in message:
                found = message.split(REPORT_MARK, 1)[1].strip()
            elif ENGINE_MARK in message:
                engine.append(message.split(ENGINE_MARK, 1)[1].strip())
        if not page.get("events") or page.get("nextForwardToken") in (None, token):
            break
        token = page["nextForwardToken"]
    return found, engine


# --- a SageMaker endpoint ------------------------------------------------------------------------


def endpoint_facts(session: Any, region: str, endpoint: str) -> dict[str, Any]:
    """The image SageMaker deployed and the endpoint's instance type."""
    sagemaker = session.client("sagemaker", region_name=region, config=AWS_CONFIG)
    out = {name: missing("the SageMaker endpoint", SAGEMAKER_UNREAD)
           for name in ("engine", "engine_version", "model", "context_tokens")}
    try:
        described = sagemaker.describe_endpoint(EndpointName=endpoint)
    except Exception as exc:  # noqa: BLE001
        why = aws.describe_error(exc, "sagemaker")
        return {**out, "image_digest": missing("SageMaker DescribeEndpoint", why),
                "instance_type": missing("SageMaker DescribeEndpoint", why)}
    images = [image for variant in described.get("ProductionVariants") or []
              for image in variant.get("DeployedImages") or [] if image.get("ResolvedImage")]
    out["image_digest"] = (fact(images[0]["ResolvedImage"], f"SageMaker DescribeEndpoint {endpoint} "
                                                            "ProductionVariants[].DeployedImages[].ResolvedImage")
                           if images else missing("SageMaker DescribeEndpoint", "it lists no deployed image"))
    out["instance_type"] = _endpoint_instance_type(sagemaker, described.get("EndpointConfigName"))
    return out


def _endpoint_instance_type(sagemaker: Any, config_name: str | None) -> dict[str, Any]:
    source = f"SageMaker DescribeEndpointConfig {config_name}"
    if not config_name:
        return missing("SageMaker DescribeEndpoint", "it names no endpoint config")
    try:
        config = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
    except Exception as exc:  # noqa: BLE001
        return missing(source, aws.describe_error(exc, "sagemaker"))
    types = [v["InstanceType"] for v in config.get("ProductionVariants") or [] if v.get("InstanceType")]
    return fact(types[0], source) if types else missing(source, "no instance type (a serverless endpoint?)")


# --- Bedrock -------------------------------------------------------------------------------------


def bedrock_facts(session: Any, region: str, model_id: str, tier: str) -> dict[str, Any]:
    """The model the inference profile ``model_id`` routes to, and the tier Bedrock served a request in."""
    return {"model": _profile_model(session, region, model_id), "service_tier": _served_tier(session, region,
                                                                                               model_id, tier)}


def _profile_model(session: Any, region: str, model_id: str) -> dict[str, Any]:
    source = f"Bedrock GetInferenceProfile {model_id}"
    bedrock = session.client("bedrock", region_name=region, config=AWS_CONFIG)
    try:
        profile = bedrock.get_inference_profile(inferenceProfileIdentifier=model_id)
    except Exception as exc:  # noqa: BLE001 - a foundation model id is not a profile: said so
        return missing(source, aws.describe_error(exc, "bedrock"))
    arns = [str(m.get("modelArn", "")) for m in profile.get("models") or []]
    models = sorted({arn.rsplit("/", 1)[-1] for arn in arns if "/" in arn})
    regions = sorted({arn.split(":")[3] for arn in arns if arn.count(":") > 3 and arn.split(":")[3]})
    if not models:
        return missing(source, "the profile lists no model")
    where = f" (routes to {', '.join(regions)})" if regions else ""
    return fact(", ".join(models), source + where)


def _served_tier(session: Any, region: str, model_id: str, tier: str) -> dict[str, Any]:
    source = "Bedrock Converse serviceTier (one 1-token request)"
    runtime = session.client("bedrock-runtime", region_name=region, config=AWS_CONFIG)
    try:
        reply = runtime.converse(modelId=model_id, messages=[{"role": "user", "content": [{"text": PROBE_TEXT}]}],
                                 inferenceConfig={"maxTokens": 1}, **service_tier_args(tier))
    except Exception as exc:  # noqa: BLE001
        return missing(source, aws.describe_error(exc, "bedrock-runtime"))
    served = (reply.get("serviceTier") or {}).get("type")
    if not served:
        return missing(source, "the reply names no service tier")
    return fact(STANDARD_TIER if served == "default" else served, source)


# --- Bedrock's OpenAI-compatible endpoint --------------------------------------------------------


def mantle_facts(backend: Backend, session: Any, timeout_s: float = READ_TIMEOUT_S) -> dict[str, Any]:
    """Whether the endpoint lists the model requests name under their route (``GET <route>/models``, signed), that
    route, and the region its host names. A model the route refuses or does not list has its ``route`` fact missing
    with :func:`rigs.aws.wrong_route`'s line: the run then leaves the backend out (:func:`route_refusal`)."""
    url = f"{backend.base_url}/models"
    route = str(backend.metadata.get("route") or urlsplit(str(backend.base_url)).path)
    try:
        auth = aws.MantleAuth.of(backend.metadata.get("auth_mode", aws.SIGNED), str(backend.region),
                                 lambda: session if session is not None else aws.make_session())
    except aws.CredentialsError as exc:
        models, why = None, exc.cause
    else:
        models, why = _get(url, timeout_s, auth.headers("GET", url), said=True)
    listed = {str(m.get("id")): m for m in (models.get("data") if isinstance(models, dict) else None) or []
              if isinstance(m, dict) and m.get("id")}
    entry = listed.get(backend.model_id)
    asked = f"GET {route}/models"
    wrong = aws.wrong_route(backend.model_id, url, route)
    if entry is not None:
        owner = f" (owned_by {entry['owned_by']})" if entry.get("owned_by") else ""
        model = fact(backend.model_id, f"{asked} lists it{owner}")
        served = fact(route, f"{asked} lists {backend.model_id}")
    else:
        model = missing(asked, why or f"not among the {len(listed)} models it lists")
        refused = isinstance(models, dict) or aws.route_refused(why or "")
        served = missing(asked, wrong if refused else f"not confirmed: {why}")
    host_region = aws.mantle_region(str(backend.base_url))
    region = (fact(host_region, "the endpoint's host") if host_region else
              missing("the endpoint's host", f"{backend.base_url} names no region (a private or stand-in endpoint)"))
    return {"model": model, "route": served, "region": region}


def route_refusal(backend: Backend) -> str | None:
    """The one line saying the endpoint does not serve ``backend``'s model under its route, as :func:`mantle_facts`
    read it before the run; None where the route was confirmed, or could not be read (the run then finds out)."""
    read = (backend.provenance.get("read") or {}).get("route") or {}
    reason = str(read.get("not_reported") or "")
    return reason if reason.startswith(aws.WRONG_ROUTE) else None


# --- every backend -------------------------------------------------------------------------------


def read(backend: Backend, session: Any = None) -> Backend:
    """``backend`` with what served it read now beside its expectation (``provenance``); never raises."""
    meta = backend.metadata
    facts: dict[str, Any] = dict(backend.provenance.get("read") or {})
    try:
        if backend.base_url and descriptor(backend.kind).auth is not None:
            facts.update(mantle_facts(backend, session))
        elif backend.base_url:
            facts.update(server_facts(backend.base_url, backend.model_id))
        if session is not None and meta.get("log_group") and meta.get("instance_id") and meta.get("region"):
            facts.update(boot_report(session, meta["region"], meta["log_group"], meta["instance_id"],
                                     engine_expected="kv_cache_tokens" in (backend.provenance.get("expected") or {})))
        how = descriptor(backend.kind).provenance
        if session is not None and how == FROM_ENDPOINT and backend.region and backend.endpoint_name:
            facts.update(endpoint_facts(session, backend.region, backend.endpoint_name))
        if session is not None and how == FROM_MODEL and backend.region:
            facts.update(bedrock_facts(session, backend.region, backend.model_id,
                                       meta.get("service_tier", STANDARD_TIER)))
    except Exception as exc:  # noqa: BLE001 - provenance is a record, never a reason to stop the run
        logger.warning("backend=<%s>, error=<%s> | provenance not read", backend.name, exc)
        facts["reading"] = missing("agent/reach/provenance.py", f"reading stopped: {type(exc).__name__}: {exc}")
    provenance = {**backend.provenance, "read_at": utc.iso_seconds(), "read": facts}
    return dataclasses.replace(backend, provenance=provenance)


class _OneClientAtATime:
    """``session`` whose clients are made one at a time: a boto3 session is not thread-safe, its clients are."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._lock = threading.Lock()

    def client(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._session.client(*args, **kwargs)

    def get_credentials(self) -> Any:
        with self._lock:
            return self._session.get_credentials()


def read_all(backends: Sequence[Backend], session: Any = None) -> list[Backend]:
    """:func:`read` for every backend, at once (each server's questions take a few seconds at most)."""
    if not backends:
        return []
    shared = _OneClientAtATime(session) if session is not None else None
    pool = ThreadPoolExecutor(max_workers=min(8, len(backends)), thread_name_prefix="provenance")
    try:
        return list(pool.map(lambda b: read(b, shared), backends))
    finally:  # on Ctrl-C, do not wait for a slow server's answer: the command's cleanup comes first
        pool.shutdown(wait=False, cancel_futures=True)
