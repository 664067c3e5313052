"""The context keys this app knows, each declared once: its pattern, what it does, and whether the project's own
commands set it.

``{rig}`` in a pattern stands for a deployable rig, ``{region}`` for one of the four regions and ``{stack}`` for a
stack of the app. ``app.py`` reads the values by these declarations, and a key the app does not know is refused in
one line that names the known ones (:func:`unknown_keys`), while the CDK's own keys pass (:func:`cdk_own`). The
model a rig serves, the size it runs on and the context it holds (:data:`MODEL_KEYS`) are read by
``rigs/deploy/model_options.py``; the per-deploy choices by ``rigs/deploy/options.py``; the recorded region and
zones are written by ``rigs/placement/placement.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from rigs.contract import REGIONS

class OptionsError(ValueError):
    """Context values that cannot be used. ``problems`` lists each with its context key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


MAX_LIFETIME_HOURS = 168

MAX_ZONES = 6
"""The most zones a base network spans (``-c az_count.<region>``, ``-c zones.<region>``)."""


@dataclass(frozen=True, slots=True)
class ContextKey:
    """One context key of this app: its pattern, what it does, and whether the project's own commands set it."""

    pattern: str
    """The key; ``{rig}`` stands for a deployable rig of the catalog, ``{region}`` for one of the four regions,
    ``{stack}`` for a stack of the app."""
    help: str
    internal: bool = False
    """Set by ``python -m rigs up``, ``./scripts/cdk`` or ``app.py`` itself, not given by hand."""

    def key(self, **names: str) -> str:
        """The key for these names: ``REGION.key(rig="g6")`` is ``region.g6``."""
        return self.pattern.format(**names)

    def matches(self, key: str, names: Mapping[str, Sequence[str]]) -> bool:
        """Whether ``key`` is this key for one of ``names`` (placeholder -> the names it stands for; ``{stack}``
        stands for any stack name)."""
        regex = []
        for i, part in enumerate(re.split(r"\{(\w+)\}", self.pattern)):
            if i % 2 == 0:
                regex.append(re.escape(part))
            elif part == "stack":
                regex.append("[A-Za-z][A-Za-z0-9-]*")
            else:
                regex.append(f"(?:{'|'.join(map(re.escape, names[part]))})")
        return re.fullmatch("".join(regex), key) is not None


REGION = ContextKey("region.{rig}", "a region from the rig's catalog list (default: the first)")
ZONES = ContextKey("zones.{rig}", "comma-separated zones of that region the rig may launch in")
VARIANT = ContextKey("{rig}_variant", "a catalog variant of the rig, e.g. inf2_variant=tp2, g6_variant=big")
MAX_HOURS = ContextKey("max_hours", f"lifetime in hours of every rig, above 0 and at most {MAX_LIFETIME_HOURS}")
RIG_MAX_HOURS = ContextKey("max_hours.{rig}", "lifetime in hours of one rig (beats max_hours)")
IMAGE = ContextKey("image.{rig}", "a pinned server image to run instead of the catalog's (EC2 rigs)")
AMI = ContextKey("ami.{rig}", "an AMI id to boot instead of the catalog's SSM parameter (EC2 rigs)")
REGION_ZONES = ContextKey("zones.{region}", "the zones the region's base network uses, named (default: chosen at "
                          "deploy time)")
AZ_COUNT = ContextKey("az_count.{region}", f"how many zones the region's base network spans, 1 to {MAX_ZONES}")
RECORDED_REGION = ContextKey("recorded_region.{rig}", "where python -m rigs up last brought the rig up (the "
                             "placement file)", internal=True)
RECORDED_ZONES = ContextKey("recorded_zones.{rig}", "the zones it came up in there", internal=True)
DEPLOYED_REGIONS = ContextKey("deployed_regions.{stack}", "the regions CloudFormation shows the stack in",
                              internal=True)
LOOKED_UP = ContextKey("deployed_regions_complete", "every region answered where the stacks are", internal=True)
DESTROYING = ContextKey("aws-inference:destroying", "./scripts/cdk destroy: a stack found nowhere is left out",
                        internal=True)
RIG_MODEL = ContextKey("model.{rig}", "a Hugging Face model id for g6, g5g or sagemaker (the catalog's models section, "
                       "or with model_config.<rig>)")
MODEL = ContextKey("model", "a Hugging Face model id for every rig that serves any model")
MODEL_CONFIG = ContextKey("model_config.{rig}", "a local config.json of a model the catalog does not list (read at "
                          "synth, never fetched)")
INSTANCE_TYPE = ContextKey("instance_type.{rig}", "the instance type to run on instead of the one sized to fit")
HF_TOKEN_PARAMETER = ContextKey("hf_token_parameter", "an SSM SecureString parameter with the Hugging Face token of a "
                                "gated model (EC2 rigs)")
RIG_MAX_MODEL_LEN = ContextKey("max_model_len.{rig}", "the tokens one sequence may hold (prompt and output): the rig "
                               "serves this or the model's longest context, whichever is shorter, sized to fit")
MAX_MODEL_LEN = ContextKey("max_model_len", "the same for every rig that serves any model (beaten by "
                           "max_model_len.<rig>)")
MODEL_KEYS = (RIG_MODEL, MODEL, MODEL_CONFIG, INSTANCE_TYPE, HF_TOKEN_PARAMETER, RIG_MAX_MODEL_LEN, MAX_MODEL_LEN)
"""The model a rig serves and the size it runs on: read by ``rigs/deploy/model_options.py``."""

CONTEXT_KEYS: tuple[ContextKey, ...] = (REGION, ZONES, VARIANT, MAX_HOURS, RIG_MAX_HOURS, IMAGE, AMI, REGION_ZONES,
                                        AZ_COUNT, *MODEL_KEYS, RECORDED_REGION, RECORDED_ZONES, DEPLOYED_REGIONS,
                                        LOOKED_UP, DESTROYING)
"""Every context key the app reads (docs/rigs.md lists those given by hand)."""

CDK_KEY_PREFIXES = ("@aws-cdk", "aws:cdk:", "aws-cdk:", "cdk-", "cdk:")
"""The CDK's own context keys: its feature flags (``@aws-cdk/...``), the CLI's settings (``aws:cdk:...``)."""
CDK_KEYS = frozenset({"acknowledged-issue-numbers", "cli-telemetry"})


def cdk_own(key: str) -> bool:
    """Whether ``key`` is the CDK's own: a feature flag, a CLI setting, or a context lookup's cached answer
    (``availability-zones:account=...:region=...`` in ``cdk.context.json``)."""
    return key.startswith(CDK_KEY_PREFIXES) or key in CDK_KEYS or ":account=" in key


def unknown_keys(keys: Iterable[str], rigs: Sequence[str], also: Iterable[str] = ()) -> OptionsError | None:
    """The error naming every key of ``keys`` this app does not know (None: all known). ``rigs``: the names
    ``{rig}`` stands for; ``also``: keys that pass too (those ``cdk.json`` sets); the CDK's own keys pass."""
    names = {"rig": tuple(rigs), "region": REGIONS}
    passed = set(also)
    unknown = sorted(k for k in keys if k not in passed and not cdk_own(k)
                     and not any(c.matches(k, names) for c in CONTEXT_KEYS))
    if not unknown:
        return None
    known = ", ".join(c.pattern.replace("{", "<").replace("}", ">") for c in CONTEXT_KEYS if not c.internal)
    return OptionsError([f"-c {', '.join(unknown)}: not a context key of this app; its keys are {known} (<rig>: "
                         f"{', '.join(rigs)}; <region>: {', '.join(REGIONS)}), and the CDK's own (@aws-cdk/..., "
                         "aws:cdk:..., cdk.json's) pass"])
