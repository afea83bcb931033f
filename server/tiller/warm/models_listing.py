"""One ``GET /v1/models`` through the SDK in the warm template, answered in process.

The SDK builds what it parses a listing into on first use: the page class
(``AsyncPage[ModelInfo]``), the models' schemas and its cached type adapters. A fork made
before any listing built them again, ~20 ms of CPU at its first listing, and a server lists
the API's models in the background whenever its model is not in the catalog
(``Runtime.model_notice``) and for every model picker. Run here once, they are built in the
template and every fork shares them.

No socket is opened: the client's transport is httpx's ``MockTransport``, which answers
with a page shaped as the Models API's (docs: platform.claude.com/docs/en/api/models/list,
``ModelInfo`` with every ``capabilities`` object, so that each nested model is built).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx2

_SUPPORTED = {"supported": True}
_MODEL: dict[str, Any] = {
    "type": "model",
    "id": "claude-warm-up",
    "display_name": "Warm-up",
    "created_at": "2026-01-01T00:00:00Z",
    "lifecycle": "active",
    "deprecated_at": None,
    "retires_at": None,
    "line": None,
    "max_input_tokens": 1_000_000,
    "max_tokens": 128_000,
    "capabilities": {
        **dict.fromkeys(
            ("batch", "citations", "code_execution", "image_input", "pdf_input"), _SUPPORTED
        ),
        "structured_outputs": _SUPPORTED,
        "context_management": _SUPPORTED,
        "effort": {
            "supported": True,
            **dict.fromkeys(("low", "medium", "high", "xhigh", "max"), _SUPPORTED),
        },
        "server_tools": {"supported": True, "code_execution": _SUPPORTED, "web_search": _SUPPORTED},
        "thinking": {
            "supported": True,
            "types": dict.fromkeys(
                ("adaptive", "enabled", "disabled", "between_tools"), _SUPPORTED
            ),
        },
    },
}
PAGE = {"data": [_MODEL], "has_more": False, "first_id": _MODEL["id"], "last_id": _MODEL["id"]}

# The page class the listing made: pydantic keeps parametrized generics weakly, and the
# template's collection before it freezes its heap would drop it.
_kept: list[type[object]] = []


def warm_models_listing() -> None:
    """List the canned page once, on a loop of its own (closed after: the template forks a
    single-threaded process)."""
    asyncio.run(_list_once())


async def _list_once() -> None:
    transport = httpx2.MockTransport(lambda _request: httpx2.Response(200, json=PAGE))
    async with httpx2.AsyncClient(transport=transport) as http:
        client = anthropic.AsyncAnthropic(
            api_key="warm-up", base_url="http://models.invalid", http_client=http, max_retries=0
        )
        page = await client.models.list(limit=100)
        _kept.append(type(page))
