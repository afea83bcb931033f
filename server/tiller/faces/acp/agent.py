"""ACP requests mapped onto the core: one Tiller ``Session`` per ACP session, same loop.

``TillerAgent`` answers the client's requests; ``AcpSession`` is one session's ACP side: it is
the core's sink (events -> ``session/update``), owns the approver (``request_permission``)
and answers ``session/prompt`` when its turn's ``turnEnded`` has gone out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePath
from typing import Any, Final

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import (
    update_agent_message_text,
    update_available_commands,
    update_current_mode,
)
from acp.interfaces import Client
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AgentPlanUpdate,
    AuthenticateResponse,
    AvailableCommand,
    AvailableCommandInput,
    ClientCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    ForkSessionResponse,
    HttpMcpServer,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    UnstructuredCommandInput,
)
from pydantic import ValidationError

from tiller import __version__
from tiller.core.config import parse_config
from tiller.core.session import session_commands
from tiller.core.session.commands import CommandInfo, builtin_commands
from tiller.core.session.session import Handled, Queued, Started, new_id
from tiller.core.session.session_commands import SwitchTo
from tiller.core.session.sessions import Seat, Sessions, untrusted_notice
from tiller.core.turn.events import Posted
from tiller.errors import ConfigError, InvalidParams
from tiller.extend.mcp.config import acp_servers, session_config
from tiller.faces.acp.files import ClientFiles
from tiller.faces.acp.history import recent_transcript
from tiller.faces.acp.outbox import Outbox
from tiller.faces.acp.permissions import AcpApprover
from tiller.faces.acp.prompt_blocks import AcpPrompt, PromptBlock, invalid_params, prompt_of
from tiller.faces.acp.terminal import ClientTerminal
from tiller.faces.acp.updates import SessionUpdates, ToolCalls, plan_update, replay, turn_end
from tiller.jsontypes import JSON
from tiller.protocol import MODE_WORDS, MODES, Mode, State, Todo
from tiller.runtime import Runtime
from tiller.workspace.roots import WorkspaceRoots

log = logging.getLogger(__name__)

MODE_DESCRIPTIONS: Final[dict[Mode, str]] = {
    "default": "Ask before every edit and every command that may change anything",
    "acceptEdits": "Edit files without asking; still ask before commands",
    "plan": "Read-only: explore, then present a plan; nothing is written until you approve it "
            "(enforced by the agent, not the prompt)",
}  # fmt: skip
# Named by the words every other face uses (MODE_WORDS): "Ask before edits", "Accept edits".
MODE_INFO: Final[dict[Mode, tuple[str, str]]] = {
    mode: (MODE_WORDS[mode].capitalize(), description)
    for mode, description in MODE_DESCRIPTIONS.items()
}

# Slash commands that switch the current session: in ACP the editor owns which session is
# open (new thread, load), so these answer with a hint instead of switching.
SESSION_SWITCHES: Final = frozenset({"clear", "resume", "fork"})
NOT_ADVERTISED: Final = SESSION_SWITCHES | {"queue"}  # prompts queue in the editor
PAGE: Final = 100  # sessions per session/list page


def advertised_commands(commands: Sequence[CommandInfo] | None = None) -> list[AvailableCommand]:
    """The slash commands (built-in and the workspace's custom ones) that make sense over
    ACP."""
    found: dict[str, AvailableCommand] = {}
    for command in builtin_commands() if commands is None else commands:
        if command.name in NOT_ADVERTISED or command.name in found:
            continue
        hint = None
        if command.argument_hint:
            hint = AvailableCommandInput(root=UnstructuredCommandInput(hint=command.argument_hint))
        found[command.name] = AvailableCommand(
            name=command.name, description=command.description, input=hint
        )
    return list(found.values())


def workspace_of(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise invalid_params(f"cwd must be an absolute path, got {cwd!r}")
    if not path.is_dir():
        raise invalid_params(f"cwd {cwd!r} is not a directory")
    return path.resolve()


def roots_of(workspace: Path, additional: Sequence[str] | None) -> WorkspaceRoots:
    """The session's roots: ``cwd`` first, then ``additionalDirectories`` (absolute paths of
    existing directories, as for ``cwd``)."""
    extra = []
    for raw in additional or ():
        path = Path(raw)
        if not path.is_absolute():
            raise invalid_params(f"additionalDirectories must be absolute paths, got {raw!r}")
        if not path.is_dir():
            raise invalid_params(f"additional directory {raw!r} is not a directory")
        extra.append(path.resolve())
    return WorkspaceRoots.of(workspace, *extra)


class AcpSession:
    """One ACP session: the core's ``Session`` and its sink, approver and prompt gate."""

    def __init__(
        self,
        client: Client,
        sessions: Sessions[Runtime],
        session_id: str,
        roots: WorkspaceRoots,
        restore: bool,
        capabilities: ClientCapabilities,
    ) -> None:
        self.id = session_id
        self.sessions = sessions
        self.runtime = runtime = sessions.runtime
        self.workspace = workspace = roots.primary
        self.outbox = Outbox(client, session_id)
        self.calls = ToolCalls(workspace, roots=roots if roots.several else None)
        self.view = SessionUpdates(self.calls)
        config = runtime.config
        self.approver = AcpApprover(
            client,
            session_id,
            self.outbox,
            self.calls,
            config.checkpoint_timeout_seconds,
            # A question answered "cancelled" is the start of the turn's cancel.
            cancelled=self.cancel,
            # "Always allow" keeps a rule only where the folder's files may grant.
            trusted=lambda: self.session.trust.trusted,
        )
        self.lock = asyncio.Lock()  # one prompt at a time; the next waits for its turn
        self.cancels = 0  # bumped by session/cancel: prompts older than that answer cancelled
        self._background: set[asyncio.Task[None]] = set()
        seat = Seat(
            sink=self,
            approver=self.approver,
            # The editor's buffers when the client offers fs/*: tools see unsaved changes.
            editor=ClientFiles.offered(client, session_id, capabilities),
            # Its terminals, when offered, for the commands the user approves.
            terminal=ClientTerminal.offered(client, session_id, capabilities),
        )
        # resume(): the stored mode, model, thinking, todos and (repaired) history. A new
        # one is stored at once: session/load and session/list know it before any prompt.
        self.session = (
            sessions.resume(session_id, roots, seat)
            if restore
            else sessions.create(roots, seat, session_id=session_id, stored=True)
        )
        # A loaded session may work in the folders stored with it (its client named none).
        self.calls.roots = self.session.roots if self.session.roots.several else None
        if not restore:
            sessions.greet(self.session)
        self._shown_mode = self.session.mode
        self._shown_model = self.session.model
        self._shown_commands: list[AvailableCommand] = []
        self._shown_plan: AgentPlanUpdate | None = None

    # --- SessionSink ------------------------------------------------------------------------

    def event(self, posted: Posted) -> None:
        fields = posted.to_wire()
        if fields.get("type") == "turnEnded" and posted.parent_turn_id is None:
            self._send_plan(plan_update(self.session.todos, running=False))
            self.outbox.turn_ended(str(fields.get("turnId")), turn_end(fields))
        else:
            self.outbox.send(*self.view.updates(fields))

    def state(self, state: State) -> None:
        changed = False
        if state.mode != self._shown_mode:
            self._shown_mode = state.mode
            self.outbox.send(update_current_mode(state.mode))
            changed = True
        if state.model != self._shown_model:
            self._shown_model = state.model
            changed = True
        if changed:
            self._send_config_options()

    def todos(self, todos: tuple[Todo, ...]) -> None:
        self._send_plan(plan_update(todos))

    def _send_plan(self, plan: AgentPlanUpdate) -> None:
        """The plan, when it is not what the editor shows already (a client may draw each
        one as a new block: agent-shell does). Nothing to show before any plan: none."""
        if plan == self._shown_plan or (self._shown_plan is None and not plan.entries):
            return
        self._shown_plan = plan
        self.outbox.send(plan)

    # --- what the editor sees ---------------------------------------------------------------

    def modes(self) -> SessionModeState:
        return SessionModeState(
            current_mode_id=self.session.mode,
            available_modes=[
                SessionMode(id=mode, name=MODE_INFO[mode][0], description=MODE_INFO[mode][1])
                for mode in MODES
            ],
        )

    def config_options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        models = list(self.runtime.models)
        if not any(model_id == self.session.model for model_id, _ in models):
            models.insert(0, (self.session.model, self.session.model))
        return [
            SessionConfigOptionSelect(
                id="mode",
                name="Mode",
                category="mode",
                type="select",
                current_value=self.session.mode,
                options=[
                    SessionConfigSelectOption(
                        value=m, name=MODE_INFO[m][0], description=MODE_INFO[m][1]
                    )
                    for m in MODES
                ],
            ),
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                current_value=self.session.model,
                options=[SessionConfigSelectOption(value=i, name=n) for i, n in models],
            ),
        ]

    def _send_config_options(self) -> None:
        self.outbox.send(
            ConfigOptionUpdate(
                session_update="config_option_update", config_options=self.config_options()
            )
        )

    def tell(self, *notices: str) -> None:
        """Notices for the user (what is wrong with the MCP servers the client passed)."""
        for text in notices:
            self.session.say(text)

    def announce(self) -> None:
        """After session/new or session/load answered: the commands, the plan, the models,
        and (ACP has no notices) a line saying the folder is not trusted, when its files hold
        something left out: /trust is among the commands."""
        self._announce_commands()
        decides = self.runtime.config.workspace_trust is not None
        untrusted = untrusted_notice(self.session.settings(), decides)
        if untrusted is not None:
            self.outbox.send(update_agent_message_text(f"*{untrusted}*\n\n"))
        self._send_plan(plan_update(self.session.todos, running=self.session.busy))
        if not self.runtime.models:
            task = asyncio.get_running_loop().create_task(self._list_models())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _announce_commands(self) -> None:
        """The slash commands, when they are not what the editor was last sent (a custom
        command file added or removed shows at the next prompt)."""
        listed = advertised_commands(session_commands.list_commands(self.session.workspace))
        if listed != self._shown_commands:
            self._shown_commands = listed
            self.outbox.send(update_available_commands(listed))

    async def _list_models(self) -> None:
        if await self.runtime.list_models():
            self._send_config_options()

    # --- requests ---------------------------------------------------------------------------

    async def prompt(self, asked: AcpPrompt) -> PromptResponse:
        text = asked.text
        steer = text.strip()
        if steer.startswith("/steer ") and self.session.steer(steer[len("/steer ") :].strip()):
            # ACP answers each prompt with its own turn's end, so a prompt sent while a turn
            # runs waits for it; ``/steer TEXT`` is answered at once and reaches the running
            # turn at its next step (the ``steered`` update says when).
            return await self._say("Steering the running turn: the model gets it at its next step.")
        asked_at = self.cancels
        async with self.lock:
            if self.cancels != asked_at:
                return PromptResponse(stop_reason="cancelled")
            self._announce_commands()
            words = text.strip().split(maxsplit=1)
            command = words[0][1:] if words and words[0].startswith("/") else ""
            if command in SESSION_SWITCHES:
                return await self._say(
                    f"/{command} is not available here: start a new thread, or load or "
                    "fork one, from the editor."
                )
            attached = () if command else await asked.attachments(self.session)
            match await session_commands.prompt(self.sessions, self.session, text, attached):
                case Started(turn_id=turn_id):
                    end = await self.outbox.ending(turn_id)
                case Handled() | SwitchTo():  # the ``command`` event said the answer
                    await self.outbox.flush()
                    return PromptResponse(stop_reason="end_turn")
                case Queued():  # prompts run one at a time here; wait for the queue anyway
                    await self.session.wait_idle()
                    return PromptResponse(stop_reason="end_turn")
        if self.cancels != asked_at:
            return PromptResponse(stop_reason="cancelled")
        if end.error is not None:
            kind, message = end.error.get("kind", "internal"), end.error.get("message", "")
            raise RequestError(-32603, f"{kind}: {message}", end.error)
        return PromptResponse(stop_reason=end.stop_reason or "end_turn")

    async def _say(self, message: str) -> PromptResponse:
        self.outbox.send(update_agent_message_text(message))
        await self.outbox.flush()
        return PromptResponse(stop_reason="end_turn")

    def cancel(self) -> None:
        self.cancels += 1
        self.session.interrupt()

    async def close(self, wait: float = 3.0) -> None:
        """Interrupt a running turn (its history is repaired and saved), then stop sending."""
        self.cancels += 1
        await self.sessions.close(self.session, wait)
        await self.outbox.close()


class TillerAgent:
    """The ACP agent side: initialize, sessions, prompt, cancel, modes, config options."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.sessions: Sessions[Runtime] | None = None
        self.client_capabilities = ClientCapabilities()
        self.seats: dict[str, AcpSession] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._refused: RequestError | None = None  # the early-answered initialize's failure

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    def _live(self) -> tuple[Client, Sessions[Runtime]]:
        if self.client is None or self.sessions is None:
            raise self._refused or RequestError(-32600, "Invalid request: call initialize first")
        return self.client, self.sessions

    def _session(self, session_id: str) -> AcpSession:
        found = self.seats.get(session_id)
        if found is None:
            raise invalid_params(
                f"unknown sessionId {session_id!r} (session/new or session/load first)"
            )
        return found

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        # Settings: the environment (ANTHROPIC_*, TILLER_MODEL, TILLER_DATA_DIR), or the
        # Tiller initializationOptions under initialize's ``_meta.tiller``.
        try:
            config = parse_config(kwargs.get("tiller"))
            runtime = Runtime(config)
        except ConfigError as err:
            raise invalid_params(err.message) from err
        if self.sessions is None:
            self.sessions = Sessions(runtime)
            runtime.warm_up(Path.cwd())
        self.client_capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    additional_directories=SessionAdditionalDirectoriesCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="tiller", title="Tiller", version=__version__),
        )

    async def initialize_answered(self, params: JSON) -> None:
        """Run the ``initialize`` answered before the SDK was loaded (`tiller.faces.acp.opening`),
        as the SDK's router would have. What was not checked before the answer can still fail
        here (the settings from the environment): every request that needs a session then
        answers with that error instead of "call initialize first"."""
        try:
            request = InitializeRequest.model_validate(params)
            fields = (name for name in InitializeRequest.model_fields if name != "field_meta")
            kwargs = {name: getattr(request, name) for name in fields}
            await self.initialize(**kwargs, **(request.field_meta or {}))
            return
        except RequestError as err:
            self._refused = err
        except ValidationError as err:
            self._refused = invalid_params(f"initialize: {err}")
        except Exception as err:  # what the SDK answers when a handler fails
            log.exception("initialize failed")
            self._refused = RequestError.internal_error({"details": str(err)})
        log.error("initialize, answered before the SDK was loaded, failed: %s", self._refused)

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise invalid_params(
            f"no authentication method {method_id!r}: set ANTHROPIC_API_KEY in the agent's env"
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio]
        | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        client, sessions = self._live()
        workspace = workspace_of(cwd)
        problems = await self._add_mcp_servers(sessions, workspace, mcp_servers)
        roots = roots_of(workspace, additional_directories)
        seat = AcpSession(client, sessions, new_id("ses"), roots, False, self.client_capabilities)
        self.seats[seat.id] = seat
        answer = NewSessionResponse(
            session_id=seat.id, modes=seat.modes(), config_options=seat.config_options()
        )
        seat.announce()  # queued last: the answer goes out before the writer runs
        seat.tell(*problems)
        return answer

    @staticmethod
    async def _add_mcp_servers(
        sessions: Sessions[Runtime],
        workspace: Path,
        servers: Sequence[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio] | None,
    ) -> tuple[str, ...]:
        """The MCP servers the client passed join the workspace's (they start when first
        needed); what is wrong with one is a notice naming it."""
        if not servers:
            return ()
        raw = [s.model_dump(mode="json", by_alias=True) for s in servers]
        passed = acp_servers(r for r in raw if r.get("type") != "acp")
        skipped = [f"MCP server {r.get('name')!r}: the 'acp' transport is not supported"
                   for r in raw if r.get("type") == "acp"]  # fmt: skip
        manager = sessions.runtime.mcp(workspace)
        problems = await manager.add_session_servers(session_config(passed))
        return tuple(f"MCP configuration: {p}" for p in (*skipped, *problems))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio]
        | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        client, sessions = self._live()
        workspace = workspace_of(cwd)
        if sessions.store.row(session_id) is None:
            raise invalid_params(f"unknown sessionId {session_id!r}: nothing stored under it")
        problems = await self._add_mcp_servers(sessions, workspace, mcp_servers)
        old = self.seats.pop(session_id, None)
        if old is not None:
            await old.close()
        try:
            roots = roots_of(workspace, additional_directories)
            seat = AcpSession(client, sessions, session_id, roots, True, self.client_capabilities)
        except InvalidParams as err:
            raise invalid_params(err.message) from err
        self.seats[session_id] = seat
        # The recent part of the history (its last prompts), after a line if more was left.
        shown = recent_transcript(sessions.store, session_id)
        seat.outbox.send(*replay(shown.entries, workspace, shown.left_out))
        await seat.outbox.flush()  # the history is in the editor before the answer
        answer = LoadSessionResponse(modes=seat.modes(), config_options=seat.config_options())
        seat.announce()
        seat.tell(*problems)
        return answer

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        _, sessions = self._live()
        if cursor is not None and not cursor.isdigit():
            raise invalid_params(f"bad cursor {cursor!r}")
        start = int(cursor or 0)
        wanted = str(PurePath(cwd)) if cwd else None  # as given; sessions store resolved paths
        rows = sessions.list(wanted, start + PAGE + 1)
        page = rows[start : start + PAGE]
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r.id,
                    cwd=r.workspace,
                    additional_directories=[str(f.path) for f in r.roots] or None,
                    title=r.title or None,  # not prompted yet
                    updated_at=r.to_wire()["updatedAt"],
                )
                for r in page
            ],
            next_cursor=str(start + PAGE) if len(rows) > start + PAGE else None,
        )

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        seat = self._session(session_id)
        seat.session.set_mode(_mode(mode_id))
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        seat = self._session(session_id)
        if not isinstance(value, str) or not value.strip():
            raise invalid_params(f"{config_id!r} takes a non-empty string value")
        match config_id:
            case "mode":
                seat.session.set_mode(_mode(value))
            case "model":
                seat.session.set_model(value.strip())
            case _:
                raise invalid_params(f"unknown config option {config_id!r}: mode, model")
        return SetSessionConfigOptionResponse(config_options=seat.config_options())

    async def prompt(
        self,
        session_id: str,
        prompt: list[PromptBlock],
        **kwargs: Any,
    ) -> PromptResponse:
        seat = self._session(session_id)
        asked = prompt_of(prompt, seat.workspace)
        if not asked.text.strip():
            if not asked.attached and not asked.links:
                raise invalid_params("the prompt is empty")
            asked = replace(asked, text="See the attachments.")  # the words are the last block
        return await seat.prompt(asked)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        seat = self.seats.get(session_id)
        if seat is not None:
            seat.cancel()

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio]
        | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio]
        | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        raise RequestError.method_not_found("session/resume")

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        raise RequestError.method_not_found("session/close")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("ignoring extension notification _%s", method)

    async def shutdown(self) -> None:
        """End of input or SIGTERM: interrupt every running turn; their history is saved;
        the MCP servers stop."""
        await asyncio.gather(*(seat.close() for seat in self.seats.values()))
        if self.sessions is not None:
            await self.sessions.runtime.close()


def _mode(mode_id: str) -> Mode:
    for mode in MODES:
        if mode == mode_id:
            return mode
    raise invalid_params(f"unknown mode {mode_id!r}: expected one of {', '.join(MODES)}")
