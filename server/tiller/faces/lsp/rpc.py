"""The pygls server: one table of handlers, the session's output mapped to notifications.

Each client request is a flat handler taking the server and its params, already structured
into a `protocol` dataclass (`tiller.faces.lsp.params`); `serve` registers them all with one error
mapping. Handlers are thin and async (never ``@server.thread()``): the turn runs as its own
task, so `tiller/interrupt` and friends are answered at once while a turn is busy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from tiller import __version__
from tiller import protocol as p
from tiller.core.config import Config, parse_config
from tiller.core.permissions.commands import (
    AddRule,
    add,
    listing_to_wire,
    remove,
    rules_in_force,
)
from tiller.core.session import rewind as rewinding
from tiller.core.session import session_commands
from tiller.core.session.session import Handled, Queued, Session, Started
from tiller.core.session.session_commands import SwitchTo
from tiller.core.session.sessions import Seat, Sessions, seat_of
from tiller.core.turn.approvals import (
    DENIED_BY_DEFAULT,
    PLAN_NOT_APPROVED,
    AgentRef,
    CheckpointAnswer,
    CheckpointStop,
    PlanAnswer,
    ToolAnswer,
)
from tiller.core.turn.events import Posted
from tiller.core.turn.scheduler import ToolCall
from tiller.errors import InvalidParams, TillerError
from tiller.extend.trust import Trust
from tiller.faces.common.wire import plain_dict_converter
from tiller.faces.lsp.attachments import attachments_of
from tiller.faces.lsp.diagnostics import RpcDiagnostics
from tiller.faces.lsp.diagnostics import offered as diagnostics_offered
from tiller.faces.lsp.params import structure_params
from tiller.faces.lsp.pygls_adapter import cancel_request, forget_request
from tiller.jsontypes import JSON
from tiller.model.models import effort_problem, thinking_problem
from tiller.protocol import State, Thinking, Todo, TrailItem
from tiller.runtime import Runtime
from tiller.tools.base import Preview
from tiller.workspace.edit_history import EditHistory
from tiller.workspace.roots import WorkspaceFolder, WorkspaceRoots

log = logging.getLogger(__name__)

MAX_REASON_CHARS = 200  # of a checkpoint answer's ``reason`` (it goes into tool results)


class TillerServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tiller", __version__, converter_factory=plain_dict_converter)
        self.sessions: Sessions[Runtime] | None = None
        self.session: Session | None = None  # the one this client shows
        self.background: set[asyncio.Future[Any]] = set()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Log only: a stray late answer must never pop "Error in server" up at the user.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    async def switch_to(self, session: Session) -> None:
        """Make ``session`` current: the old one is closed at once (its turn interrupted, its
        queue dropped) and waited for."""
        old, self.session = self.live_session(), session
        await self.live_sessions().switch(old, session)
        self.protocol.notify(p.TODOS, {"todos": [t.to_wire() for t in session.todos]})

    async def terminate(self) -> None:
        """SIGTERM: interrupt the turn (its commands' process groups die with it), then exit."""
        if self.sessions is not None and self.session is not None:
            await self.sessions.close(self.session, wait=3)
        logging.shutdown()
        os._exit(128 + signal.SIGTERM)

    def live_session(self) -> Session:
        if self.session is None:
            raise JsonRpcException("The server is not initialized yet", code=-32002)
        return self.session

    def live_sessions(self) -> Sessions[Runtime]:
        if self.sessions is None:
            raise JsonRpcException("The server is not initialized yet", code=-32002)
        return self.sessions


class RpcSink:
    def __init__(self, server: TillerServer) -> None:
        self.server = server

    def event(self, posted: Posted) -> None:
        self.server.protocol.notify(p.EVENT, posted.to_wire())

    def state(self, state: State) -> None:
        self.server.protocol.notify(p.STATE, state.to_wire())

    def todos(self, todos: tuple[Todo, ...]) -> None:
        self.server.protocol.notify(p.TODOS, {"todos": [t.to_wire() for t in todos]})


class RpcApprover:
    """Asks the client; fails closed; an interrupt sends ``$/cancelRequest``."""

    def __init__(self, server: TillerServer, config: Config) -> None:
        self.server = server
        self.config = config

    async def _ask(
        self, method: str, params: Mapping[str, Any], timeout: float | None = None
    ) -> Any:
        protocol = self.server.protocol
        msg_id = f"tiller-{os.urandom(6).hex()}"
        future = protocol.send_request_async(method, params, msg_id=msg_id)
        try:
            return await asyncio.wait_for(future, timeout)
        except (asyncio.CancelledError, TimeoutError):
            # Forget the request so a late answer is ignored quietly, then tell the client.
            cancel_request(protocol, msg_id)
            raise
        finally:
            forget_request(protocol, msg_id)  # pygls keeps _result_types of error answers

    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer:
        params = {
            "turnId": turn_id,
            "toolUseId": call.id,
            "name": call.name,
            "input": call.input,
            "preview": preview.to_wire(),
            **({"agent": agent.to_wire()} if agent is not None else {}),
        }
        try:
            answer = await self._ask(p.CONFIRM_TOOL, params)
        except Exception as err:
            log.warning("confirmTool failed, denying: %s", err)
            return DENIED_BY_DEFAULT
        decision = answer.get("decision") if isinstance(answer, dict) else None
        if decision not in ("allow", "allowSession", "allowAlways", "deny"):
            log.warning("malformed confirmTool answer, denying: %r", answer)
            return DENIED_BY_DEFAULT
        feedback = answer.get("feedback")
        asked = answer.get("asked") is not False  # false: the client could ask nobody
        return ToolAnswer(decision, feedback if isinstance(feedback, str) else None, asked)

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        try:
            params: p.ApprovePlanParams = {"turnId": turn_id, "plan": plan}
            answer = await self._ask(p.APPROVE_PLAN, params)
        except Exception as err:
            log.warning("approvePlan failed, not approved: %s", err)
            return PLAN_NOT_APPROVED
        if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
            log.warning("malformed approvePlan answer, not approved: %r", answer)
            return PLAN_NOT_APPROVED
        feedback = answer.get("feedback")
        mode = answer.get("mode", "acceptEdits")
        if mode not in ("acceptEdits", "default"):
            mode = "acceptEdits"
        return PlanAnswer(answer["approved"], feedback if isinstance(feedback, str) else None, mode)

    async def checkpoint(
        self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]
    ) -> CheckpointAnswer:
        params: p.CheckpointParams = {
            "turnId": turn_id,
            "toolsUsed": tools_used,
            "trail": [t.to_wire() for t in trail],
        }
        seconds = self.config.checkpoint_timeout_seconds
        try:
            answer = await self._ask(p.CHECKPOINT, params, timeout=seconds)
        except TimeoutError:
            log.warning("checkpoint unanswered after %ss: stopping", seconds)
            return CheckpointStop(f"no answer to the checkpoint within {seconds:g} s")
        except Exception as err:
            log.warning("checkpoint failed, stopping: %s", err)
            return CheckpointStop("the client could not be asked whether to continue")
        if isinstance(answer, dict) and answer.get("continue") is True:
            return True
        reason = answer.get("reason") if isinstance(answer, dict) else None
        if isinstance(reason, str) and reason.strip():
            return CheckpointStop(reason.strip()[:MAX_REASON_CHARS])
        return False


def workspace_roots(params: types.InitializeParams) -> WorkspaceRoots:
    """Every folder of ``workspaceFolders`` (the first is the primary root), else ``rootUri``,
    ``rootPath``, the current directory."""
    folders = [
        (Path(path).resolve(), folder.name or None)
        for folder in params.workspace_folders or ()
        if (path := to_fs_path(folder.uri))
    ]
    if folders:
        return WorkspaceRoots.named(folders)
    path = to_fs_path(params.root_uri) if params.root_uri else params.root_path
    return WorkspaceRoots.of(Path(path or os.getcwd()).resolve())


def folders_changed(ls: TillerServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """``workspace/didChangeWorkspaceFolders``: the current session's roots follow from its
    next turn (the primary folder stays: its settings are the session's)."""
    added = [
        WorkspaceFolder.of(Path(path).resolve(), f.name or None)
        for f in params.event.added
        if (path := to_fs_path(f.uri))
    ]
    removed = [Path(path) for f in params.event.removed if (path := to_fs_path(f.uri))]
    session = ls.live_session()
    ls.live_sessions().change_roots(session, session.roots.changed(added, removed))


# --- handlers: one per client request, (server, params) -> the answer -----------------------


async def prompt(ls: TillerServer, params: p.PromptParams) -> p.PromptResult:
    session = ls.live_session()
    attached = await attachments_of(params.attachments, session)
    match await session_commands.prompt(ls.live_sessions(), session, params.text, attached):
        case Started(turn_id=turn_id):
            return {"status": "started", "turnId": turn_id}
        case Queued(position=position):
            return {"status": "queued", "queuePosition": position}
        case Handled(message=message):
            return {"status": "handled", "message": message}
        case SwitchTo(session=session, message=message):
            await ls.switch_to(session)
            return {"status": "handled", "message": message}


async def steer(ls: TillerServer, params: p.SteerParams) -> p.SteerResult:
    """To the running turn at its next step; with none running, a prompt."""
    session = ls.live_session()
    steering = session.steer(params.text, params.turn_id)
    if steering is not None:
        return {"status": "steered", "turnId": steering.turn_id}
    return cast(p.SteerResult, dict(await prompt(ls, p.PromptParams(params.text))))


async def permissions(ls: TillerServer, params: p.NoParams) -> JSON:
    session = ls.live_session()
    return listing_to_wire(rules_in_force(session.settings(), session.grants))


async def permissions_add(ls: TillerServer, params: p.AddRuleParams) -> JSON:
    session = ls.live_session()
    rule = AddRule(params.effect, params.rule, params.scope)
    # writing a rule may run git (keeping the local file out of git): off the loop
    message = await asyncio.to_thread(add, session.workspace, session.trust, rule)
    listing = listing_to_wire(rules_in_force(session.settings(), session.grants))
    return {**listing, "message": message}


async def permissions_remove(ls: TillerServer, params: p.RemoveRuleParams) -> JSON:
    session = ls.live_session()
    grants, message = remove(session.workspace, session.grants, params.rule)
    session.set_grants(grants)
    return {**listing_to_wire(rules_in_force(session.settings(), grants)), "message": message}


async def interrupt(ls: TillerServer, params: p.InterruptParams) -> p.InterruptResult:
    turn_id = ls.live_session().interrupt(params.turn_id)
    return {"interrupted": True, "turnId": turn_id} if turn_id else {"interrupted": False}


async def cycle_mode(ls: TillerServer, params: p.NoParams) -> p.ModeResult:
    return {"mode": ls.live_session().cycle_mode()}


async def set_mode(ls: TillerServer, params: p.SetModeParams) -> p.ModeResult:
    session = ls.live_session()
    session.set_mode(params.mode)
    return {"mode": session.mode}


async def set_model(ls: TillerServer, params: p.SetModelParams) -> p.ModelResult:
    return {"model": await ls.live_session().choose_model(params.model.strip())}


async def set_workspace_trust(
    ls: TillerServer, params: p.SetWorkspaceTrustParams
) -> p.WorkspaceTrustWire:
    """The client's decision for its workspace (VS Code granted its workspace trust): applied
    to every live session of the folder at once; the client keeps it, Tiller records nothing."""
    session = ls.live_session()
    await ls.live_sessions().retrust(session.workspace, Trust(params.trusted, params.by))
    return {"trusted": session.trust.trusted, "by": session.trust.by}


async def mcp_list(ls: TillerServer, params: p.McpListParams) -> JSON:
    """The MCP servers of the current session's workspace (started first with ``start``)."""
    manager = ls.live_sessions().runtime.mcp(ls.live_session().workspace)
    if params.start:
        await manager.refresh()
    return {
        "servers": [status.to_wire() for status in manager.status()],
        "problems": list(manager.problems),
    }


async def list_models(ls: TillerServer, params: p.NoParams) -> JSON:
    session, provider = ls.live_session(), ls.live_session().provider
    try:
        ids = [m.id for m in await provider.list_models()]
    except TillerError as err:
        log.warning("listing models failed: %s", err)
        ids = []
    if session.model not in ids:
        ids.insert(0, session.model)
    return {"models": [provider.spec(i).to_wire() for i in ids], "current": session.model}


async def list_commands(ls: TillerServer, params: p.NoParams) -> JSON:
    """Built-in and custom slash commands (read now: a new file shows at once)."""
    workspace = ls.live_session().workspace
    return {"commands": [c.to_wire() for c in session_commands.list_commands(workspace)]}


async def set_thinking(ls: TillerServer, params: p.SetThinkingParams) -> p.ThinkingWire:
    session = ls.live_session()
    thinking = Thinking(
        params.enabled,
        p.kept(params.budget_tokens, session.thinking.budget_tokens),
        p.kept(params.effort, session.thinking.effort),
    )
    spec = session.provider.spec(session.model)
    if (problem := effort_problem(thinking, spec)) is not None:
        raise InvalidParams(f"params.effort: {problem}")
    if (problem := thinking_problem(thinking, spec, session.config.max_tokens)) is not None:
        raise InvalidParams(f"params.budgetTokens: {problem}")
    return session.set_thinking(thinking).to_wire()


async def get_state(ls: TillerServer, params: p.NoParams) -> p.StateWire:
    return ls.live_session().state().to_wire()


async def get_todos(ls: TillerServer, params: p.NoParams) -> p.TodoBoard:
    return {"todos": [t.to_wire() for t in ls.live_session().todos]}


async def clear_queue(ls: TillerServer, params: p.NoParams) -> p.ClearQueueResult:
    return {"cleared": ls.live_session().clear_queue()}


async def _switch(ls: TillerServer, target: Session) -> p.StateWire:
    await ls.switch_to(target)
    return target.state().to_wire()


async def session_new(ls: TillerServer, params: p.NoParams) -> p.StateWire:
    current = ls.live_session()
    return await _switch(ls, ls.live_sessions().fresh(current, seat_of(current)))


async def session_resume(ls: TillerServer, params: p.SessionResumeParams) -> p.StateWire:
    current = ls.live_session()
    resumed = ls.live_sessions().resume(params.session_id, current.roots, seat_of(current))
    return await _switch(ls, resumed)


async def session_fork(ls: TillerServer, params: p.SessionForkParams) -> p.StateWire:
    forked = ls.live_sessions().fork(ls.live_session(), params.session_id, params.turn_id)
    return await _switch(ls, forked)


async def session_slice(ls: TillerServer, params: p.SessionSliceParams) -> p.StateWire:
    child = await ls.live_sessions().slice(ls.live_session(), params.session_id, params.spec)
    return await _switch(ls, child)


async def session_list(ls: TillerServer, params: p.SessionListParams) -> JSON:
    where = params.workspace or str(ls.live_session().workspace)
    workspace = None if where == "all" else (where.rstrip("/") or "/")
    rows = ls.live_sessions().list(workspace, with_empty=False)
    return {"sessions": [row.to_wire() for row in rows]}


async def session_transcript(ls: TillerServer, params: p.SessionTranscriptParams) -> p.Transcript:
    session = ls.live_session()
    session_id = session.id if params.session_id is None else params.session_id
    if session_id != session.id and session.store.row(session_id) is None:
        raise InvalidParams(f"unknown sessionId {session_id!r}")
    entries, more = session.store.transcript(session_id, params.before, params.limit)
    return {"entries": entries, "more": more}


async def checkpoints(ls: TillerServer, params: p.CheckpointsParams) -> JSON:
    rows = await rewinding.list_checkpoints(ls.live_session(), params.session_id)
    return {"checkpoints": [row.to_wire() for row in rows]}


async def rewind(ls: TillerServer, params: p.RewindParams) -> JSON:
    return await rewinding.rewind(
        ls.live_session(), params.turn_id, files=params.files,
        conversation=params.conversation, dry_run=params.dry_run,
    )  # fmt: skip


async def undo_rewind(ls: TillerServer, params: p.UndoRewindParams) -> JSON:
    return await rewinding.undo_rewind(ls.live_session(), params.undo_id)


async def edit(ls: TillerServer, params: p.EditParams) -> JSON:
    kept = EditHistory(ls.live_session().store.db).find(params.tool_use_id)
    if kept is None:
        raise InvalidParams(f"params.toolUseId: no finished edit {params.tool_use_id!r} is kept")
    return kept.to_wire()


Answer = Mapping[str, Any]
Handler = Callable[[TillerServer, Any], Awaitable[Answer]]
Route = tuple[type[Any], Handler]
P = TypeVar("P")


def route(params: type[P], handler: Callable[[TillerServer, P], Awaitable[Answer]]) -> Route:
    """A table entry: mypy checks that ``handler`` takes ``params``."""
    return params, handler


HANDLERS: Final[dict[str, Route]] = {
    p.PROMPT: route(p.PromptParams, prompt),
    p.EDIT: route(p.EditParams, edit),
    p.INTERRUPT: route(p.InterruptParams, interrupt),
    p.CYCLE_MODE: route(p.NoParams, cycle_mode),
    p.SET_MODE: route(p.SetModeParams, set_mode),
    p.SET_WORKSPACE_TRUST: route(p.SetWorkspaceTrustParams, set_workspace_trust),
    p.SET_MODEL: route(p.SetModelParams, set_model),
    p.LIST_MODELS: route(p.NoParams, list_models),
    p.LIST_COMMANDS: route(p.NoParams, list_commands),
    p.SET_THINKING: route(p.SetThinkingParams, set_thinking),
    p.GET_STATE: route(p.NoParams, get_state),
    p.GET_TODOS: route(p.NoParams, get_todos),
    p.CLEAR_QUEUE: route(p.NoParams, clear_queue),
    p.SESSION_LIST: route(p.SessionListParams, session_list),
    p.SESSION_NEW: route(p.NoParams, session_new),
    p.SESSION_RESUME: route(p.SessionResumeParams, session_resume),
    p.SESSION_FORK: route(p.SessionForkParams, session_fork),
    p.SESSION_SLICE: route(p.SessionSliceParams, session_slice),
    p.SESSION_TRANSCRIPT: route(p.SessionTranscriptParams, session_transcript),
    p.CHECKPOINTS: route(p.CheckpointsParams, checkpoints),
    p.REWIND: route(p.RewindParams, rewind),
    p.UNDO_REWIND: route(p.UndoRewindParams, undo_rewind),
    p.STEER: route(p.SteerParams, steer),
    p.PERMISSIONS: route(p.NoParams, permissions),
    p.PERMISSIONS_ADD: route(p.AddRuleParams, permissions_add),
    p.PERMISSIONS_REMOVE: route(p.RemoveRuleParams, permissions_remove),
    p.MCP_LIST: route(p.McpListParams, mcp_list),
}
"""Every client request (`protocol.CLIENT_REQUESTS`): its params and its handler."""


def serve(server: TillerServer, method: str, params_type: type[Any], handler: Handler) -> None:
    """Register ``handler`` for ``method``: params structured first; a `TillerError` is
    -32602 (`InvalidParams`, or a number too large for where it goes) or -32603."""

    async def answer(ls: TillerServer, raw: Any) -> Answer:
        try:
            return await handler(ls, structure_params(params_type, raw))
        except InvalidParams as err:
            raise JsonRpcInvalidParams(err.message) from err
        except OverflowError as err:
            raise JsonRpcInvalidParams(f"a number in the params is out of range: {err}") from err
        except TillerError as err:
            raise JsonRpcException(err.message, code=-32603) from err

    server.feature(method)(answer)


# --- the LSP lifecycle ------------------------------------------------------------------------


def initialize(ls: TillerServer, params: types.InitializeParams) -> None:
    try:
        config = parse_config(params.initialization_options)
        runtime = Runtime(config)
    except TillerError as err:  # ConfigError included
        raise JsonRpcInvalidParams(err.message) from err
    ls.sessions = Sessions(runtime)
    seat = Seat(RpcSink(ls), RpcApprover(ls, config))
    if diagnostics_offered(params.capabilities):
        seat = replace(seat, diagnostics=RpcDiagnostics(ls.protocol))
    ls.session = ls.sessions.create(workspace_roots(params), seat)


def initialized(ls: TillerServer, params: Any) -> None:
    session, sessions = ls.live_session(), ls.live_sessions()
    session.publish()
    sessions.greet(session)
    sessions.runtime.warm_up(session.workspace)
    asyncio.get_running_loop().add_signal_handler(
        signal.SIGTERM, lambda: ls.background.add(asyncio.ensure_future(ls.terminate()))
    )


async def shutdown(ls: TillerServer, params: Any) -> None:
    if ls.sessions is not None and ls.session is not None:  # at once: the queue is dropped
        await ls.sessions.close(ls.session)
    if ls.sessions is not None:  # MCP servers stop with us (the supervisor covers kill -9)
        await ls.sessions.runtime.close()


def build_server() -> TillerServer:
    server = TillerServer()
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(folders_changed)
    for method, (params_type, handler) in HANDLERS.items():
        serve(server, method, params_type, handler)
    return server
