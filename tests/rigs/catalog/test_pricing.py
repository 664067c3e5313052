"""Prices: the Pricing API through botocore's Stubber (moto has no Pricing), the offline file otherwise."""

from __future__ import annotations

import json
from datetime import date

import pytest
from botocore.stub import ANY, Stubber

from rigs.catalog import pricing
from rigs.catalog.model import load_catalog
from rigs.catalog.price_terms import PRICED_TIERS
from rigs.catalog.pricing import (OFFLINE_FILE, PRICING_API, PriceBook, PriceError, bedrock_token_prices, hourly_price,
                          parse_offline_prices)

from tests.rigs.awsfakes import StubSession

from tests.rigs.awsfakes import plain_client


def ec2_product(instance_type: str, location: str, usd: str) -> str:
    """A get_products PriceList entry in the shape AWS returns (trimmed)."""
    sku = "XYZSKU123"
    return json.dumps({
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {"instanceType": instance_type, "location": location, "operatingSystem": "Linux",
                           "tenancy": "Shared", "capacitystatus": "Used", "preInstalledSw": "NA",
                           "regionCode": "us-east-2", "servicecode": "AmazonEC2"},
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {
            "priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                "unit": "Hrs", "endRange": "Inf", "beginRange": "0",
                "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                "pricePerUnit": {"USD": usd}, "appliesTo": []}},
            "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": "JRTCKXETXF"}}},
        "version": "20261101000000", "publicationDate": "2026-11-01T00:00:00Z",
    })


def sagemaker_product(instance_type: str, component: str, usd: str) -> str:
    sku = f"SM{component.upper()}"
    return json.dumps({
        "product": {"productFamily": "ML Instance", "sku": sku,
                    "attributes": {"instanceName": instance_type, "component": component, "regionCode": "us-east-2",
                                   "location": "US East (Ohio)", "servicecode": "AmazonSageMaker"}},
        "terms": {"OnDemand": {f"{sku}.T": {"priceDimensions": {f"{sku}.T.R": {
            "unit": "Hrs", "pricePerUnit": {"USD": usd}, "description": "hosting"}}}}},
    })


def bedrock_product(model: str, inference_type: str, usd_per_1k: str, usagetype: str) -> str:
    sku = f"BR{abs(hash(usagetype)) % 10_000}"
    return json.dumps({
        "product": {"productFamily": "Amazon Bedrock", "sku": sku,
                    "attributes": {"model": model, "inferenceType": inference_type, "usagetype": usagetype,
                                   "regionCode": "us-east-1", "servicecode": "AmazonBedrock"}},
        "terms": {"OnDemand": {f"{sku}.T": {"priceDimensions": {f"{sku}.T.R": {
            "unit": "1K tokens", "pricePerUnit": {"USD": usd_per_1k}}}}}},
    })


@pytest.fixture
def pricing_stub():
    client = plain_client("pricing", "us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_ec2_price_from_the_pricing_api_with_the_documented_filters(pricing_stub):
    client, stubber = pricing_stub
    stubber.add_response(
        "get_products",
        {"PriceList": [ec2_product("g6.xlarge", "US East (Ohio)", "0.8048000000")], "FormatVersion": "aws_v1"},
        {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": [
            {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g6.xlarge"},
            {"Type": "TERM_MATCH", "Field": "location", "Value": "US East (Ohio)"},
            {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
            {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
            {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
            {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        ]},
    )
    price = hourly_price("g6", "us-east-2", session=StubSession({"pricing": client}))
    assert price.source == PRICING_API
    assert price.usd_per_hour == pytest.approx(0.8048)
    assert price.region == price.requested_region == "us-east-2"
    assert price.note == ""
    assert "pricing-api" in price.describe()


def test_sagemaker_price_picks_the_hosting_component(pricing_stub):
    client, stubber = pricing_stub
    stubber.add_response("get_products", {"PriceList": [
        sagemaker_product("ml.g6.xlarge", "Training", "1.0100"),
        sagemaker_product("ml.g6.xlarge", "Hosting", "1.1267"),
    ], "FormatVersion": "aws_v1"}, {"ServiceCode": "AmazonSageMaker", "Filters": ANY, "FormatVersion": "aws_v1"})
    price = hourly_price("sagemaker", "us-east-2", session=StubSession({"pricing": client}))
    assert (price.source, price.usd_per_hour) == (PRICING_API, pytest.approx(1.1267))


def test_bedrock_token_prices_from_the_api_normalised_per_million(pricing_stub):
    client, stubber = pricing_stub
    stubber.add_response("get_products", {"PriceList": [
        bedrock_product("Nova Micro", "Input tokens batch", "0.0000175", "USE1-NovaMicro-input-tokens-batch"),
        bedrock_product("Nova Micro", "Input tokens", "0.000035", "USE1-NovaMicro-input-tokens"),
        bedrock_product("Nova Micro", "Output tokens", "0.00014", "USE1-NovaMicro-output-tokens"),
        bedrock_product("Nova Lite", "Input tokens", "0.00006", "USE1-NovaLite-input-tokens"),
    ], "FormatVersion": "aws_v1"}, {"ServiceCode": "AmazonBedrock", "Filters": ANY, "FormatVersion": "aws_v1"})
    price = bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1", session=StubSession({"pricing": client}))
    assert price.source == PRICING_API
    assert price.usd_per_million_input == pytest.approx(0.035)
    assert price.usd_per_million_output == pytest.approx(0.14)
    assert price.cost(1_000_000, 500_000) == pytest.approx(0.035 + 0.07)


def test_api_failure_falls_back_to_the_offline_file_and_says_why(pricing_stub):
    client, stubber = pricing_stub
    stubber.add_client_error("get_products", service_error_code="AccessDeniedException",
                             service_message="not authorized", http_status_code=400)
    book = PriceBook(StubSession({"pricing": client}))
    price = book.hourly_price("inf2", "us-west-2")
    assert price.source == OFFLINE_FILE
    assert price.usd_per_hour == pytest.approx(0.7582)
    assert price.region == "us-east-1" and not price.exact_region
    assert "AccessDeniedException" in price.note and "us-east-1 price" in price.note
    # one failure is enough: the next lookup does not ask the API again (no stubbed response left)
    assert book.hourly_price("g5g", "us-east-1").source == OFFLINE_FILE


def test_api_without_a_matching_product_falls_back(pricing_stub):
    client, stubber = pricing_stub
    stubber.add_response("get_products", {"PriceList": [], "FormatVersion": "aws_v1"})
    price = hourly_price("trn1", "us-east-1", session=StubSession({"pricing": client}))
    assert price.source == OFFLINE_FILE and price.exact_region
    assert price.usd_per_hour == pytest.approx(1.3438)
    assert "no on-demand AmazonEC2 price" in price.note


def test_throttled_pricing_call_is_retried_not_fatal(pricing_stub, monkeypatch):
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    client, stubber = pricing_stub
    stubber.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    stubber.add_response("get_products", {"PriceList": [ec2_product("g6.xlarge", "US East (N. Virginia)", "0.8048")],
                                          "FormatVersion": "aws_v1"})
    price = hourly_price("g6", "us-east-1", session=StubSession({"pricing": client}))
    assert price.source == PRICING_API


def test_offline_prices_without_a_session():
    expected = {"g6": (0.8048, "us-east-1", date(2026, 10, 5)), "inf2": (0.7582, "us-east-1", date(2026, 10, 5)),
                "g5g": (0.556, "us-east-1", date(2026, 10, 5)), "trn1": (1.3438, "us-east-1", date(2026, 10, 5)),
                "sagemaker": (1.1267, "us-east-2", date(2026, 9, 25))}
    for rig, (usd, region, as_of) in expected.items():
        price = hourly_price(rig, region)
        assert (price.usd_per_hour, price.region, price.as_of, price.source) == (usd, region, as_of, OFFLINE_FILE)
        assert price.note == "no AWS session given"
    nova = bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1")
    assert (nova.usd_per_million_input, nova.usd_per_million_output, nova.source) == (0.035, 0.14, OFFLINE_FILE)
    assert "Bedrock pricing page" in nova.detail


def test_every_deployable_catalog_rig_has_an_offline_price():
    for rig in load_catalog().deployable():
        assert hourly_price(rig, rig.regions[0]).usd_per_hour > 0


def test_unknown_items_and_bedrock_by_the_hour_are_errors():
    with pytest.raises(PriceError, match="no price for p5e.48xlarge"):  # its price-list rows carry no on-demand price
        pricing.instance_hourly_price("p5e.48xlarge", "us-east-1")
    with pytest.raises(PriceError, match="billed per token"):
        hourly_price("bedrock", "us-east-1")
    with pytest.raises(KeyError, match="known rigs"):
        hourly_price("nope", "us-east-1")


def test_offline_file_validation_lists_every_problem():
    text = """
ec2_on_demand:
  - instance_type: g6.xlarge
    usd_per_hour: -1
    region: us-east-1
    as_of: 2026-10-05
    source: x
  - instance_type: g6.xlarge
    region: us-east-9
    usd_per_hour: 1
    as_of: 2026-10-05
    source: x
bedrock_on_demand:
  - model_id: m
    usd_per_million_input: 1
    region: us-east-1
    as_of: not-a-date
    source: x
surprise: {}
"""
    with pytest.raises(PriceError) as info:
        parse_offline_prices(text)
    message = str(info.value)
    for fragment in ("usd_per_hour must be a non-negative number", "us-east-9", "missing usd_per_million_output",
                     "surprise: unknown section"):
        assert fragment in message


def test_a_misspelt_key_in_an_offline_entry_fails_with_its_path():
    text = """
ec2_on_demand:
  - {instance_type: g6.xlarge, usd_per_hour: 0.8, region: us-east-1, as_of: 2026-10-05, source: x, regoin: us-east-2}
"""
    with pytest.raises(PriceError, match=r"^prices.yaml: ec2_on_demand\[0\].regoin: unknown key \(allowed: as_of, "
                                         r"instance_type, region, source, usd_per_hour\)$"):
        parse_offline_prices(text)


def test_a_bedrock_service_tier_is_priced_from_its_own_products(pricing_stub):
    """Standard is the price that names no tier; Flex and Priority are priced from the products that name theirs
    (the price list's naming of tiers is only confirmed against AWS: docs/provenance.md)."""
    client, stubber = pricing_stub
    products = {"PriceList": [
        bedrock_product("Nova Micro", "Input tokens flex", "0.0000175", "USE1-NovaMicro-input-tokens-flex"),
        bedrock_product("Nova Micro", "Output tokens flex", "0.00007", "USE1-NovaMicro-output-tokens-flex"),
        bedrock_product("Nova Micro", "Input tokens", "0.000035", "USE1-NovaMicro-input-tokens"),
        bedrock_product("Nova Micro", "Output tokens", "0.00014", "USE1-NovaMicro-output-tokens"),
        bedrock_product("Nova Micro", "Output tokens priority", "0.000175", "USE1-NovaMicro-output-tokens-priority"),
    ], "FormatVersion": "aws_v1"}
    for _ in range(2):
        stubber.add_response("get_products", products, {"ServiceCode": "AmazonBedrock", "Filters": ANY,
                                                        "FormatVersion": "aws_v1"})
    book = PriceBook(StubSession({"pricing": client}))
    standard = book.bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1")
    flex = book.bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1", "flex")
    assert (standard.service_tier, standard.usd_per_million_output) == ("standard", pytest.approx(0.14))
    assert (flex.service_tier, flex.usd_per_million_input, flex.usd_per_million_output) == \
        ("flex", pytest.approx(0.0175), pytest.approx(0.07))
    assert flex.model_dump()["service_tier"] == "flex" and "Flex tier" in flex.describe()


OFFLINE_TIERS = """
bedrock_on_demand:
  - {model_id: amazon.nova-micro-v1:0, usd_per_million_input: 0.035, usd_per_million_output: 0.14,
     region: us-east-1, as_of: 2026-11-29, source: the pricing page}
  - {model_id: amazon.nova-micro-v1:0, service_tier: flex, usd_per_million_input: 0.0175,
     usd_per_million_output: 0.07, region: us-east-1, as_of: 2026-11-29, source: "the pricing page, Flex"}
"""


def test_the_offline_file_prices_each_tier_it_has_and_names_the_one_it_lacks():
    offline = parse_offline_prices(OFFLINE_TIERS)
    assert pricing.offline_tiers("us.amazon.nova-micro-v1:0", offline) == ("standard", "flex")
    book = PriceBook(None, offline=offline)
    assert book.bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1", "flex").usd_per_million_output == 0.07
    assert book.bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1").usd_per_million_output == 0.14
    with pytest.raises(PriceError, match="no priority tier token price for us.amazon.nova-micro-v1:0"):
        book.bedrock_token_prices("us.amazon.nova-micro-v1:0", "us-east-1", "priority")
    with pytest.raises(PriceError, match=r"bedrock_on_demand\[0\].service_tier: must be one of standard, flex, "
                                         "priority"):
        parse_offline_prices(OFFLINE_TIERS.replace("{model_id", "{service_tier: reserved, model_id", 1))
    # the shipped file: Standard only, the tiers --bedrock-tier offers
    assert pricing.offline_tiers(load_catalog().get("bedrock").model_id) == PRICED_TIERS == ("standard",)
