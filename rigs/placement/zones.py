"""Which zones a region's base network uses: one definition for the doctor and the deploy-time handler.

Inlined into the UsableZones Lambda (stacks/parts/inline_function.py), so: standard library only,
no __future__ import.
"""


def usable_zones(zones):
    """The zones available to the account (standard, available, opted in) of DescribeAvailabilityZones'."""
    return sorted(z["ZoneName"] for z in zones if z.get("State") == "available"
                  and z.get("ZoneType", "availability-zone") == "availability-zone"
                  and z.get("OptInStatus", "opt-in-not-required") != "not-opted-in")


def offer_counts(zones, offerings):
    """Usable zone -> how many of the types asked about it offers (DescribeInstanceTypeOfferings' list)."""
    counts = dict.fromkeys(usable_zones(zones), 0)
    for offer in offerings:
        if offer["Location"] in counts:
            counts[offer["Location"]] += 1
    return counts


def fill(zones, slots):
    """One zone per slot, the zones repeated in order when fewer (a second subnet in a zone is free)."""
    return tuple(zones[index % len(zones)] for index in range(slots)) if zones else ()


def choose_zones(counts, slots):
    """The ``slots`` zones offering the most types (one offering none never), in name order, repeated when
    fewer qualify; () when none does."""
    ranked = sorted((z for z in counts if counts[z]), key=lambda z: (-counts[z], z))
    return fill(sorted(ranked[:slots]), slots)
