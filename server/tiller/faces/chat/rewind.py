"""``/rewind`` in ``tiller chat``: first what it would do (the server's dry run, and the turns
it drops from the conversation), then a question; only a yes sends ``/rewind <turnId>``.

``/rewind --dry-run`` goes to the server as typed, and so does a ``/rewind`` the server must
answer itself (usage, no checkpoint yet, checkpoints off, a turn running). Faces without a
person to ask rewind as the server's command does: ``tiller run``, ``tiller chat`` on a pipe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from tiller import protocol as p
from tiller.faces.chat.approvals import Approvals
from tiller.faces.chat.printer import Printer
from tiller.faces.client.jsonrpc import RpcError
from tiller.faces.client.questions import Choice, Question
from tiller.faces.client.server import ServerProcess
from tiller.faces.common.render import DIM, shorten
from tiller.jsontypes import JSON

COMMAND: Final = "/rewind"
NAMES_SHOWN: Final = 10  # file names per effect
PROMPTS_SHOWN: Final = 5  # dropped turns named by their prompts
NO: Final[JSON] = {"rewind": False}


@dataclass(frozen=True)
class AskedRewind:
    """A ``/rewind [turnId]`` typed at the prompt (``turn_id`` None: the last turn)."""

    line: str
    turn_id: str | None


def asked_rewind(line: str) -> AskedRewind | None:
    """The rewind ``line`` asks for, to be confirmed first; None for any other line, a dry run,
    and a line only the server can answer (its usage)."""
    words = line.split()
    if not words or words[0].lower() != COMMAND or len(words) > 2:
        return None
    rest = words[1:]
    if any(word.startswith("-") for word in rest):
        return None  # --dry-run, or an option the server's usage answers
    return AskedRewind(line.strip(), rest[0] if rest else None)


async def confirmed_rewind(
    server: ServerProcess, asked: AskedRewind, approvals: Approvals, printer: Printer
) -> str | None:
    """The line to send: ``/rewind <turnId>`` once the user saw what it does and said yes; the
    line as typed when the server is to answer it; None when the user said no."""
    try:
        listed = await server.request(p.CHECKPOINTS, {})
    except RpcError:
        return asked.line  # checkpoints are off: the server's /rewind says why
    rows = checkpoint_rows(listed)
    start = target_index(rows, asked.turn_id)
    if start is None:
        return asked.line  # nothing to rewind, or no such turn: the server says so
    turn_id = str(rows[start]["turnId"])
    try:
        effects = await server.request(
            p.REWIND, {"turnId": turn_id, "files": True, "conversation": True, "dryRun": True}
        )
    except RpcError:
        return asked.line  # a turn runs, a folder is gone: the server's /rewind says so
    for line in preview_lines(rows[start:], effects if isinstance(effects, dict) else {}):
        printer.print(line)
    answer = await approvals.ask(rewind_question(turn_id), on_escape=NO)
    if answer.get("rewind") is True:
        return f"{COMMAND} {turn_id}"
    printer.print("· nothing was rewound", DIM)
    return None


def checkpoint_rows(listed: Any) -> list[JSON]:
    rows = listed.get("checkpoints") if isinstance(listed, dict) else None
    return [row for row in rows or [] if isinstance(row, dict) and "turnId" in row]


def target_index(rows: Sequence[JSON], turn_id: str | None) -> int | None:
    """Where the rewind starts in ``rows`` (oldest first): the last turn, or ``turn_id``'s."""
    if turn_id is None:
        return len(rows) - 1 if rows else None
    return next((n for n, row in enumerate(rows) if row.get("turnId") == turn_id), None)


def preview_lines(dropped: Sequence[JSON], effects: JSON) -> list[str]:
    """What rewinding to before ``dropped[0]`` does: files by effect, then the turns that
    leave the conversation (``dropped``, oldest first), then what someone else changed."""
    first = dropped[0]
    lines = [f"Rewinding to before {first.get('turnId')} (“{_prompt(first)}”) would:"]
    for verb, key in (("revert", "reverted"), ("delete", "deleted"), ("restore", "restored")):
        if files := _names(effects.get(key)):
            lines.append(f"  {verb} {_count(len(files), 'file')}: {_listed(files, NAMES_SHOWN)}")
    if len(lines) == 1:
        lines.append("  change no file")
    prompts = [f"“{_prompt(row)}”" for row in dropped]
    lines.append(
        f"  drop {_count(len(dropped), 'turn')} from the conversation: "
        f"{_listed(prompts, PROMPTS_SHOWN)}"
    )
    if yours := _names(effects.get("userChanged")):
        lines.append(
            "  and put back what was changed since by someone other than the agent: "
            f"{_listed(yours, NAMES_SHOWN)}"
        )
    return lines


def rewind_question(turn_id: str) -> Question:
    return Question(
        "confirm",
        f"Rewind to before {turn_id}? (/undo undoes it)",
        (
            Choice("y", "rewind", {"rewind": True}, words=("yes", "rewind")),
            Choice("n", "keep everything as it is", NO, words=("no",)),
        ),
    )


def _prompt(row: JSON) -> str:
    return shorten(str(row.get("prompt", "")), 50)


def _names(value: Any) -> list[str]:
    return [str(name) for name in value] if isinstance(value, list) else []


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _listed(names: Sequence[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
