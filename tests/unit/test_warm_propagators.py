"""The trace propagators of a forked server (``tiller.warm.template``): the template loads
``opentelemetry.propagate`` as its own environment names them (``OTEL_PROPAGATORS``), so
that a fork's first model request does not; a fork whose client names others makes its own
from the client's environment, as a spawned server would."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from anthropic._tracing import trace_context_injector

from tiller.warm.template import PROPAGATORS, forget_propagators, propagators_as_the_client_names


@pytest.fixture(autouse=True)
def loaded_afresh() -> Iterator[None]:
    """The module is loaded again by the next user, from the environment it then has."""
    yield
    forget_propagators()


def headers_injected() -> set[str]:
    assert trace_context_injector() is not None
    from opentelemetry.propagate import get_global_textmap

    return set(get_global_textmap().fields)


def test_a_client_naming_other_propagators_gets_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROPAGATORS, raising=False)
    propagators_as_the_client_names("as the last test left it")  # the default, loaded afresh
    assert headers_injected() == {"traceparent", "tracestate", "baggage"}  # the template's

    monkeypatch.setenv(PROPAGATORS, "none")  # the fork's environment is now the client's
    propagators_as_the_client_names(None)
    assert headers_injected() == set()


def test_a_client_naming_the_same_keeps_the_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROPAGATORS, "baggage")
    propagators_as_the_client_names("as the last test left it")
    assert headers_injected() == {"baggage"}
    loaded = sys.modules["opentelemetry.propagate"]

    propagators_as_the_client_names("baggage")
    assert headers_injected() == {"baggage"}
    assert sys.modules["opentelemetry.propagate"] is loaded
