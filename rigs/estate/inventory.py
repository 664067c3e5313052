"""Everything of ours that exists now: found by the ``ManagedBy=aws-inference`` tag, never by local state.

One :class:`~rigs.estate.resources.Resource` per thing found, with what it costs per hour while it exists,
listed by the table of resource kinds (:mod:`rigs.estate.kinds`). The ``status`` command prints this;
``sweep`` deletes from it. A resource without our tag is never listed (and so never touched). Where a
service cannot be listed (no permission, an API the endpoint does not implement) the inventory says so in
``problems`` instead of pretending the region is clean.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from rigs import aws
from rigs.catalog.pricing import PriceBook
from rigs.contract import REGIONS
from rigs.estate import kinds
from rigs.estate.kinds.base import REGIONAL, Finder, Listing
from rigs.estate.resources import ENDPOINT, ENDPOINT_CONFIG, GLOBAL, MODEL, STACK, Inventory, Resource


def discover(session: Any, regions: Sequence[str] = REGIONS, prices: PriceBook | None = None,
             include_iam: bool = True, clients: aws.Clients | None = None, outlasting: bool = False) -> Inventory:
    """Everything tagged ours in ``regions`` (in parallel), plus our IAM roles and profiles; with
    ``outlasting``, also what outlives ``cdk destroy`` (:data:`rigs.estate.kinds.OUTLASTING`)."""
    clients = clients or aws.Clients(session)
    prices = prices or PriceBook(session)
    regional = kinds.listings(REGIONAL) + (kinds.OUTLASTING if outlasting else ())

    def find(region: str, listings: Sequence[Listing]) -> Finder:
        finder = Finder(clients, region, prices)
        for listing in listings:
            finder.run(listing)
        return finder

    with ThreadPoolExecutor(max_workers=max(1, len(regions)) + 1) as pool:
        everywhere = pool.submit(find, GLOBAL, kinds.listings(GLOBAL)) if include_iam else None
        finders = list(pool.map(lambda region: find(region, regional), regions))
        if everywhere is not None:
            finders.append(everywhere.result())
    resources = [r for f in finders for r in f.found]
    order = {kind.name: index for index, kind in enumerate(kinds.TABLE)}
    region_order = {region: index for index, region in enumerate((*REGIONS, GLOBAL))}
    resources.sort(key=lambda r: (region_order.get(r.region, 99), order.get(r.kind, 99), r.name or r.id))
    return Inventory(tuple(resources), tuple(p for f in finders for p in f.problems), tuple(regions),
                     tuple(n for f in finders for n in f.notes), tuple(o for f in finders for o in f.outlasting))


# --- rendering ------------------------------------------------------------------------


def render(inventory: Inventory, title: str, everything: bool = False) -> Any:
    """A rich Table. By default: stacks, whatever bills, and resources no stack of ours manages;
    the rest is counted on its stack's row. ``everything`` lists every resource."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, header_style="bold")
    for column in ("Region", "Kind", "Name / id", "State", "Rig", "$/h", "Detail"):
        table.add_column(column, overflow="fold")
    managed: dict[tuple[str, str], list[Resource]] = {}
    shown: list[Resource] = []
    kept = 0
    for resource in inventory.resources:
        owner = inventory.stack_of(resource) if resource.kind != STACK else None
        if everything or resource.kind == STACK or resource.billing or (owner is None
                                                                        and not resource.kept_by_default):
            shown.append(resource)
        elif owner is None:
            kept += 1
        else:
            region = resource.region if resource.region != GLOBAL else next(
                (r.region for r in inventory.resources if r.kind == STACK and r.id == owner), GLOBAL)
            managed.setdefault((region, owner), []).append(resource)
    for resource in shown:
        price = f"{resource.hourly_usd:.4f}" if resource.hourly_usd else "?" if resource.billing else "-"
        name = resource.name or resource.id
        if resource.name and resource.name != resource.id and resource.kind not in (STACK, ENDPOINT, MODEL,
                                                                                    ENDPOINT_CONFIG):
            name = f"{resource.name} ({resource.id})"
        detail = resource.detail
        if resource.price_note and resource.billing:
            detail = f"{detail}; {resource.price_note}" if detail else resource.price_note
        if resource.kind == STACK and (resource.region, resource.id) in managed:
            counts: dict[str, int] = {}
            for member in managed[(resource.region, resource.id)]:
                counts[member.kind] = counts.get(member.kind, 0) + 1
            summary = "also manages " + ", ".join(f"{n} {kind}" for kind, n in counts.items())
            detail = f"{detail}; {summary}" if detail else summary
        table.add_row(*(escape(cell) for cell in (resource.region, resource.kind, name, resource.state,
                                                   resource.rig or "", price, detail)))
    if kept:
        table.caption = (f"plus {kept} network and IAM resource(s) kept between runs (security groups, subnets, "
                         "VPCs, roles, instance profiles); --all-resources lists them")
    return table


def render_outlasting(inventory: Inventory) -> Any:
    """A rich Table of what outlives ``cdk destroy`` and the sweep, with its cost and how to remove it."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Outlives cdk destroy and the sweep (never deleted by this project)", header_style="bold")
    for column in ("Region", "Kind", "Name", "Cost", "To remove"):
        table.add_column(column, overflow="fold")
    for item in inventory.outlasting:
        table.add_row(*(escape(cell) for cell in (item.region, item.kind, item.name, item.cost, item.remove)))
    return table
