"""Bedrock's OpenAI-compatible endpoint lists the model of the catalog's ``bedrock-mantle`` entry, in each region
checked where it runs, under the route its models entry names (``GET <route>/models``, ``/v1`` or ``/openai/v1``,
signed with the caller's credentials; ``AWS_BEDROCK_BASE_URL`` names another whole base URL,
``AWS_ENDPOINT_URL_BEDROCK_MANTLE`` another host for the route; left out where AWS is a custom endpoint, such as
moto's server offline, unless one of those variables names one). A warning only: the benchmark's ``bedrock-mantle``
backend fails there, no rig does. A model refused or not listed under its route is one line naming the route tried
and the other one."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request

from rigs import aws
from rigs.account import permissions
from rigs.account.checks.base import DOCTOR_CONFIG, OK, WARN, Check, Finding, Scope
from rigs.catalog.model import BedrockBackend
from rigs.catalog.runtimes import BEDROCK_MANTLE, runtime


def bedrock_model(scope: Scope, rig: BedrockBackend, region: str) -> list[Finding]:
    """Bedrock's OpenAI-compatible endpoint lists ``rig``'s model in ``region`` under its route (``GET
    <route>/models``, signed as the benchmark signs its requests)."""

    def row(status: str, detail: str, fix: str = "rerun `python -m rigs doctor`", denied: str = "") -> list[Finding]:
        return [Finding("Bedrock model", "", region, status, f"{rig.name}: {detail}", fix, denied=denied)]

    given = os.environ.get(aws.MANTLE_BASE_URL_VAR, "").strip().rstrip("/")
    host = os.environ.get(aws.MANTLE_ENDPOINT_VAR, "").strip()
    aws_at = scope.clients("sts", region).meta.endpoint_url
    if not (given or host) and not re.match(r"^https://[^/]*\.amazonaws\.com(/|$)", aws_at):
        return []  # AWS is a custom endpoint (moto's server offline), which has no Bedrock OpenAI-compatible one
    endpoint = scope.catalog.bedrock_endpoint(rig.model_id)
    route = endpoint.route if endpoint is not None else aws.DEFAULT_MANTLE_ROUTE
    try:
        base = given or (aws.endpoint_root(host) if host else aws.mantle_host(region)) + route
    except ValueError as exc:
        return row(WARN, f"not checked: {exc}", f"fix {aws.MANTLE_ENDPOINT_VAR}")
    route = urllib.parse.urlsplit(base).path or route
    url = f"{base}/models"
    wrong = aws.wrong_route(rig.model_id, url, route)
    try:
        auth = aws.MantleAuth(region, credentials=scope.session.get_credentials())
        request = urllib.request.Request(url, headers=auth.headers("GET", url))
        with urllib.request.urlopen(request, timeout=DOCTOR_CONFIG.read_timeout) as reply:  # noqa: S310
            listed = {str(m.get("id")) for m in json.loads(reply.read()).get("data") or [] if isinstance(m, dict)}
    except urllib.error.HTTPError as exc:
        if aws.route_refused(_text(exc)):
            return row(WARN, wrong, "set bedrock_endpoint.route in rigs/catalog.yaml's models entry")
        if exc.code in permissions.MANTLE_DENIED_STATUS:
            return row(WARN, f"not checked: GET {url} answered HTTP {exc.code}",
                       permissions.hint(permissions.MANTLE_INFERENCE), permissions.MANTLE_INFERENCE)
        return row(WARN, f"not checked: GET {url} answered HTTP {exc.code}")
    except (OSError, ValueError, AttributeError) as exc:
        return row(WARN, f"not checked: GET {url}: {type(exc).__name__}: {str(exc)[:120]}")
    if rig.model_id in listed:
        return row(OK, f"{rig.model_id} listed by its endpoint", "")
    return row(WARN, f"{rig.model_id} is not among the {len(listed)} models its endpoint lists here under {route} "
               f"(the other route: {aws.other_route(route)}): the benchmark's {rig.name} fails in this region",
               f"run the benchmark with --region one of {', '.join(rig.regions)} where it is listed, or fix its "
               "route (bedrock_endpoint.route in rigs/catalog.yaml's models entry)")


def _text(exc: urllib.error.HTTPError) -> str:
    """An error answer's body, as text (empty when it cannot be read)."""
    try:
        return exc.read().decode("utf-8", "replace")
    except OSError:
        return ""


def openai_endpoint_models(scope: Scope) -> list[tuple]:
    """The catalog's Bedrock OpenAI-compatible entry in each region checked that it lists."""
    return [(rig, region) for rig in scope.catalog.rigs.values() if runtime(rig.runtime) is BEDROCK_MANTLE
            for region in scope.regions() if region in rig.regions]


CHECK = Check("Bedrock model", openai_endpoint_models, bedrock_model)
