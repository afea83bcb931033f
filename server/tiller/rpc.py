"""The pygls server: parse params, call the session, map its output to notifications.

Handlers are thin and async (never ``@server.thread()``): the turn runs as its own task, so
`tiller/interrupt` and friends are answered at once while a turn is busy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__, rewinding, session_commands
from . import protocol as p
from .approvals import DENIED_BY_DEFAULT, PLAN_NOT_APPROVED, PlanAnswer, ToolAnswer
from .config import Config, parse_config, parse_thinking
from .errors import ConfigError, InvalidParams, TillerError
from .events import Posted
from .jsontypes import JSON
from .models import thinking_problem
from .protocol import MODES, State, Todo, TrailItem
from .pygls_adapter import cancel_request, forget_request
from .runtime import Runtime
from .scheduler import ToolCall
from .session import Handled, Queued, Session, Started
from .session_commands import SwitchTo
from .sessions import Seat, Sessions, seat_of
from .tools.base import Preview
from .wire import plain_dict_converter

log = logging.getLogger(__name__)
T = TypeVar("T")


class TillerServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tiller", __version__, converter_factory=plain_dict_converter)
        self.sessions: Sessions | None = None
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

    def live_sessions(self) -> Sessions:
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

    async def _ask(self, method: str, params: JSON, timeout: float | None = None) -> Any:
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

    async def confirm_tool(self, turn_id: str, call: ToolCall, preview: Preview) -> ToolAnswer:
        params = {
            "turnId": turn_id,
            "toolUseId": call.id,
            "name": call.name,
            "input": call.input,
            "preview": preview.to_wire(),
        }
        try:
            answer = await self._ask(p.CONFIRM_TOOL, params)
        except Exception as err:
            log.warning("confirmTool failed, denying: %s", err)
            return DENIED_BY_DEFAULT
        decision = answer.get("decision") if isinstance(answer, dict) else None
        if decision not in ("allow", "allowSession", "deny"):
            log.warning("malformed confirmTool answer, denying: %r", answer)
            return DENIED_BY_DEFAULT
        feedback = answer.get("feedback")
        return ToolAnswer(decision, feedback if isinstance(feedback, str) else None)

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        try:
            answer = await self._ask(p.APPROVE_PLAN, {"turnId": turn_id, "plan": plan})
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

    async def checkpoint(self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]) -> bool:
        params = {"turnId": turn_id, "toolsUsed": tools_used, "trail": [t.to_wire() for t in trail]}
        try:
            answer = await self._ask(
                p.CHECKPOINT, params, timeout=self.config.checkpoint_timeout_seconds
            )
        except TimeoutError:
            log.warning(
                "checkpoint unanswered after %ss: stopping", self.config.checkpoint_timeout_seconds
            )
            return False
        except Exception as err:
            log.warning("checkpoint failed, stopping: %s", err)
            return False
        return isinstance(answer, dict) and answer.get("continue") is True


def workspace_root(params: types.InitializeParams) -> Path:
    if params.workspace_folders:
        path = to_fs_path(params.workspace_folders[0].uri)
    elif params.root_uri:
        path = to_fs_path(params.root_uri)
    else:
        path = params.root_path
    return Path(path or os.getcwd()).resolve()


# --- params -----------------------------------------------------------------------------------


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _obj(params: Any) -> JSON:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidParams("params must be an object")
    return params


def _field(params: Any, key: str, kind: type[T], what: str) -> T:
    value = _obj(params).get(key)
    if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
        raise InvalidParams(f"'{key}' is required and must be {what}")
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise InvalidParams(f"'{key}' is out of range")
    return value


def _int(params: Any, key: str, default: int | None, low: int, high: int) -> int | None:
    """An optional integer param within [low, high] (-32602 otherwise, never an overflow)."""
    value = _obj(params).get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidParams(f"'{key}' must be an integer from {low} to {high}")
    return value


def _mode(params: Any) -> p.Mode:
    mode = _field(params, "mode", str, "a string")
    for known in MODES:
        if mode == known:
            return known
    raise InvalidParams(f"unknown mode {mode!r}: expected one of {', '.join(MODES)}")


Handler = Callable[[TillerServer, Any], Coroutine[Any, Any, Any]]


def _request(server: TillerServer, method: str) -> Callable[[Handler], Handler]:
    """Register a custom request; TillerError -> -32602 with its message."""

    def register(handler: Handler) -> Handler:
        async def wrapped(ls: TillerServer, params: Any) -> Any:
            try:
                return await handler(ls, params)
            except InvalidParams as err:
                raise JsonRpcInvalidParams(err.message) from err
            except OverflowError as err:  # a number too large for where it goes
                raise JsonRpcInvalidParams(
                    f"a number in the params is out of range: {err}"
                ) from err
            except TillerError as err:
                raise JsonRpcException(err.message, code=-32603) from err

        server.feature(method)(wrapped)
        return handler

    return register


def build_server() -> TillerServer:
    server = TillerServer()

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: TillerServer, params: types.InitializeParams) -> None:
        try:
            config = parse_config(params.initialization_options)
            runtime = Runtime(config)
        except ConfigError as err:
            raise JsonRpcInvalidParams(err.message) from err
        except TillerError as err:
            raise JsonRpcInvalidParams(err.message) from err
        ls.sessions = Sessions(runtime)
        seat = Seat(RpcSink(ls), RpcApprover(ls, config))
        ls.session = ls.sessions.create(workspace_root(params), seat)

    @server.feature(types.INITIALIZED)
    def on_initialized(ls: TillerServer, params: Any) -> None:
        session, sessions = ls.live_session(), ls.live_sessions()
        session.publish()
        sessions.greet(session)
        sessions.runtime.warm_up(session.workspace)
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGTERM, lambda: ls.background.add(asyncio.ensure_future(ls.terminate()))
        )

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: TillerServer, params: Any) -> None:
        if ls.sessions is not None and ls.session is not None:  # at once: the queue is dropped
            await ls.sessions.close(ls.session)

    @_request(server, p.PROMPT)
    async def prompt(ls: TillerServer, params: Any) -> JSON:
        text = _field(params, "text", str, "a string")
        if not text.strip():
            raise InvalidParams("'text' must not be empty")
        match await session_commands.prompt(ls.live_sessions(), ls.live_session(), text):
            case Started(turn_id=turn_id):
                return {"status": "started", "turnId": turn_id}
            case Queued(position=position):
                return {"status": "queued", "queuePosition": position}
            case Handled(message=message):
                return {"status": "handled", "message": message}
            case SwitchTo(session=session, message=message):
                await ls.switch_to(session)
                return {"status": "handled", "message": message}

    @_request(server, p.INTERRUPT)
    async def interrupt(ls: TillerServer, params: Any) -> JSON:
        only = _obj(params).get("turnId")
        if only is not None and not isinstance(only, str):
            raise InvalidParams("'turnId' must be a string")
        turn_id = ls.live_session().interrupt(only)
        return {"interrupted": True, "turnId": turn_id} if turn_id else {"interrupted": False}

    @_request(server, p.CYCLE_MODE)
    async def cycle_mode(ls: TillerServer, params: Any) -> JSON:
        _obj(params)
        return {"mode": ls.live_session().cycle_mode()}

    @_request(server, p.SET_MODE)
    async def set_mode(ls: TillerServer, params: Any) -> JSON:
        mode = _mode(params)
        session = ls.live_session()
        session.set_mode(mode)
        return {"mode": session.mode}

    @_request(server, p.SET_MODEL)
    async def set_model(ls: TillerServer, params: Any) -> JSON:
        model = _field(params, "model", str, "a string").strip()
        if not model:
            raise InvalidParams("'model' must not be empty")
        return {"model": await ls.live_session().choose_model(model)}

    @_request(server, p.LIST_MODELS)
    async def list_models(ls: TillerServer, params: Any) -> JSON:
        _obj(params)
        session, provider = ls.live_session(), ls.live_session().provider
        try:
            ids = [m.id for m in await provider.list_models()]
        except TillerError as err:
            log.warning("listing models failed: %s", err)
            ids = []
        if session.model not in ids:
            ids.insert(0, session.model)
        return {"models": [provider.spec(i).to_wire() for i in ids], "current": session.model}

    @_request(server, p.SET_THINKING)
    async def set_thinking(ls: TillerServer, params: Any) -> JSON:
        session = ls.live_session()
        try:
            thinking = parse_thinking(_obj(params), "params", base=session.thinking)
        except ConfigError as err:
            raise InvalidParams(err.message) from err
        spec = session.provider.spec(session.model)
        problem = thinking_problem(thinking, spec, session.config.max_tokens)
        if problem is not None:
            raise InvalidParams(f"params.budgetTokens: {problem}")
        return session.set_thinking(thinking).to_wire()

    @_request(server, p.GET_STATE)
    async def get_state(ls: TillerServer, params: Any) -> JSON:
        _obj(params)
        return ls.live_session().state().to_wire()

    async def switch(ls: TillerServer, target: Session) -> JSON:
        await ls.switch_to(target)
        return target.state().to_wire()

    @_request(server, p.SESSION_NEW)
    async def session_new(ls: TillerServer, params: Any) -> JSON:
        _obj(params)
        return await switch(
            ls, ls.live_sessions().fresh(ls.live_session(), seat_of(ls.live_session()))
        )

    @_request(server, p.SESSION_RESUME)
    async def session_resume(ls: TillerServer, params: Any) -> JSON:
        session_id = _field(params, "sessionId", str, "a string")
        current = ls.live_session()
        resumed = ls.live_sessions().resume(session_id, current.workspace, seat_of(current))
        return await switch(ls, resumed)

    @_request(server, p.SESSION_FORK)
    async def session_fork(ls: TillerServer, params: Any) -> JSON:
        source, turn = _obj(params).get("sessionId"), _obj(params).get("turnId")
        for key, value in (("sessionId", source), ("turnId", turn)):
            if value is not None and not isinstance(value, str):
                raise InvalidParams(f"'{key}' must be a string")
        return await switch(ls, ls.live_sessions().fork(ls.live_session(), source, turn))

    @_request(server, p.SESSION_SLICE)
    async def session_slice(ls: TillerServer, params: Any) -> JSON:
        source = _obj(params).get("sessionId")
        if source is not None and not isinstance(source, str):
            raise InvalidParams("'sessionId' must be a string")
        spec = _field(params, "spec", str, "a string")
        child = await ls.live_sessions().slice(ls.live_session(), source, spec)
        return await switch(ls, child)

    @_request(server, p.SESSION_LIST)
    async def session_list(ls: TillerServer, params: Any) -> JSON:
        session = ls.live_session()
        where = _obj(params).get("workspace", str(session.workspace))
        if not isinstance(where, str) or not where:
            raise InvalidParams("'workspace' must be a folder path or \"all\"")
        workspace = None if where == "all" else (where.rstrip("/") or "/")
        return {"sessions": [row.to_wire() for row in ls.live_sessions().list(workspace)]}

    @_request(server, p.SESSION_TRANSCRIPT)
    async def session_transcript(ls: TillerServer, params: Any) -> JSON:
        session = ls.live_session()
        raw = _obj(params)
        session_id = raw.get("sessionId", session.id)
        before = _int(raw, "before", None, 0, INT64_MAX)  # an entry's seq (SQLite: int64)
        limit = _int(raw, "limit", 200, 1, 1000) or 200
        if not isinstance(session_id, str):
            raise InvalidParams("'sessionId' must be a string")
        if session_id != session.id and session.store.row(session_id) is None:
            raise InvalidParams(f"unknown sessionId {session_id!r}")
        entries, more = session.store.transcript(session_id, before, limit)
        return {"entries": entries, "more": more}

    @_request(server, p.CHECKPOINTS)
    async def checkpoints(ls: TillerServer, params: Any) -> JSON:
        session = ls.live_session()
        session_id = _obj(params).get("sessionId")
        if session_id is not None and not isinstance(session_id, str):
            raise InvalidParams("'sessionId' must be a string")
        rows = await rewinding.list_checkpoints(session, session_id)
        return {"checkpoints": [row.to_wire() for row in rows]}

    @_request(server, p.REWIND)
    async def rewind(ls: TillerServer, params: Any) -> JSON:
        raw = _obj(params)
        turn_id = _field(params, "turnId", str, "a string")
        flags = {}
        for key in ("files", "conversation", "dryRun"):
            value = raw.get(key, False)
            if not isinstance(value, bool):
                raise InvalidParams(f"'{key}' must be a boolean")
            flags[key] = value
        return await rewinding.rewind(
            ls.live_session(),
            turn_id, files=flags["files"], conversation=flags["conversation"],
            dry_run=flags["dryRun"],
        )  # fmt: skip

    @_request(server, p.UNDO_REWIND)
    async def undo_rewind(ls: TillerServer, params: Any) -> JSON:
        undo_id = _field(params, "undoId", str, "a string")
        return await rewinding.undo_rewind(ls.live_session(), undo_id)

    @_request(server, p.GET_TODOS)
    async def get_todos(ls: TillerServer, params: Any) -> JSON:
        _obj(params)
        return {"todos": [t.to_wire() for t in ls.live_session().todos]}

    @_request(server, p.CLEAR_QUEUE)
    async def clear_queue(ls: TillerServer, params: Any) -> JSON:
        _obj(params)
        return {"cleared": ls.live_session().clear_queue()}

    return server
