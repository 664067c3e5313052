"""Helpers for the provisioning tests: a session that hands out prepared (stubbed) clients."""

from __future__ import annotations

from typing import Any

import boto3


class StubSession:
    """Looks like a boto3 Session; returns a prepared client per service, else a real one.

    Real clients come from a plain session (the test environment's dummy credentials), so
    services moto covers can be mixed with stubbed ones.
    """

    def __init__(self, clients: dict[str, Any] | None = None, region_name: str = "us-east-1") -> None:
        self.clients = clients or {}
        self.region_name = region_name
        self._real = boto3.Session(region_name=region_name)

    def client(self, service: str, region_name: str | None = None, config: Any = None, **_: Any) -> Any:
        prepared = self.clients.get((service, region_name)) or self.clients.get(service)
        if prepared is not None:
            return prepared
        return self._real.client(service, region_name=region_name, config=config)

    def get_credentials(self) -> Any:
        return self._real.get_credentials()


def plain_client(service: str, region: str = "us-east-1") -> Any:
    return boto3.Session(region_name=region).client(service, region_name=region)
