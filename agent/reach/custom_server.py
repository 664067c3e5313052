"""Custom servers (a backend reached through a ``*_URL`` variable): what they serve, and which
deployed rig they hide.

``G6_URL`` may point at anything OpenAI-compatible (vLLM on a laptop, llama.cpp on a CPU, a proxy).
Such a backend is never taken for the rig the variable is named after: :func:`identify` asks the
server which model it serves (``GET /v1/models``) and labels it with that name; it is priced and
given a bandwidth ceiling only for an instance type the user states (``G6_INSTANCE_TYPE``), see
:func:`agent.backends.custom_backend`. A ``*_URL`` is never matched to a discovered rig by guesswork:
the rigs accept no inbound traffic, so such a URL is a port forward or another server, and only the
user can say which instance is behind it.

When discovery finds the rig of the same name deployed and running while its ``*_URL`` is set, the
rig is billing but not benchmarked: :func:`shadow_note` says so for ``--list`` and the run.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from rigs.catalog import model as catalog_model

from ..backends import Backend, model_name
from ..bench.results.constants import MODEL_NAME_METADATA
from .discovery import FoundRig
from .probe import describe_error

if TYPE_CHECKING:
    from rigs.catalog.model import Catalog

MODELS_TIMEOUT_S = 5.0
"""How long ``GET /v1/models`` may take (a server that answers chat answers this at once)."""


def served_models(base_url: str, timeout_s: float = MODELS_TIMEOUT_S) -> list[str]:
    """The model ids ``GET <base_url>/models`` lists (OpenAI's ``{"data": [{"id": ...}]}``).

    Raises:
        OSError, http.client.HTTPException: no answer; ValueError: not a model list.
    """
    request = urllib.request.Request(f"{base_url}/models", method="GET")
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (http(s) only)
        data = json.loads(response.read())
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        raise ValueError(f"not a model list: {str(data)[:120]}")
    return [str(m["id"]) for m in models if isinstance(m, dict) and m.get("id")]


def identify(backend: Backend, timeout_s: float = MODELS_TIMEOUT_S) -> Backend:
    """The custom ``backend`` labelled with the model its server reports (others unchanged).

    The model id sent in requests becomes the reported one unless ``<prefix>_MODEL`` was given;
    a server that does not answer keeps the stand-in id, and the label says the model is unknown. The catalog's name
    of that id, where it knows it, is kept as ``model_name`` (what the recommendation compares).
    """
    if not backend.custom or not backend.base_url:
        return backend
    meta = dict(backend.metadata)
    variable = meta.get("url_variable", "the *_URL variable")
    try:
        models = served_models(backend.base_url, timeout_s)
        reason = "" if models else "the list is empty"
    except (OSError, http.client.HTTPException, ValueError) as exc:
        models, reason = [], (f"HTTP {exc.code}" if isinstance(exc, urllib.error.HTTPError) else describe_error(exc))
    stated = meta.get("model_source", "").endswith("_MODEL")
    model_id = backend.model_id if stated or not models else models[0]
    if models:
        meta["served_models"] = ", ".join(models[:5]) + (f" (+{len(models) - 5} more)" if len(models) > 5 else "")
        if stated and backend.model_id not in models:
            meta["model_note"] = (f"{meta['model_source']}={backend.model_id} is not among the models the server "
                                  "reports")
        served = model_id if model_id in models else models[0]
        label = f"custom server at {variable} serving {served}"
    else:
        meta["served_models"] = f"not reported ({reason})"
        if not stated:
            meta["model_note"] = (f"the server did not report its model, so {backend.model_id} (the catalog's model "
                                  f"of {backend.name}) is sent; set {variable.removesuffix('_URL')}_MODEL")
        label = f"custom server at {variable} (model not reported)"
    if meta.get("instance_type_source"):
        label += f" on {meta['instance_type']} (stated)"
    meta.pop(MODEL_NAME_METADATA, None)
    meta.update(model_name(catalog_model.load_catalog().get(backend.name), model_id))
    return dataclasses.replace(backend, label=label, model_id=model_id, metadata=meta)


def shadow_note(backend: Backend, found: FoundRig, catalog: Catalog) -> str:
    """One line: ``backend``'s ``*_URL`` hides the deployed rig ``found``, which bills meanwhile."""
    from rigs.catalog.pricing import PriceBook, PriceError

    variable = backend.metadata.get("url_variable", "its *_URL variable")
    try:
        price = PriceBook(None).hourly_price(catalog.get(found.name), found.region)
        cost = f" at {price.describe()}"
    except PriceError:
        cost = ""
    where = ", ".join(x for x in (found.instance_id or found.outputs.endpoint_name, found.outputs.instance_type,
                                  found.region) if x)
    return (f"{variable} is benchmarked instead of the deployed rig {found.name} ({where}), which is running and "
            f"billing{cost} but not measured; unset {variable} to measure it, or stop it (python -m rigs sweep)")
