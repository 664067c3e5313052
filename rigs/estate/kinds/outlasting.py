"""What outlives ``cdk destroy`` and is never swept, listed for ``status`` only (so a sweep neither pays for
these calls nor counts a permission it lacks for them as a region it could not check): the log groups
SageMaker made for endpoints and the optional Hugging Face token secret. (The CDK bootstrap stack is seen
by the stacks' listing.)"""

from __future__ import annotations

from rigs import aws
from rigs.catalog.pricing import PriceError
from rigs.contract import HF_TOKEN_SECRET
from rigs.estate.kinds.base import Finder, Listing
from rigs.estate.resources import Outlasting, ours

ENDPOINT_LOG_PREFIX = "/aws/sagemaker/Endpoints/"


def endpoint_log_groups(finder: Finder) -> None:
    """The log groups SageMaker made for endpoints: of ours (still there) or of endpoints that are gone."""
    sagemaker = finder.clients("sagemaker", finder.region)
    live = {e["EndpointName"]: e["EndpointArn"] for e in aws.paginate(sagemaker, "list_endpoints", "Endpoints")}
    logs = finder.clients("logs", finder.region)
    for group in aws.paginate(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=ENDPOINT_LOG_PREFIX):
        name = group["logGroupName"]
        endpoint = name[len(ENDPOINT_LOG_PREFIX):]
        if endpoint in live:
            if not ours(aws.paginate(sagemaker, "list_tags", "Tags", ResourceArn=live[endpoint])):
                continue
            whose = f"endpoint {endpoint} of ours; stays after the endpoint is deleted"
        else:
            whose = "left by a deleted endpoint (SageMaker does not tag it: it may be another app's)"
        stored_gb = (group.get("storedBytes") or 0) / 1e9
        monthly, cost = None, "storage only"
        try:
            price = finder.prices.unit_price("cloudwatch-logs-storage", finder.region)
            monthly = price.monthly(stored_gb)
            cost = f"${monthly:.4f}/month: {stored_gb * 1000:.1f} MB at ${price.usd:g}/{price.unit}"
        except PriceError as exc:
            cost = f"storage only; price unknown: {exc}"
        finder.outlasting.append(Outlasting(
            "log-group", finder.region, name, monthly, f"{cost} ({whose})",
            f"`aws logs delete-log-group --log-group-name {name} --region {finder.region}`"))


def token_secret(finder: Finder) -> None:
    """The optional Hugging Face token secret: created by the user, read by rigs at boot, never deleted here."""
    secrets = finder.clients("secretsmanager", finder.region)
    try:
        aws.call(secrets.describe_secret, SecretId=HF_TOKEN_SECRET)
    except Exception as exc:  # noqa: BLE001 - absent is the usual case
        if aws.classify(exc).kind == aws.NOT_FOUND:
            return
        raise
    monthly, cost = None, "per secret per month"
    try:
        price = finder.prices.unit_price("secrets-manager-secret", finder.region)
        monthly, cost = price.monthly(), f"${price.usd:g}/month (Secrets Manager, per secret)"
    except PriceError as exc:
        cost = f"price unknown: {exc}"
    finder.outlasting.append(Outlasting(
        "secret", finder.region, HF_TOKEN_SECRET, monthly, cost,
        f"`aws secretsmanager delete-secret --secret-id {HF_TOKEN_SECRET} --region {finder.region}`"))


LISTINGS = (Listing("SageMaker endpoint log groups", endpoint_log_groups),
            Listing("the Hugging Face token secret", token_secret))
