"""Request params are structured once, strictly, into `protocol` dataclasses; every problem is
one -32602 message naming the member (`tiller.faces.lsp.params`)."""

from __future__ import annotations

from typing import Any

import pytest

from tiller import protocol as p
from tiller.errors import InvalidParams
from tiller.faces.lsp.params import structure_params
from tiller.protocol import INT64_MAX


def problem(cls: type[Any], raw: object) -> str:
    with pytest.raises(InvalidParams) as caught:
        structure_params(cls, raw)
    return caught.value.message


def test_camel_case_members_become_fields_and_unknown_members_are_ignored() -> None:
    raw = {"turnId": "turn_1", "files": True, "dryRun": True, "later": {"x": 1}}
    assert structure_params(p.RewindParams, raw) == p.RewindParams("turn_1", True, False, True)


def test_params_left_out_are_an_empty_object() -> None:
    assert structure_params(p.NoParams, None) == p.NoParams()
    assert structure_params(p.SessionTranscriptParams, None) == p.SessionTranscriptParams()
    assert problem(p.RewindParams, None) == (
        "params.turnId: 'turnId' is required and must be a string"
    )


def test_params_that_are_not_an_object_are_refused() -> None:
    assert problem(p.NoParams, [1, 2]) == "params must be an object"


@pytest.mark.parametrize(
    ("cls", "raw", "message"),
    [
        (p.PromptParams, {}, "params.text: 'text' is required and must be a non-empty string"),
        (p.PromptParams, {"text": 5}, "params.text: 'text' must be a non-empty string"),
        (p.PromptParams, {"text": " \n"}, "params.text: 'text' must not be empty"),
        (p.SetModelParams, {"model": ""}, "params.model: 'model' must not be empty"),
        (p.InterruptParams, {"turnId": 7}, "params.turnId: 'turnId' must be a string or null"),
        (
            p.RewindParams,
            {"turnId": "t", "files": "yes"},
            "params.files: 'files' must be a boolean",
        ),
        (p.RewindParams, {"turnId": "t", "files": 1}, "params.files: 'files' must be a boolean"),
        (
            p.SetModeParams,
            {"mode": "yolo"},
            "params.mode: unknown mode 'yolo': expected one of default, acceptEdits, plan",
        ),
        (
            p.SetThinkingParams,
            {"enabled": True, "effort": "extreme"},
            "params.effort: unknown effort 'extreme': "
            "expected one of low, medium, high, xhigh, max",
        ),
        (
            p.SessionTranscriptParams,
            {"limit": 0},
            "params.limit: 'limit' must be an integer from 1 to 1000",
        ),
        (
            p.SessionTranscriptParams,
            {"limit": True},
            "params.limit: 'limit' must be an integer from 1 to 1000",
        ),
        (
            p.SessionTranscriptParams,
            {"limit": 20.0},
            "params.limit: 'limit' must be an integer from 1 to 1000",
        ),
        (
            p.SessionTranscriptParams,
            {"before": -1},
            "params.before: 'before' must be an integer of at least 0 or null",
        ),
        (p.SessionListParams, {"workspace": ""}, "params.workspace: 'workspace' must not be empty"),
    ],
)
def test_a_wrong_member_is_named_in_one_message(cls: type[Any], raw: Any, message: str) -> None:
    assert problem(cls, raw) == message


def test_integers_take_their_whole_range_and_null_where_optional() -> None:
    raw = {"before": INT64_MAX, "limit": 1000, "sessionId": None}
    assert structure_params(p.SessionTranscriptParams, raw) == p.SessionTranscriptParams(
        None, INT64_MAX, 1000
    )


def test_set_thinking_tells_a_member_left_out_from_a_null() -> None:
    left_out = structure_params(p.SetThinkingParams, {"enabled": False})
    assert (left_out.effort, left_out.budget_tokens) == (p.UNSET, p.UNSET)
    assert p.kept(left_out.effort, "low") == "low"
    nulls = structure_params(
        p.SetThinkingParams, {"enabled": True, "effort": None, "budgetTokens": None}
    )
    assert (nulls.effort, nulls.budget_tokens) == (None, None)
    assert p.kept(nulls.effort, "low") is None
    assert structure_params(p.SetThinkingParams, {"enabled": True, "budgetTokens": 2048}) == (
        p.SetThinkingParams(True, p.UNSET, 2048)
    )


@pytest.mark.parametrize("method", sorted(p.CLIENT_REQUESTS))
def test_every_request_refuses_a_non_object_and_ignores_unknown_members(method: str) -> None:
    cls = p.CLIENT_REQUESTS[method][0]
    assert problem(cls, "text") == "params must be an object"
    try:
        structure_params(cls, {"zzUnknown": 1})
    except InvalidParams as err:  # a required member is missing: named, never the unknown one
        assert err.message.startswith("params.") and "zzUnknown" not in err.message
