"""The SDK's HTTP clients of one process share one TLS context (made once in the warm
template for all its forks), unless the environment names certificates of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tiller.model.sdk_adapter import TLS_ENV, client_timeout, http_client, tls_context


def context_of(client: Any) -> Any:
    return client._transport._pool._ssl_context  # httpx2's transport, httpcore2's pool


async def test_the_clients_of_a_process_share_one_tls_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in TLS_ENV:
        monkeypatch.delenv(name, raising=False)
    first, second = http_client(client_timeout(5)), http_client(client_timeout(5))
    assert first is not None and second is not None
    assert context_of(first) is context_of(second) is tls_context()
    await first.aclose()
    await second.aclose()


@pytest.mark.parametrize("name", TLS_ENV)
def test_certificates_named_in_the_environment_get_the_sdks_own_client(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, "/etc/ssl/certs")
    assert http_client(client_timeout(5)) is None
