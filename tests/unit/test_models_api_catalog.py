"""The fake Messages API knows the current catalog (Fable/Mythos 5.2, xhigh, thinking off per
effort) and lists limits in /v1/models as the real one does; an unknown configured model takes
its limits from that list, and until then a notice says what is assumed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anthropic
import pytest

import fakeapi
from fakeapi import FakeMessagesAPI, _model_info, validate_messages_request
from tiller.core.config import AnthropicSettings, Config, parse_config
from tiller.model.anthropic_provider import model_info
from tiller.model.provider import ModelInfo
from tiller.runtime import Runtime


def body(model: str, thinking: dict[str, Any] | None, effort: str | None) -> dict[str, Any]:
    sent: dict[str, Any] = {
        "model": model,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hi"}],
    }
    if thinking is not None:
        sent["thinking"] = thinking
    if effort is not None:
        sent["output_config"] = {"effort": effort}
    return sent


ADAPTIVE = {"type": "adaptive"}
OFF = {"type": "disabled"}


@pytest.mark.parametrize("model", ["claude-fable-5-2", "claude-mythos-5-2", "claude-sonnet-5-5"])
def test_the_fake_takes_the_new_models_at_xhigh(model: str) -> None:
    assert validate_messages_request(body(model, ADAPTIVE, "xhigh")) is None


def test_the_fake_refuses_xhigh_on_the_4_6_models() -> None:
    problem = validate_messages_request(body("claude-sonnet-4-6", ADAPTIVE, "xhigh"))
    assert problem is not None and "xhigh" in problem
    assert validate_messages_request(body("claude-sonnet-4-6", ADAPTIVE, "max")) is None


@pytest.mark.parametrize("model", ["claude-opus-5", "claude-haiku-5-5"])
def test_the_fake_refuses_thinking_off_above_high(model: str) -> None:
    assert validate_messages_request(body(model, OFF, "high")) is None
    for effort in ("xhigh", "max"):
        problem = validate_messages_request(body(model, OFF, effort))
        assert problem is not None and "disabled" in problem


def test_models_lists_limits_and_effort_levels_like_the_api() -> None:
    info = _model_info("claude-fable-5-2")
    assert (info["max_input_tokens"], info["max_tokens"]) == (1_000_000, 128_000)
    assert info["capabilities"]["effort"]["xhigh"] == {"supported": True}
    older = _model_info("claude-sonnet-4-6")
    assert older["capabilities"]["effort"]["xhigh"] == {"supported": False}
    assert _model_info("my-proxy-model")["max_input_tokens"] is None
    # the SDK reads the entry, and the provider maps its limits into the catalog's terms
    parsed = model_info(anthropic.types.ModelInfo.construct(**info))
    assert (parsed.context_window, parsed.max_output, parsed.thinking) == (
        1_000_000,
        128_000,
        "adaptive",
    )


def with_api(config: Config, api: FakeMessagesAPI) -> Config:
    provider = AnthropicSettings(base_url=api.base_url, api_key="k")
    return dataclasses.replace(config, provider=provider)


@pytest.fixture
def opus_6(monkeypatch: pytest.MonkeyPatch) -> str:
    """A model Tiller's catalog does not know but the API (the fake) does, with its limits."""
    spec = fakeapi.ModelSpec("claude-opus-6", 2_000_000, 256_000, "adaptive", "always_on", False)
    monkeypatch.setitem(fakeapi.MODELS, spec.id, spec)
    return spec.id


async def test_an_unknown_configured_model_takes_its_limits_from_the_api(
    opus_6: str, tmp_path: Path
) -> None:
    async with FakeMessagesAPI(api_key="k", models=(opus_6, "claude-sonnet-5-5")) as api:
        config = parse_config({"model": opus_6, "dataDir": str(tmp_path)})
        config = with_api(config, api)
        runtime = Runtime(config)
        notice = runtime.model_notice()
        assert notice is not None
        assert "200,000-token window" in notice and "Asking the API's model list" in notice
        assert runtime._listing is not None
        await runtime._listing
        spec = runtime.provider.spec(opus_6)
        assert (spec.context_window, spec.max_output, spec.source) == (2_000_000, 256_000, "api")
        assert runtime.model_notice() is None  # nothing assumed any more


async def test_a_model_the_api_gives_no_limits_for_keeps_its_notice(tmp_path: Path) -> None:
    async with FakeMessagesAPI(api_key="k", models=("my-proxy-model",)) as api:
        config = parse_config({"model": "my-proxy-model", "dataDir": str(tmp_path)})
        config = with_api(config, api)
        runtime = Runtime(config)
        assert runtime.model_notice() is not None
        assert runtime._listing is not None
        await runtime._listing
        after = runtime.model_notice()
        assert after is not None and "200,000-token window" in after
        assert "Asking" not in after  # asked once


def test_a_catalog_model_has_no_notice_and_lists_nothing(tmp_path: Path) -> None:
    runtime = Runtime(parse_config({"dataDir": str(tmp_path)}))
    assert runtime.model_notice() is None and runtime._listing is None


def test_model_info_type_is_the_catalogs() -> None:
    assert ModelInfo("x").context_window is None
