"""Slash commands applied: ``commands.interpret`` turns the text into a value, this applies it
to a session (or hands the face another session to switch to, for ``/clear``, ``/resume``,
``/fork`` and ``/slice``). Every face sends prompts through :func:`prompt`."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tiller.core.permissions.commands import (
    AddRule,
    ListRules,
    PermissionsCommand,
    PermissionsUsage,
    RemoveRule,
    add,
    format_rules,
    remove,
    rules_in_force,
)
from tiller.core.session import rewind as rewinding
from tiller.core.session import turns
from tiller.core.session.commands import (
    BUILTIN_NAMES,
    HELP,
    ChangeMode,
    ChangeModel,
    ChangeThinking,
    ClearQueue,
    CommandInfo,
    CommandResult,
    Compact,
    DecideTrust,
    ForkSession,
    ListCheckpoints,
    ListMcpServers,
    ListSessions,
    NewSession,
    Permissions,
    Reply,
    ResumeSession,
    RewindTo,
    SliceSession,
    SteerTurn,
    UndoRewind,
    builtin_commands,
    format_checkpoints,
    format_sessions,
    interpret,
    mode_text,
)
from tiller.core.session.compact import compact
from tiller.core.session.material_notices import material_notices
from tiller.core.session.session import Handled, Queued, Session, Started
from tiller.core.session.sessions import S, Sessions, seat_of
from tiller.core.turn.attachments import Attachment
from tiller.core.turn.events import CommandAnswered
from tiller.core.turn.setup import TurnOptions
from tiller.errors import InvalidParams, TillerError
from tiller.extend.commands_files import CustomCommand, read_commands
from tiller.extend.mcp.manager import NO_SERVERS, status_text
from tiller.extend.shadowing import shown_user_path
from tiller.extend.trust import Trust, record
from tiller.model.models import thinking_note


@dataclass(frozen=True)
class SwitchTo:
    """The command (``/clear``, ``/resume``, ``/fork``, ``/slice``) makes ``session`` the
    current one: the face switches to it."""

    session: Session
    message: str


PromptResult = Started | Queued | Handled | SwitchTo


async def prompt(
    sessions: Sessions[S], session: Session, text: str, attached: tuple[Attachment, ...] = ()
) -> PromptResult:
    """A prompt for ``session``: a slash command is applied (and kept in the transcript, so a
    redrawn chat shows it too), a custom one runs its prompt; anything else starts, queues or
    interrupts a turn, with the mentions and images ``attached`` to it (a slash command takes
    none). What the instruction material gives to tell (``material_notices``) is told first,
    each notice once per session."""
    if not session.closed:
        for notice in await asyncio.to_thread(material_notices, session.workspace):
            session.say_once(notice)
    if session.closed or not text.lstrip().startswith("/"):
        return await turns.prompt(session, text, attached=attached)
    name, _, arguments = text.strip().partition(" ")
    customs, _told = await asyncio.to_thread(read_commands, session.workspace)
    custom = customs.get(name[1:])
    if custom is not None and name[1:].lower() not in BUILTIN_NAMES:
        return await run_custom(session, text, custom, arguments.strip())
    if custom is not None:
        session.say(f"The built-in {name} runs: the custom {name} ({custom.path}) is hidden.")
    command = interpret(text, session, max_tokens=session.config.max_tokens)
    result = await apply(sessions, session, command)
    match result:
        case Handled(message=message) | SwitchTo(message=message):
            session.emit(CommandAnswered(text, message))
        case _:
            pass
    return result


async def run_custom(
    session: Session, text: str, command: CustomCommand, arguments: str
) -> PromptResult:
    """A custom command: its expanded body is the prompt of a turn that uses its model and
    may use its allowed tools without asking (that turn only). A repository's command in an
    untrusted folder grants nothing: its ``allowed-tools`` are left out, and it says so."""
    model = f", model {command.model} for this turn" if command.model else ""
    session.emit(CommandAnswered(text, f"/{command.name} ({command.source}{model})"))
    allowed = command.allowed_tools
    if allowed and command.scope != "user" and not session.trust.trusted:
        session.say(UNTRUSTED_ALLOWED_TOOLS.format(name=command.name, tools=", ".join(allowed)))
        allowed = ()
    options = TurnOptions(command.model, allowed, f"/{command.name}", text.strip())
    return await turns.prompt(session, command.expand(arguments), options)


def list_commands(workspace: Path) -> list[CommandInfo]:
    """Built-in commands, then the custom ones (a custom command named like a built-in one
    is hidden by it; a user's command and the repository's it shadows say whose is which)."""
    customs, _told = read_commands(workspace)
    return [
        *builtin_commands(),
        *(
            CommandInfo(c.name, _described(c, customs, workspace), c.argument_hint, c.source)
            for c in customs.values()
            if c.name.lower() not in BUILTIN_NAMES
        ),
    ]


def _described(command: CustomCommand, customs: dict[str, CustomCommand], workspace: Path) -> str:
    """The description a list shows: a shadowing pair says whose is which, and from where."""
    if command.renamed_from is not None:
        where = os.path.relpath(command.path, workspace)
        return f"{command.description} (the repository's /{command.renamed_from}: {where})"
    renamed = [c.name for c in customs.values() if c.renamed_from == command.name]
    if command.scope == "user" and renamed:
        mine = shown_user_path(command.path)
        return f"{command.description} (yours: {mine}; the repository's is /{renamed[0]})"
    return command.description


def help_text(workspace: Path) -> str:
    """/help: the built-in commands, then the custom ones."""
    customs = [c for c in list_commands(workspace) if c.source != "built-in"]
    if not customs:
        return HELP
    lines = [f"  /{c.name}{' ' + c.argument_hint if c.argument_hint else ''}" for c in customs]
    width = max(len(line) for line in lines) + 2
    listed = [f"{line.ljust(width)}{c.description}" for line, c in zip(lines, customs, strict=True)]
    return HELP + "\n\nCustom commands:\n" + "\n".join(listed)


async def apply(sessions: Sessions[S], session: Session, result: CommandResult) -> PromptResult:
    match result:
        case Reply(message=message) if message == HELP:
            return Handled(help_text(session.workspace))
        case Reply(message=message):
            return Handled(message)
        case ChangeMode(mode=mode):
            session.set_mode(mode)
            return Handled(mode_text(session.mode))
        case ChangeModel(model=model):
            try:
                await session.choose_model(model)
            except InvalidParams as err:
                return Handled(err.message)
            return Handled(f"Model: {session.model} (from the next turn)")
        case ChangeThinking(thinking=thinking):
            session.set_thinking(thinking)
            note = thinking_note(thinking, session.provider.spec(session.model))
            return Handled(f"Thinking: {thinking.describe()}" + (f" ({note})" if note else ""))
        case ClearQueue():
            return Handled(f"Cleared {session.clear_queue()} queued prompt(s).")
        case ListSessions():
            here = sessions.list(str(session.workspace), 20, with_empty=False)
            return Handled(format_sessions(here, session.id))
        case ListCheckpoints():
            try:
                rows = await rewinding.list_checkpoints(session)
            except InvalidParams as err:
                return Handled(err.message)
            return Handled(format_checkpoints(rows))
        case ListMcpServers():
            if session.mcp is None:
                return Handled(NO_SERVERS)
            return Handled(status_text(await session.mcp.refresh()))
        case RewindTo(turn_id=turn_id, dry_run=dry_run):
            return Handled(await rewinding.rewind_command(session, turn_id, dry_run=dry_run))
        case UndoRewind(undo_id=undo_id):
            return Handled(await rewinding.undo_command(session, undo_id))
        case Compact():
            if session.busy:
                return Handled("A turn is running: /compact once it has ended.")
            shorter = await compact(session)
            return Handled("Compacted the conversation." if shorter else "Nothing to compact.")
        case SteerTurn(text=text):
            steering = session.steer(text)
            if steering is None:
                return await turns.prompt(session, text)
            return Handled("Steering the running turn: the model gets it at its next step.")
        case Permissions(command=AddRule() as adding):
            # writing a rule may run git (keeping the local file out of git): off the loop
            return Handled(await asyncio.to_thread(add, session.workspace, session.trust, adding))
        case Permissions(command=command):
            return Handled(permissions(session, command))
        case DecideTrust(trusted=trusted):
            return Handled(await decide_trust(sessions, session, trusted))
        case NewSession() | ResumeSession() | ForkSession() | SliceSession():
            return await _switch(sessions, session, result)


UNTRUSTED_ALLOWED_TOOLS: Final = (
    "/{name} is the repository's and the folder is not trusted: its allowed-tools ({tools}) "
    "are left out, so its calls are asked as usual (/trust yes gives them)"
)
TRUST_SHOWN: Final = (
    "This folder is {state}. A trusted folder's settings files may run programs (hooks, MCP and "
    "language servers) and widen grants (allow rules, extra folders, environment); an "
    "untrusted one's only narrow them. /trust yes or /trust no decides it."
)
TRUST_THE_CLIENTS: Final = (
    "This folder's trust is decided by {by}: change it there (in VS Code: Manage Workspace Trust)."
)


async def decide_trust(sessions: Sessions[S], session: Session, trusted: bool | None) -> str:
    """``/trust``: show the folder's trust, or record the user's decision (in the user's own
    state, ``trust.record``) and apply it to every live session of the folder."""
    if trusted is None:
        return TRUST_SHOWN.format(state=session.trust.describe())
    if session.config.workspace_trust is not None:
        return TRUST_THE_CLIENTS.format(by=session.config.workspace_trust.by)
    where = await asyncio.to_thread(record, session.workspace, trusted)
    await sessions.retrust(session.workspace, Trust(trusted, "/trust"))
    if trusted:
        return (
            f"Trusted {session.workspace} (kept in {where}): its settings apply from the next "
            "call; its hooks from the next turn."
        )
    return (
        f"Not trusting {session.workspace} (kept in {where}): its settings run nothing and "
        "widen nothing."
    )


def permissions(session: Session, command: PermissionsCommand) -> str:
    """``/permissions``: the rules in force, or one added or removed (from the next call)."""
    match command:
        case ListRules():
            return format_rules(rules_in_force(session.settings(), session.grants))
        case AddRule():
            return add(session.workspace, session.trust, command)
        case RemoveRule(text=text):
            grants, said = remove(session.workspace, session.grants, text)
            session.set_grants(grants)
            return said
        case PermissionsUsage(message=message):
            return message


async def _switch(
    sessions: Sessions[S],
    session: Session,
    result: NewSession | ResumeSession | ForkSession | SliceSession,
) -> SwitchTo | Handled:
    try:
        match result:
            case NewSession():
                return SwitchTo(sessions.fresh(session, seat_of(session)), "Started a new session.")
            case ResumeSession(session_id=session_id):
                resumed = sessions.resume(session_id, session.roots, seat_of(session))
                return SwitchTo(resumed, f"Resumed session {session_id}.")
            case ForkSession(turn_id=turn_id):
                child = sessions.fork(session, None, turn_id)
                return SwitchTo(child, f"Forked into session {child.id}.")
            case SliceSession(spec=spec):
                child = await sessions.slice(session, None, spec)
                return SwitchTo(child, f"Sliced into session {child.id}.")
    except TillerError as err:
        return Handled(err.message)
