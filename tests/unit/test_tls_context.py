"""The SDK's HTTP clients of one process share one TLS context per certificate settings (made
once in the warm template for all its forks whose clients name the same certificates); a
client that names other certificates gets a context made in its own environment."""

from __future__ import annotations

from typing import Any

import pytest

from tiller.model.sdk_adapter import TLS_ENV, client_timeout, http_client, tls_settings

CERTS = "/etc/ssl/certs/ca-certificates.crt"


def context_of(client: Any) -> Any:
    return client._transport._pool._ssl_context  # httpx2's transport, httpcore2's pool


async def test_the_clients_of_a_process_share_one_tls_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in TLS_ENV:
        monkeypatch.delenv(name, raising=False)
    first, second = http_client(client_timeout(5)), http_client(client_timeout(5))
    assert context_of(first) is context_of(second)
    await first.aclose()
    await second.aclose()


@pytest.mark.parametrize("name", TLS_ENV)
async def test_certificates_named_in_the_environment_get_a_context_of_their_own(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for each in TLS_ENV:
        monkeypatch.delenv(each, raising=False)
    plain = http_client(client_timeout(5))
    monkeypatch.setenv(name, CERTS if name == "SSL_CERT_FILE" else "/etc/ssl/certs")
    assert tls_settings() != (None, None)
    named, again = http_client(client_timeout(5)), http_client(client_timeout(5))
    assert context_of(named) is not context_of(plain)
    assert context_of(named) is context_of(again)  # the same settings: the same context
    for client in (plain, named, again):
        await client.aclose()
