"""One language server as Tiller runs it, spoken to with pygls's own client and lsprotocol.

Started under the tools' supervisor (it and whatever it starts die with Tiller, even after
``kill -9``), in the workspace, with the tools' scrubbed environment; its stderr goes to
Tiller's log under its name. A file is opened (``didOpen``) the first time it is checked and
changed (``didChange``, whole text) when its text on disk changed since; its diagnostics are
then pulled (``textDocument/diagnostic``) when the server offers that, else awaited as
``publishDiagnostics`` for that version (for any version when the server sends none), and
debounced: a server that publishes in parts (syntax, then semantics) has until `QUIET_SECONDS`
pass without news. The caller bounds the whole wait; the end of the process ends every wait
at once (`LanguageServerFailed`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
from collections.abc import Awaitable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

from lsprotocol import types
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient

from tiller import __version__
from tiller.errors import LanguageServerFailed
from tiller.extend.language_servers.config import LanguageServerConfig
from tiller.protocol import DiagnosticSeverity
from tiller.workspace.diagnostics import Diagnostic
from tiller.workspace.supervised import supervised
from tiller.workspace.tool_env import EnvRules, tool_env

log = logging.getLogger(__name__)

QUIET_SECONDS: Final = 0.3  # no news this long after the first diagnostics of a version: settled
STOP_SECONDS: Final = 2.0  # shutdown's answer, then the supervisor ends it
SEVERITIES: Final[dict[types.DiagnosticSeverity, DiagnosticSeverity]] = {
    types.DiagnosticSeverity.Error: "error",
    types.DiagnosticSeverity.Warning: "warning",
    types.DiagnosticSeverity.Information: "information",
    types.DiagnosticSeverity.Hint: "hint",
}
T = TypeVar("T")


@dataclass(frozen=True)
class _Published:
    version: int | None
    diagnostics: tuple[types.Diagnostic, ...]


@dataclass(frozen=True)
class _Document:
    version: int
    text: str


class LanguageServer:
    """One running language server (``start`` first, ``stop`` at the end)."""

    def __init__(self, config: LanguageServerConfig, workspace: Path, rules: EnvRules) -> None:
        self.config = config
        self.workspace = workspace
        self.rules = rules
        self.client = LanguageClient("tiller", __version__)
        self.pull = False  # the server answers textDocument/diagnostic
        self.ready = False  # initialized: it answered ``initialize``
        self._documents: dict[str, _Document] = {}
        self._published: dict[str, _Published] = {}
        self._news = asyncio.Event()  # set (and replaced) at each publishDiagnostics
        self._process: asyncio.subprocess.Process | None = None
        self._exited: asyncio.Future[int] | None = None
        self._reading: asyncio.Future[None] | None = None
        self._stop_reading = threading.Event()
        self._register()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def running(self) -> bool:
        return self._exited is not None and not self._exited.done()

    # --- life ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the process and initialize it (the caller bounds the wait)."""
        program = self._program()
        env = tool_env(self.rules)
        read_err, write_err = os.pipe()
        _log_lines(read_err, self.name)
        status_read, status_write = os.pipe()  # the supervisor writes the exit code there
        try:
            process = await asyncio.create_subprocess_exec(
                *supervised([program, *self.config.command[1:]], os.getpid(), status_write),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=write_err,
                cwd=self.workspace,
                env=env,
                start_new_session=True,  # the terminal's ^C is Tiller's to handle, not its
                pass_fds=(status_write,),
            )  # fmt: skip
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(write_err)
            os.close(status_write)
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._exited = asyncio.ensure_future(_exit_code(process, status_read))
        self.client.protocol.set_writer(process.stdin)
        self._reading = asyncio.ensure_future(
            run_async(self._stop_reading, process.stdout, self.client.protocol, log)
        )
        root = self.workspace.as_uri()
        params = types.InitializeParams(
            process_id=os.getpid(),
            root_uri=root,
            root_path=str(self.workspace),
            workspace_folders=[types.WorkspaceFolder(root, self.workspace.name)],
            client_info=types.ClientInfo("tiller", __version__),
            capabilities=CAPABILITIES,
            initialization_options=self.config.initialization_options or None,
        )
        result = await self._or_exit(self.client.initialize_async(params))
        self.pull = result.capabilities.diagnostic_provider is not None
        self.client.initialized(types.InitializedParams())
        self.ready = True
        log.info("language server %s started (pid %s)", self.name, process.pid)

    async def stop(self, *, at_once: bool = False) -> None:
        """Ask it to shut down and exit (``at_once``: a hung one is not asked); its supervisor
        ends it if it does not in time, and whatever is left dies with Tiller."""
        process, exited = self._process, self._exited
        if process is None or exited is None:
            return
        if not exited.done() and not at_once:
            try:
                await asyncio.wait_for(
                    self._or_exit(self.client.shutdown_async(None)), STOP_SECONDS
                )
                self.client.exit(None)
                await asyncio.wait_for(asyncio.shield(exited), STOP_SECONDS)
            except (TimeoutError, LanguageServerFailed, ConnectionError, OSError) as err:
                log.info("language server %s did not stop on its own: %s", self.name, err)
        if not exited.done():
            process.terminate()  # its supervisor: it ends every process below it
            await asyncio.wait({exited}, timeout=STOP_SECONDS)
        self._stop_reading.set()
        if self._reading is not None:
            self._reading.cancel()

    def _program(self) -> str:
        """The command's program: looked up on the tools' PATH, or relative to the workspace
        when it names a path."""
        program = self.config.command[0]
        if "/" in program:
            found = self.workspace / program
            if not found.is_file():
                raise LanguageServerFailed(f"cannot start: no such program {found}", lasting=True)
            return str(found)
        located = shutil.which(program, path=tool_env(self.rules).get("PATH"))
        if located is None:
            raise LanguageServerFailed(f"cannot start: command not found: {program}", lasting=True)
        return located

    # --- diagnostics --------------------------------------------------------------------------

    async def diagnostics(self, path: Path, text: str) -> tuple[Diagnostic, ...]:
        """The diagnostics of ``path`` whose text is now ``text``, once the server settled."""
        uri = path.as_uri()
        known = self._documents.get(uri)
        document = self._sync(uri, path, text)
        if document == known and self._current(uri, document.version):
            pass  # told before, answered since: as it was
        elif self.pull:
            report = await self._or_exit(
                self.client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri))
                )
            )
            if isinstance(report, types.RelatedFullDocumentDiagnosticReport):
                self._published[uri] = _Published(document.version, tuple(report.items))
        else:
            await self._settled(uri, document.version)
        found = self._published.get(uri)
        return tuple(_converted(path, d) for d in (found.diagnostics if found else ()))

    def _sync(self, uri: str, path: Path, text: str) -> _Document:
        """Tell the server the file's text (open it, or change it when it changed)."""
        known = self._documents.get(uri)
        if known is not None and known.text == text:
            return known
        if known is None:
            document = _Document(1, text)
            item = types.TextDocumentItem(uri, self.config.language_of(path), 1, text)
            self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        else:
            document = _Document(known.version + 1, text)
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(document.version, uri),
                    [types.TextDocumentContentChangeWholeDocument(text)],
                )
            )
            self._published.pop(uri, None)  # what it said of the old text is stale
        self._documents[uri] = document
        return document

    async def _settled(self, uri: str, version: int) -> None:
        """Until the server published diagnostics for ``version`` of ``uri`` (for any version,
        when it sends none) and then said nothing more of it for `QUIET_SECONDS`."""
        while not self._current(uri, version):
            await self._or_exit(self._next_news())
        while True:
            try:
                await asyncio.wait_for(self._or_exit(self._next_news()), QUIET_SECONDS)
            except TimeoutError:
                return

    def _current(self, uri: str, version: int) -> bool:
        found = self._published.get(uri)
        return found is not None and found.version in (None, version)

    async def _next_news(self) -> None:
        await self._news.wait()

    async def _or_exit(self, work: Awaitable[T]) -> T:
        """``work``'s result, or `LanguageServerFailed` as soon as the process ends."""
        exited = self._exited
        if exited is None:
            raise LanguageServerFailed("is not running")
        task = asyncio.ensure_future(work)
        either: set[asyncio.Future[Any]] = {task, exited}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if task.done():
                pass
            elif isinstance(work, asyncio.Future):  # a request: left to a late answer, which
                task.add_done_callback(_dropped)  # a cancelled one would fail in pygls
            else:
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        raise LanguageServerFailed(f"exited (code {exited.result()})")

    # --- what the server sends ----------------------------------------------------------------

    def _register(self) -> None:
        """Handlers of what the server sends (pygls registers plain functions only)."""
        name = self.name

        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self._published[params.uri] = _Published(params.version, tuple(params.diagnostics))
            news, self._news = self._news, asyncio.Event()
            news.set()

        def on_message(params: types.LogMessageParams | types.ShowMessageParams) -> None:
            log.debug("language server %s: %s", name, params.message)

        def no_configuration(params: types.ConfigurationParams) -> list[Any]:
            """No settings of ours: each section asked gets null (the server's defaults)."""
            return [None for _ in params.items]

        feature = self.client.feature
        feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(on_publish)
        feature(types.WINDOW_LOG_MESSAGE)(on_message)
        feature(types.WINDOW_SHOW_MESSAGE)(partial(on_message))
        feature(types.WORKSPACE_CONFIGURATION)(no_configuration)
        for method in NOTHING_TO_SAY:
            feature(method)(partial(_nothing))


NOTHING_TO_SAY: Final = (
    types.CLIENT_REGISTER_CAPABILITY,
    types.CLIENT_UNREGISTER_CAPABILITY,
    types.WINDOW_WORK_DONE_PROGRESS_CREATE,
    types.WINDOW_SHOW_MESSAGE_REQUEST,
    types.PROGRESS,
    types.TELEMETRY_EVENT,
)
"""What the server may send that needs no more than a null answer (or none)."""


CAPABILITIES: Final = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        synchronization=types.TextDocumentSyncClientCapabilities(),
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        diagnostic=types.DiagnosticClientCapabilities(),
    ),
    workspace=types.WorkspaceClientCapabilities(workspace_folders=True, configuration=True),
)


def _dropped(answer: asyncio.Future[Any]) -> None:
    """A request's answer nobody waits for any more (its error is not worth a warning)."""
    if not answer.cancelled():
        answer.exception()


def _nothing(params: Any) -> None:
    return None


def _converted(path: Path, found: types.Diagnostic) -> Diagnostic:
    severity = SEVERITIES.get(found.severity or types.DiagnosticSeverity.Error, "error")
    start = found.range.start
    return Diagnostic(
        str(path), start.line + 1, start.character + 1, severity, found.message, found.source
    )


async def _exit_code(process: asyncio.subprocess.Process, status: int) -> int:
    """The server's exit code (minus the signal that ended it), as its supervisor saw it."""
    try:
        own = await process.wait()
        words = await asyncio.to_thread(os.read, status, 64)
        return int(words.split()[0]) if words else own
    except (OSError, ValueError):
        return -1
    finally:
        os.close(status)


def _log_lines(fd: int, name: str) -> None:
    """Each line written to ``fd`` goes to Tiller's log under the server's name."""

    def pump() -> None:
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                log.info("language server %s: %s", name, line.rstrip())

    threading.Thread(target=pump, name=f"language-server-{name}", daemon=True).start()
