"""Canned AWS answers for calls moto does not cover, matched by operation and parameters.

botocore's Stubber answers from a queue, in call order; ``doctor`` makes its calls in
parallel, so the order is not fixed. This uses the hook Stubber itself uses (a
``before-call`` handler that returns the HTTP response and the parsed answer) but picks
the answer by the call's parameters. A call with no canned answer goes on to the real
endpoint (moto's server), so moto and canned answers mix per call.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.awsrequest import AWSResponse


class CannedAnswers:
    def __init__(self) -> None:
        self._answers: list[tuple[str, str, str | None, dict[str, Any], tuple[AWSResponse, dict[str, Any]]]] = []
        self.answered: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def add(self, service: str, operation: str, params: dict[str, Any], response: dict[str, Any],
            region: str | None = None) -> None:
        """Answer ``operation`` (botocore's name, e.g. ``GetServiceQuota``) when the call has ``params``
        (and is made in ``region``, when given)."""
        parsed = {"ResponseMetadata": {"HTTPStatusCode": 200}, **response}
        self._answers.append((service, operation, region, params, (AWSResponse(None, 200, {}, None), parsed)))

    def add_error(self, service: str, operation: str, params: dict[str, Any], code: str, message: str = "",
                  region: str | None = None) -> None:
        parsed = {"ResponseMetadata": {"HTTPStatusCode": 400}, "Error": {"Code": code, "Message": message}}
        self._answers.append((service, operation, region, params, (AWSResponse(None, 400, {}, None), parsed)))

    def attach(self, client: Any) -> Any:
        """Answer ``client``'s calls that have a canned answer (the call's parameters are kept in its context)."""
        service = client.meta.service_model.service_name
        event = client.meta.service_model.service_id.hyphenize()

        def keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            context["canned_params"] = dict(params)

        def answer(model: Any, context: dict[str, Any], **_: Any) -> Any:
            return self._answer(service, model.name, client.meta.region_name, context.get("canned_params", {}))

        client.meta.events.register(f"before-parameter-build.{event}", keep_params)
        client.meta.events.register(f"before-call.{event}", answer)
        return client

    def _answer(self, service: str, operation: str, region: str, params: dict[str, Any]) -> Any:
        for known_service, known_operation, known_region, wanted, response in self._answers:
            if (known_service, known_operation) == (service, operation) and known_region in (None, region) and all(
                    params.get(key) == value for key, value in wanted.items()):
                with self._lock:
                    self.answered.append((service, operation))
                return response
        return None
