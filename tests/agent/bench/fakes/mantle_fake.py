"""Bedrock's OpenAI-compatible endpoint as AWS describes its routes: a model is served under one path prefix only
(``/v1`` or ``/openai/v1``), and a request under the other is refused with "model `<model-id>` isn't supported on this
route" (docs.aws.amazon.com bedrock/latest/userguide/inference-responses-api.html). Gemma 4 E2B's is ``/openai/v1``
(its model card)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from rigs.aws import other_route

from tests.agent.bench.fakes.openai_fake import FakeOpenAI, Policy


class MantleFake(FakeOpenAI):
    """:class:`FakeOpenAI` serving ``model`` under ``route`` only: its chat and ``GET <route>/models``; anything under
    the other route is refused with AWS's wording (HTTP 400, an OpenAI-shaped error) and kept in ``refused``."""

    def __init__(self, policy: Policy, model: str = "google.gemma-4-e2b", route: str = "/openai/v1") -> None:
        listed = {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "system"}]}
        super().__init__(policy, pages={f"{route}/models": listed}, route=route)
        self.model = model
        self.refused: list[str] = []

    async def refuse(self, request: web.Request) -> web.Response:
        body = await self._keep(request)
        self.refused.append(request.path)
        try:
            model = json.loads(body).get("model") or self.model
        except ValueError:
            model = self.model
        error: dict[str, Any] = {"message": f"model `{model}` isn't supported on this route",
                                 "type": "invalid_request_error", "param": None, "code": None}
        return web.json_response({"error": error}, status=400)

    def add_routes(self, app: web.Application) -> None:
        wrong = other_route(self.route)
        app.router.add_route("*", wrong + "/{tail:.*}", self.refuse)
        super().add_routes(app)
