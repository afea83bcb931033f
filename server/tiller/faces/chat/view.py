"""What the shell shows, as plain strings from the server's shapes (pure, unit-tested)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tiller.faces.common.render import mode_words, shorten, trail_text
from tiller.jsontypes import JSON

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TODO_MARKS = {"completed": "✓", "in_progress": "▸", "pending": "○"}


def context_percent(state: JSON) -> int | None:
    context = state.get("context")
    if not isinstance(context, dict):
        return None
    used, window = context.get("usedTokens"), context.get("windowTokens")
    if not isinstance(used, int) or not isinstance(window, int) or window <= 0:
        return None
    return round(100 * used / window)


def toolbar_text(state: JSON | None, frame: int = 0) -> str:
    """``mode · model · active todo (3/8) · queued N · context %`` from ``tiller/state``."""
    if state is None:
        return "starting the server…"
    parts = [mode_words(state.get("mode")), str(state.get("model", "?"))]
    counts = state.get("todoCounts")
    total = counts.get("total", 0) if isinstance(counts, dict) else 0
    if isinstance(total, int) and total > 0:
        done = counts.get("completed", 0) if isinstance(counts, dict) else 0
        active = state.get("activeTodo")
        board = f"{done}/{total}"
        parts.append(f"{shorten(str(active), 40)} ({board})" if active else f"todos {board}")
    queue = state.get("queue")
    if isinstance(queue, list) and queue:
        parts.append(f"queued {len(queue)}")
    percent = context_percent(state)
    if percent is not None:
        parts.append(f"context {percent}%")
    cost = state.get("sessionCostUsd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        parts.append(f"${cost:.2f}")
    if state.get("sandbox") == "none":
        parts.append("no sandbox")
    if state.get("busy"):
        parts.append(f"{SPINNER[frame % len(SPINNER)]} working")
    return " · ".join(parts)


def todo_summary(todos: Any, running: bool = True) -> str | None:
    """The compact board printed when it changes: counts, the active item, the next one.
    While no turn runs (``running`` false: a board restored by a rewind), the item left in
    progress is not shown as worked on."""
    if not isinstance(todos, list) or not todos:
        return None
    items = [t for t in todos if isinstance(t, dict)]
    done = sum(1 for t in items if t.get("status") == "completed")
    active = next((t for t in items if t.get("status") == "in_progress"), None)
    pending = next((t for t in items if t.get("status") == "pending"), None)
    parts = [f"☰ todos {done}/{len(items)}"]
    if active is not None and running:
        parts.append(f"▸ {shorten(str(active.get('activeForm') or active.get('content')), 50)}")
    elif active is not None:
        parts.append(f"unfinished: {shorten(str(active.get('content')), 50)}")
    if pending is not None:
        parts.append(f"next: {shorten(str(pending.get('content')), 40)}")
    if done == len(items):
        parts.append("all done")
    return " · ".join(parts)


def usage_text(usage: Any) -> str | None:
    """``1.2k in · 340 out · $0.012`` from ``turnEnded.usage`` (v2)."""
    if not isinstance(usage, dict) or not any(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in usage.values()
    ):
        return None
    inputs = sum(
        v
        for k in ("inputTokens", "cacheReadTokens", "cacheWriteTokens")
        if isinstance(v := usage.get(k), int)
    )
    output = usage.get("outputTokens")
    parts = [f"{_tokens(inputs)} in"]
    if isinstance(output, int):
        parts.append(f"{_tokens(output)} out")
    cost = usage.get("costUsd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        parts.append(f"${cost:.3f}")
    return " · ".join(parts)


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def outcome_lines(params: JSON) -> list[str]:
    """What a ``turnEnded`` adds to the log when the turn did not simply complete."""
    outcome = str(params.get("outcome", "?"))
    lines: list[str] = []
    match outcome:
        case "completed":
            pass
        case "failed":
            error = _obj(params.get("error"))
            lines.append(f"failed ({error.get('kind', 'internal')}): {error.get('message', '')}")
        case "refused":
            refusal = _obj(params.get("refusal"))
            why = refusal.get("explanation") or refusal.get("category") or ""
            lines.append("refused" + (f": {why}" if why else ""))
        case "interrupted":
            stopped = params.get("cause") == "server_stopped"
            lines.append("interrupted" + (" (the server stopped)" if stopped else ""))
        case _:
            lines.append(outcome)
    trail = trail_text(params.get("trail"))
    if lines and trail:
        lines.append(f"was working on: {trail}")
    return lines


def confirm_decided_line(params: JSON) -> str:
    said = {
        "allow": "allowed",
        "allowSession": "allowed for this session",
        "allowAlways": "always allowed (a rule in .tiller/settings.local.json)",
    }
    line = f"→ {said.get(str(params.get('decision')), 'denied')}"
    feedback = params.get("feedback")
    return line + (f": {feedback}" if feedback else "")


def rewind_line(params: JSON) -> str:
    """A ``rewound`` or ``rewindUndone`` event as one line, saying what it did to files:
    ``reverted``, ``deleted``, ``restored`` (an entry journaled before those fields has only
    ``changed``/``added``/``removed``, seen from now: the same files, by effect)."""

    def count(effect: str, old: str) -> int:
        files = params.get(effect, params.get(old))
        return len(files) if isinstance(files, list) else 0

    effects = [
        (count(effect, old), effect)
        for effect, old in (("reverted", "changed"), ("deleted", "added"), ("restored", "removed"))
    ]
    counts = ", ".join(f"{n} {effect}" for n, effect in effects if n)
    if params.get("type") == "rewindUndone":
        return f"↺ rewind undone: {f'files {counts}' if counts else 'no file changes'}"
    what = [f"files ({counts or 'no changes'})"] if params.get("files") else []
    what += ["the conversation"] if params.get("conversation") else []
    return f"↺ rewound {' and '.join(what) or 'nothing'} to before {params.get('turnId')}"


def _obj(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def plan_decided_line(params: JSON) -> str:
    if params.get("approved"):
        return "plan approved"
    feedback = params.get("feedback")
    return "plan rejected" + (f": {feedback}" if feedback else "")


def queue_lines(queue: Sequence[Any]) -> list[str]:
    return [f"⧗ queued {n}: {shorten(str(text), 70)}" for n, text in enumerate(queue, 1)]
