"""Text of the tool log shared by the terminal clients: summaries, trails, diffs."""

from __future__ import annotations

import difflib
import re
from typing import Any

from tiller.jsontypes import JSON
from tiller.protocol import MODE_WORDS

SUMMARY_WIDTH = 60
DIM, BOLD, RESET = "\x1b[2m", "\x1b[1m", "\x1b[0m"
RED, GREEN, CYAN = "\x1b[31m", "\x1b[32m", "\x1b[36m"


_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Text from the model, a file or a command, made harmless for a terminal: control
    characters (escape sequences, carriage returns, bells) become visible ``^X`` marks."""
    return _UNSAFE.sub(lambda m: f"^{chr((ord(m.group()) + 64) % 128)}", text)


def mode_words(mode: Any) -> str:
    """A mode as the user reads it everywhere (``default`` -> ``ask before edits``); the id
    itself stays on the wire and on the command line."""
    if not isinstance(mode, str):
        return "?"
    return next((words for m, words in MODE_WORDS.items() if m == mode), mode)


_EMPTY_PARTIAL = re.compile(r" \(partial output before the interrupt\):\s*\Z")


def tool_output(params: JSON) -> str:
    """A ``toolFinished`` event's output, without a partial-output header that nothing
    follows (an interrupted command that had printed only blank lines)."""
    return _EMPTY_PARTIAL.sub("", str(params.get("output") or ""))


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


class RetryNotices:
    """Retry notices shown once per failure kind and turn: the SDK's and the step's retries
    of the same fault differ only in their numbers (``retrying in 0.4 s``, ``(2/2)``)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def first(self, text: str) -> bool:
        """Whether to show ``text``: any notice but a repeat of a retry already shown."""
        if "retrying" not in text:
            return True
        kind = _NUMBERS.sub("#", text)
        if kind in self.seen:
            return False
        self.seen.add(kind)
        return True

    def turn_over(self) -> None:
        self.seen.clear()


def shorten(text: str, width: int = SUMMARY_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def tool_summary(name: str, tool_input: Any) -> str:
    """A few words that identify a call: its path, command or pattern."""
    if not isinstance(tool_input, dict):
        return ""
    match name:
        case "bash":
            return shorten(str(tool_input.get("command", "")))
        case "grep":
            where = tool_input.get("path") or tool_input.get("glob")
            pattern = str(tool_input.get("pattern", ""))
            return shorten(f"{pattern} in {where}" if where else pattern)
        case "list_files":
            parts = [str(tool_input[k]) for k in ("path", "pattern") if tool_input.get(k)]
            return shorten(" ".join(parts) or ".")
        case "todo_write":
            todos = tool_input.get("todos")
            return f"{len(todos)} items" if isinstance(todos, list) else ""
        case "skill":
            return shorten(str(tool_input.get("name", "")))
        case "task":  # its agent's line names the kind
            return shorten(str(tool_input.get("description", "")))
    for key in ("path", "command", "pattern", "url", "query"):
        if isinstance(tool_input.get(key), str):
            return shorten(tool_input[key])
    return ""


def attachments_line(attached: Any) -> str:
    """A prompt's attachments (``turnStarted.attachments``) as one line, as the terminal
    clients echo them: ``+ @src/a.py · @problems · image shot.png``; "" when none."""
    if not isinstance(attached, list):
        return ""
    names = [
        f"image {a.get('name', '')}" if a.get("kind") == "image" else f"@{a.get('name', '')}"
        for a in attached
        if isinstance(a, dict)
    ]
    return terminal_safe(f"+ {' · '.join(names)}") if names else ""


HOOK_OUTCOME_WORDS = {
    "allowed": "allowed the call",
    "denied": "denied the call",
    "asked": "asks the user",
    "rewroteInput": "rewrote the input",
    "addedContext": "added context for the model",
    "fedBack": "fed back to the model",
    "blockedPrompt": "blocked the prompt",
    "continued": "sent the model back to work",
    "stopped": "stopped the turn",
    "message": "says",
}


def hook_line(params: JSON) -> str:
    """``hookActed`` as one line: ``PreToolUse hook: ./guard.py denied the call: no rm``."""
    outcome = str(params.get("outcome", ""))
    words = HOOK_OUTCOME_WORDS.get(outcome, outcome)
    message = first_line(str(params.get("message", "")))
    head = f"{params.get('event', 'hook')} {params.get('hooks', '')}".strip()
    if outcome == "message":  # the message names its hook already
        return f"{params.get('event', 'hook')}: {message}"
    return f"{head} {words}" + (f": {message}" if message else "")


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return shorten(line, 100)
    return ""


def trail_text(trail: Any) -> str:
    if not isinstance(trail, list):
        return ""
    return " → ".join(
        f"{item.get('name', '?')} {'✓' if item.get('status') == 'ok' else '✗'}"
        for item in trail
        if isinstance(item, dict)
    )


def permission_note(permission: Any) -> str:
    """What decided a call (``toolStarted.permission``), as a tool row shows it:
    ``allow: rule: Bash(git diff:*) (workspace .claude/settings.json)``; "" when none."""
    if not isinstance(permission, dict) or not permission.get("by"):
        return ""
    return terminal_safe(f"{permission.get('decision', '?')}: {permission['by']}")


def steered_line(params: JSON) -> str:
    """A ``steered`` event: text the user sent to the running turn, now with the model."""
    return terminal_safe(f"↪ steered: {first_line(str(params.get('text', '')))}")


def finished_line(head: str, params: JSON, with_stats: bool = False) -> str:
    """``✓ bash ls (12 ms)`` or ``✗ bash make: exit code 2`` for a ``toolFinished`` event;
    ``with_stats`` adds the lines an edit added and removed when the server says."""
    if params.get("status") == "ok":
        stats = diff_stats(params.get("diff")) if with_stats else ""
        return f"✓ {head} ({params.get('durationMs', 0)} ms{stats})"
    reason = first_line(tool_output(params)) or str(params.get("status"))
    return f"✗ {head}: {reason}"


def diff_stats(diff: Any) -> str:
    """``, +3 -1`` from a ``toolFinished.diff`` (v2), else nothing."""
    if not isinstance(diff, dict):
        return ""
    added, removed = diff.get("added"), diff.get("removed")
    if not isinstance(added, int) or not isinstance(removed, int):
        return ""
    return f", +{added} -{removed}"


def diff_text(preview: JSON) -> str:
    path = str(preview.get("path", "file"))
    before = str(preview.get("before") or "")
    after = str(preview.get("after") or "")
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if not before else f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def color_diff_line(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return f"{GREEN}{line}{RESET}"
    if line.startswith("-") and not line.startswith("---"):
        return f"{RED}{line}{RESET}"
    if line.startswith("@@"):
        return f"{CYAN}{line}{RESET}"
    return line


def preview_text(name: str, preview: Any, color: bool) -> str:
    """What a ``tiller/confirmTool`` asks about: a unified diff, a command, or a text."""
    if not isinstance(preview, dict):
        return f"{name} wants to run."
    match preview.get("kind"):
        case "diff":
            header = f"{name} wants to change {preview.get('path', '?')}:"
            diff = diff_text(preview).rstrip("\n") or "(no changes)"
            if color:
                diff = "\n".join(color_diff_line(line) for line in diff.splitlines())
            return f"{header}\n{diff}"
        case "command":
            cwd, command = preview.get("cwd", "?"), preview.get("command", "")
            return f"{name} wants to run in {cwd}:\n  $ {command}"
        case _:
            return f"{name} wants to run:\n{preview.get('text', '')}"
