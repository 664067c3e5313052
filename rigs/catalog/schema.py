"""The JSON Schemas of ``rigs/catalog.yaml`` and ``rigs/prices.yaml``, generated from their models.

``python -m rigs.catalog.schema --write`` writes them beside the files (each file names its schema in a
``# yaml-language-server: $schema=`` line, so an editor checks it as it is typed);
``python -m rigs.catalog.schema --check`` (and a test) fails when a committed one is stale.
"""

from __future__ import annotations

import sys
from typing import Sequence

from kit.generated import Generated
import kit.generated as generated
from rigs.catalog.catalog import Catalog
from rigs.catalog.model import CATALOG_PATH
from rigs.catalog.prices import OfflinePrices
from rigs.catalog.pricing import PRICES_PATH

PROG = "python -m rigs.catalog.schema"
CATALOG_SCHEMA = CATALOG_PATH.with_name("catalog.schema.json")
PRICES_SCHEMA = PRICES_PATH.with_name("prices.schema.json")


def catalog_schema() -> str:
    return generated.json_schema(
        Catalog.model_json_schema(by_alias=True), "rigs/catalog.yaml",
        "Every backend the app can deploy or call: the four regions' networks and the rigs by name. Generated "
        f"from rigs/catalog/ ({PROG} --write); do not edit.")


def prices_schema() -> str:
    return generated.json_schema(
        OfflinePrices.model_json_schema(by_alias=True), "rigs/prices.yaml",
        "The dated offline prices, used when the Pricing API does not answer. Generated from "
        f"rigs/catalog/prices.py ({PROG} --write); do not edit.")


def files() -> list[Generated]:
    return [Generated(CATALOG_SCHEMA, catalog_schema), Generated(PRICES_SCHEMA, prices_schema)]


def main(argv: Sequence[str] | None = None) -> int:
    return generated.main(files(), PROG, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
