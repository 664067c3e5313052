"""SageMaker endpoints of ours, their endpoint configs and models: one listing for the three."""

from __future__ import annotations

from typing import Any

from rigs import aws
from rigs.estate import resources
from rigs.estate.kinds.base import Deletion, Finder, Kind, Listing, Price
from rigs.estate.resources import Resource, ours


def _variants(sagemaker: Any, described: dict[str, Any]) -> list[tuple[int, str | None]]:
    """(instances now, instance type) of each production variant; the type from its config when the endpoint
    does not say (None: unknown; ``serverless``)."""
    variants = []
    for variant in described.get("ProductionVariants", []) or []:
        count = variant.get("CurrentInstanceCount") or 0
        instance_type = variant.get("InstanceType") or (variant.get("CurrentServerlessConfig") and "serverless")
        if not instance_type:
            try:
                config = aws.call(sagemaker.describe_endpoint_config,
                                  EndpointConfigName=described["EndpointConfigName"])
                instance_type = next((v.get("InstanceType") for v in config.get("ProductionVariants", [])
                                      if v.get("VariantName") == variant.get("VariantName")), None)
            except Exception:  # noqa: BLE001 - price stays unknown
                instance_type = None
        variants.append((count, instance_type))
    return variants


def _price_endpoint(finder: Finder, endpoint: tuple[str, list[tuple[int, str | None]]]) -> Price:
    """Its instances now; one still being created bills from the moment its instance is placed."""
    status, variants = endpoint
    hourly, notes = 0.0, []
    for count, instance_type in variants:
        if instance_type and instance_type != "serverless" and count:
            price, note = finder.price_instance(instance_type)
            hourly += price * count
            notes.append(note)
    if status in ("Creating", "Updating") and not hourly:
        notes.append("bills from the moment its instance is placed")
    return hourly, "; ".join(notes)


def _list(finder: Finder) -> None:
    sagemaker = finder.clients("sagemaker", finder.region)

    def tags_of(arn: str) -> list[dict]:
        return aws.paginate(sagemaker, "list_tags", "Tags", ResourceArn=arn)

    for endpoint in aws.paginate(sagemaker, "list_endpoints", "Endpoints"):
        tags = tags_of(endpoint["EndpointArn"])
        if not ours(tags):
            continue
        name = endpoint["EndpointName"]
        described = aws.call(sagemaker.describe_endpoint, EndpointName=name)
        status = described.get("EndpointStatus", "")
        variants = _variants(sagemaker, described)
        hourly, note = ENDPOINT.price(finder, (status, variants))
        types = [f"{count}x {kind}" for count, kind in variants if kind and kind != "serverless"]
        finder.add(ENDPOINT, name, tags, name=name, state=status, hourly_usd=hourly, price_note=note,
                   detail=", ".join(types) or "", extra={"config": described.get("EndpointConfigName", ""),
                                                         "created": str(described.get("CreationTime", "")),
                                                         "failure": described.get("FailureReason", "")})
    for config in aws.paginate(sagemaker, "list_endpoint_configs", "EndpointConfigs"):
        tags = tags_of(config["EndpointConfigArn"])
        if ours(tags):
            finder.add(ENDPOINT_CONFIG, config["EndpointConfigName"], tags, name=config["EndpointConfigName"])
    for model in aws.paginate(sagemaker, "list_models", "Models"):
        tags = tags_of(model["ModelArn"])
        if ours(tags):
            finder.add(MODEL, model["ModelName"], tags, name=model["ModelName"])


LISTING = Listing("SageMaker endpoints, configs and models", _list)


def _delete_endpoint(deletion: Deletion, endpoint: Resource) -> None:
    deletion.client("sagemaker", endpoint).delete_endpoint(EndpointName=endpoint.name)


def _wait_endpoint(deletion: Deletion, endpoint: Resource) -> None:
    deletion.waiter(deletion.client("sagemaker", endpoint), "endpoint_deleted", EndpointName=endpoint.name)


def _delete_config(deletion: Deletion, config: Resource) -> None:
    deletion.client("sagemaker", config).delete_endpoint_config(EndpointConfigName=config.name)


def _delete_model(deletion: Deletion, model: Resource) -> None:
    deletion.client("sagemaker", model).delete_model(ModelName=model.name)


ENDPOINT = Kind(resources.ENDPOINT, LISTING, price=_price_endpoint, delete=_delete_endpoint, wait=_wait_endpoint)
ENDPOINT_CONFIG = Kind(resources.ENDPOINT_CONFIG, LISTING, delete=_delete_config)
MODEL = Kind(resources.MODEL, LISTING, delete=_delete_model)
