"""The ACP opening: the first ``initialize`` answered before the SDK loads, as the agent
would answer it, and everything it cannot answer left to the SDK unread."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import InitializeRequest
from pydantic import ValidationError

from tiller.faces.acp.agent import TillerAgent
from tiller.faces.acp.opening import (
    PROTOCOL_VERSION,
    Initialize,
    answerable,
    initialize_result,
    read_opening,
)

PARAMS: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True}, "terminal": True, "_meta": {"x": 1}},
    "clientInfo": {"name": "zed", "title": "Zed", "version": "0.200"},
}


def line(params: object, method: str = "initialize", msg_id: object = 0) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def test_the_protocol_version_is_the_sdks() -> None:
    assert PROTOCOL_VERSION == acp.PROTOCOL_VERSION


@pytest.mark.parametrize("version", [0, 1, 2, 65535])
async def test_the_early_answer_is_the_agents_as_the_sdk_puts_it_on_the_wire(
    version: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TILLER_DATA_DIR", str(tmp_path))
    agent = TillerAgent()
    try:
        answer = await agent.initialize(protocol_version=version)
    finally:
        await agent.shutdown()
    # As acp.connection.Connection._execute_request serializes a handler's result.
    wire = answer.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    assert initialize_result(version) == wire


def test_an_initialize_is_answered_with_its_id_and_the_version_it_asks_for() -> None:
    found = answerable(line({**PARAMS, "protocolVersion": 7}, msg_id="a"))
    assert found == Initialize("a", {**PARAMS, "protocolVersion": 7}, 7)


# Each as the SDK reads it: ``protocolVersion`` is the one member it can refuse.
LENIENT: list[dict[str, Any]] = [
    {"protocolVersion": "2024-11-05"},  # taken as 1
    {"protocolVersion": True},
    {"protocolVersion": 1.7},
    {"protocolVersion": None},
    {"protocolVersion": 3, "_meta": {"zed": True}},
    {"protocolVersion": 1, "_meta": 5},
    {"protocolVersion": 1, "clientInfo": {"name": "x"}},
    {"protocolVersion": 1, "clientInfo": 5},
    {"protocolVersion": 1, "clientCapabilities": {"terminal": "maybe", "fs": 3, "auth": {}}},
    {"protocolVersion": 1, "clientCapabilities": "x"},
]
REFUSED: list[dict[str, Any]] = [
    {"clientCapabilities": {}},
    {"protocolVersion": -1},
    {"protocolVersion": 70000},
    {"protocolVersion": "70000"},
]


@pytest.mark.parametrize("params", [PARAMS, *LENIENT, *REFUSED])
def test_what_is_answered_early_is_what_the_sdk_takes_and_reads_the_same_version(
    params: dict[str, Any],
) -> None:
    found = answerable(line(params))
    try:
        request = InitializeRequest.model_validate(params)
    except ValidationError:
        assert found is None
    else:
        assert found is not None and found.version == request.protocol_version


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (line(PARAMS, method="session/new"), "another method"),
        (b"not json", "not JSON"),
        (line(None), "no params"),
        (line({"protocolVersion": 1, "_meta": {"tiller": {}}}), "settings: the agent checks"),
        (line(PARAMS, msg_id=True), "a bool id"),
        (line(PARAMS, msg_id=None), "a null id"),
        (line({"protocolVersion": 1, "clientInfo": {"name": "\ud800"}}), "a lone surrogate"),
        (line({"protocolVersion": 1, "_meta": {"n": 2**70}}), "a number beyond int64"),
        (b'{"id": 0, "method": "initialize", "params": {"protocolVersion": Infinity}}', "inf"),
    ],
)
def test_what_it_cannot_answer_as_the_sdk_would_is_left_to_the_sdk(raw: bytes, why: str) -> None:
    assert answerable(raw) is None, why


def test_what_follows_the_answered_line_is_left_unread_for_the_sdk() -> None:
    reading, writing = os.pipe()
    rest = b'{"jsonrpc":"2.0","id":1,"method":"session/new"'  # the rest is still on its way
    os.write(writing, line(PARAMS) + b"\n" + rest)
    try:
        opening = read_opening(reading)
    finally:
        os.close(reading)
        os.close(writing)
    assert opening.initialize == PARAMS
    assert opening.unread == rest
    answer = json.loads(opening.answer)
    assert answer == {"jsonrpc": "2.0", "id": 0, "result": initialize_result(1)}
    assert opening.answer.endswith(b"}\n") and opening.answer.count(b"\n") == 1


def test_a_first_line_it_does_not_answer_is_left_whole_for_the_sdk() -> None:
    reading, writing = os.pipe()
    first = line(PARAMS, method="session/list") + b"\n"
    os.write(writing, first)
    os.close(writing)
    try:
        opening = read_opening(reading)
    finally:
        os.close(reading)
    assert opening.unread == first
    assert opening.initialize is None and opening.answer == b""
