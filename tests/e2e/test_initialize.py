"""initializationOptions are validated at the edge: a clear error that names the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from harness import start_tiller, stop_tiller


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"permissionMode": "yolo"}, "permissionMode"),
        ({"toolBudget": "many"}, "toolBudget"),
        ({"maxTokens": 0}, "maxTokens"),
        ({"thinking": {"enabled": "yes"}}, "thinking"),
        ({"provider": {"kind": "openai"}}, "provider.kind"),
        ({"provider": {"kind": "scripted", "script": "/no/such/file.json"}}, "provider.script"),
    ],
)
async def test_wrong_initialization_option_is_an_initialize_error_naming_the_key(
    tmp_path: Path, options: dict[str, Any], key: str
) -> None:
    with pytest.raises(JsonRpcException) as caught:
        tiller = await start_tiller(tmp_path, tmp_path / "data", options)
        await stop_tiller(tiller)
    assert f"initializationOptions.{key}" in str(caught.value)


async def test_unknown_option_is_ignored_and_the_demo_script_plays_offline(tmp_path: Path) -> None:
    tiller = await start_tiller(
        tmp_path,
        tmp_path / "data",
        {"colour": "blue", "provider": {"kind": "scripted", "script": "demo"}},
    )
    try:
        state = await tiller.request("tiller/getState")
        assert state["mode"] == "default" and state["busy"] is False
    finally:
        await stop_tiller(tiller)
