"""``tiller run --output-format json|stream-json``: stdout as JSON, one object a line.

stream-json: an ``init`` line once the server is up, every ``tiller/event`` as the server sent
it, then the ``result`` line; json: the ``result`` line alone. Nothing else is written to
stdout (the text rendering goes to stderr). The schema: docs/ci.md.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tiller.faces.client.options import EXIT_OUTCOME, EXIT_STOPPED
from tiller.faces.client.terminal import write_flushed
from tiller.jsontypes import JSON

NO_USAGE: JSON = {
    "inputTokens": 0,
    "outputTokens": 0,
    "cacheReadTokens": 0,
    "cacheWriteTokens": 0,
    "costUsd": None,
}


@dataclass
class RunReport:
    """What a run learned on the way, for its result: the session, the turn, why it stopped."""

    started: float = field(default_factory=time.monotonic)
    session_id: str | None = None
    model: str | None = None
    mode: str | None = None
    turn_id: str | None = None
    ended: JSON | None = None  # the turn's ``turnEnded`` event
    final: str | None = None  # a slash command's answer (no turn)
    error: JSON | None = None  # why the run failed outside a turn: {kind, message}
    stopped_by: str | None = None  # "maxTurns", "checkpoint", "plan"

    def session_from(self, state: Any) -> None:
        if isinstance(state, dict):
            self.session_id = _str_or_none(state.get("sessionId"))
            self.model = _str_or_none(state.get("model"))
            self.mode = _str_or_none(state.get("mode"))

    def failed(self, kind: str, message: str) -> None:
        if self.error is None:
            self.error = {"kind": kind, "message": message}

    def result(self, exit_code: int) -> JSON:
        """The ``result`` object of a run that exits with ``exit_code``."""
        ended = self.ended or {}
        usage = ended.get("usage") if isinstance(ended.get("usage"), dict) else None
        result: JSON = {
            "type": "result",
            "outcome": EXIT_OUTCOME.get(exit_code, "failed"),
            "exitCode": exit_code,
        }
        final = ended.get("final") if self.ended is not None else self.final
        if isinstance(final, str):
            result["final"] = final
        error = ended.get("error") if isinstance(ended.get("error"), dict) else self.error
        if error is not None:
            result["error"] = error
        if isinstance(ended.get("refusal"), dict):
            result["refusal"] = ended["refusal"]
        if exit_code == EXIT_STOPPED and self.stopped_by is not None:
            result["stoppedBy"] = self.stopped_by
        if isinstance(ended.get("trail"), list):
            result["trail"] = ended["trail"]
        result["usage"] = usage if usage is not None else dict(NO_USAGE)
        cost = result["usage"].get("costUsd")
        if isinstance(cost, int | float):
            result["costUsd"] = cost
        result["turnId"] = self.turn_id
        result["sessionId"] = self.session_id
        result["durationMs"] = round((time.monotonic() - self.started) * 1000)
        return result


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class JsonLines:
    """stdout for machines: ``init`` + events + ``result`` (stream) or the ``result`` alone."""

    def __init__(self, out: TextIO, stream: bool) -> None:
        self.out = out
        self.stream = stream
        self._held: list[JSON] | None = []  # events sent before the init line (a greeting)

    def init(self, report: RunReport, cwd: Path) -> None:
        if self.stream:
            self._line(
                {
                    "type": "init",
                    "sessionId": report.session_id,
                    "model": report.model,
                    "mode": report.mode,
                    "cwd": str(cwd),
                }
            )
        self._release()

    def event(self, params: JSON) -> None:
        if not self.stream:
            return
        if self._held is not None:
            self._held.append(params)
        else:
            self._line(params)

    def result(self, result: JSON) -> None:
        self._release()
        self._line(result)

    def _release(self) -> None:
        held, self._held = self._held or [], None
        for params in held:
            self._line(params)

    def _line(self, value: JSON) -> None:
        text = json.dumps(value, ensure_ascii=False)
        try:
            text.encode(self.out.encoding or "utf-8", self.out.errors or "strict")
        except (UnicodeEncodeError, LookupError):  # a lone surrogate, or stdout not UTF-8
            text = json.dumps(value)
        write_flushed(self.out, text + "\n")
