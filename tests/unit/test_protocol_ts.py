"""`vscode-extension/src/protocol.ts` is generated from `tiller.protocol` and must not drift;
the shapes protocol.py describes are the ones the server builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NotRequired, get_args, get_origin, get_type_hints

import pytest

from tiller import protocol, protocol_ts
from tiller.core.permissions.modes import Allow
from tiller.core.turn import approvals, outcomes
from tiller.core.turn.events import (
    HookActed,
    Notice,
    PlanDecided,
    Posted,
    QueueDropped,
    StepRestarted,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from tiller.core.turn.outcomes import Completed, Failed, Interrupted, Refused
from tiller.faces.lsp import rpc
from tiller.model import models
from tiller.model.usage import ContextUse, Usage
from tiller.protocol import TrailItem
from tiller.tools.base import DiffStat, Preview

GENERATED = Path(__file__).parents[2] / "vscode-extension" / "src" / "protocol.ts"


def test_protocol_ts_is_what_protocol_py_generates() -> None:
    assert GENERATED.read_text(encoding="utf-8") == protocol_ts.render(), (
        f"{GENERATED.name} differs from server/tiller/protocol.py; regenerate it with\n"
        f"  {protocol_ts.COMMAND}"
    )


def test_the_check_command_names_the_command_that_regenerates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "protocol.ts"
    stale.write_text("// hand-edited\n", encoding="utf-8")
    assert protocol_ts.main(["--check", str(stale)]) == 1
    assert protocol_ts.COMMAND in capsys.readouterr().err
    stale.write_text(protocol_ts.render(), encoding="utf-8")
    assert protocol_ts.main(["--check", str(stale)]) == 0


def test_every_client_request_has_a_handler_taking_its_params() -> None:
    described = {method: shapes[0] for method, shapes in protocol.CLIENT_REQUESTS.items()}
    served = {method: route[0] for method, route in rpc.HANDLERS.items()}
    assert served == described
    assert protocol.SESSION_SLICE in served


def test_the_generated_file_has_every_method_and_the_names_the_extension_imports() -> None:
    text = protocol_ts.render()
    for method in protocol.CUSTOM_METHODS:
        assert f'"{method}"' in text, method
    for name in ("Outcome", "MODES", "State", "TillerEvent", "ToolDecision", "Preview"):
        assert f" {name} " in text or f" {name}:" in text, name


def test_the_literals_protocol_py_repeats_equal_the_servers_own() -> None:
    decision = get_type_hints(approvals.ToolAnswer)["decision"]
    assert get_args(protocol.ToolDecision) == get_args(decision)
    assert get_args(protocol.InterruptCause) == get_args(outcomes.InterruptCause)
    assert get_args(protocol.ModelThinking) == get_args(models.ThinkingForm)


def keys_fit(value: dict[str, Any], shape: Any) -> None:
    """``value`` has every required key of the TypedDict ``shape`` and no other key."""
    hints = get_type_hints(shape, include_extras=True)
    required = {
        k for k, h in hints.items() if get_origin(h) is not NotRequired
    } - shape.__optional_keys__
    assert required <= value.keys() <= hints.keys(), (shape.__name__, sorted(value))


TRAIL = (TrailItem("bash", "ok"),)
EVENTS = [
    (TurnStarted("hi"), protocol.TurnStartedEvent),
    (TextDelta("a"), protocol.TextDeltaEvent),
    (ThinkingDelta("b"), protocol.ThinkingDeltaEvent),
    (ToolStarted("t1", "bash", {}, 0, False, Allow("read-only")), protocol.ToolStartedEvent),
    (ToolStarted("t1", "bash", {}, 0, False), protocol.ToolStartedEvent),
    (ToolFinished("t1", "edit_file", "ok", "", 3, DiffStat(1, 2)), protocol.ToolFinishedEvent),
    (ToolOutput("t1", "out"), protocol.ToolOutputEvent),
    (Notice("note"), protocol.NoticeEvent),
    (HookActed("PreToolUse", "hook: x", "denied", "no", "t1"), protocol.HookActedEvent),
    (HookActed("Stop", "hook: y", "continued", "run the tests"), protocol.HookActedEvent),
    (PlanDecided(False, "no"), protocol.PlanDecidedEvent),
    (QueueDropped(("a",)), protocol.QueueDroppedEvent),
    (StepRestarted("overloaded"), protocol.StepRestartedEvent),
    (TurnEnded(Completed("done"), TRAIL, Usage(1, 2, 0, 0, None)), protocol.TurnEndedEvent),
    (TurnEnded(Failed("auth", "no key", False), TRAIL), protocol.TurnEndedEvent),
    (TurnEnded(Interrupted("keyword"), TRAIL), protocol.TurnEndedEvent),
    (TurnEnded(Refused("cyber", "why"), ()), protocol.TurnEndedEvent),
]


@pytest.mark.parametrize(("event", "shape"), EVENTS)
def test_every_event_on_the_wire_fits_its_described_shape(event: Any, shape: Any) -> None:
    wire = Posted("ses_1", "turn_1", 1, event).to_wire()
    keys_fit(wire, shape)
    assert wire["type"] == get_args(get_type_hints(shape)["type"])[0]
    keys_fit(Posted("ses_1", None, 2, event, parent_turn_id="turn_0").to_wire(), shape)


@pytest.mark.parametrize(
    ("wire", "shape"),
    [
        (models.resolve("claude-sonnet-4-5").to_wire(), protocol.ModelInfo),
        (models.resolve("my-proxy-model").to_wire(), protocol.ModelInfo),
        (Usage(1, 2, 3, 4, 0.5).to_wire(), protocol.UsageWire),
        (ContextUse(10, 200).to_wire(), protocol.ContextUseWire),
        (DiffStat(1, 2).to_wire(), protocol.DiffStatWire),
        (
            Preview("diff", {"path": "a", "before": "", "after": "x"}).to_wire(),
            protocol.DiffPreview,
        ),
        (Preview("command", {"command": "ls", "cwd": "."}).to_wire(), protocol.CommandPreview),
        (Preview("text", {"text": "read a"}).to_wire(), protocol.TextPreview),
    ],
)
def test_what_other_modules_put_on_the_wire_fits_its_described_shape(
    wire: dict[str, Any], shape: Any
) -> None:
    keys_fit(wire, shape)
