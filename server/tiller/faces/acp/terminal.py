"""Approved commands in the editor's terminal through ACP ``terminal/*``.

The core's bash tool hands a command here (``EditorTerminal`` in ``tools/base.py``) only when
the user approved it and Tiller's settings would run it unconfined; commands that run without
asking stay in Tiller's sandbox. The command is ``bash -c command`` in a terminal the client
creates (and shows); its output is polled into the tool's live output; a time limit or a
cancellation kills it. A terminal that cannot be created leaves the command to Tiller's own
runner (None); once one was created, the command is never run a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from acp.interfaces import Client
from acp.schema import ClientCapabilities, EnvVariable

from tiller.tools.live_output import LiveOutput
from tiller.tools.shell import CommandRun

log = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.25  # how often the output is fetched for the live view


def exit_code_of(exit_code: int | None, signal_name: str | None) -> int | None:
    """ACP's exit status as Tiller's: the code, or minus the signal's number."""
    if exit_code is not None:
        return exit_code
    if signal_name:
        name = signal_name.upper()
        name = name if name.startswith("SIG") else f"SIG{name}"
        with contextlib.suppress(KeyError):
            return -signal.Signals[name].value
    return None


def terminal_env(env: Mapping[str, str]) -> list[EnvVariable]:
    """What the client's terminal must change in its environment to match ``env``.

    The terminal starts from the editor's environment, and ACP can set variables but not
    remove them: the secrets Tiller keeps from commands are set to "" there, and what Tiller
    sets for every command (``GIT_TERMINAL_PROMPT`` …) is set there too.
    """
    hidden = [EnvVariable(name=n, value="") for n in sorted(os.environ) if n not in env]
    added = [EnvVariable(name=n, value=v) for n, v in sorted(env.items()) if os.environ.get(n) != v]
    return hidden + added


@dataclass
class ClientTerminal:
    """One ACP session's commands in the client's terminals (the client offered them)."""

    client: Client
    session_id: str
    _releasing: set[asyncio.Task[None]] = field(default_factory=set)

    @staticmethod
    def offered(
        client: Client, session_id: str, capabilities: ClientCapabilities
    ) -> ClientTerminal | None:
        return ClientTerminal(client, session_id) if capabilities.terminal else None

    async def run(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        output_cap: int,
        live: LiveOutput | None,
    ) -> CommandRun | None:
        try:
            created = await self.client.create_terminal(
                session_id=self.session_id,
                command="bash",
                args=["-c", command],
                cwd=str(cwd),
                env=terminal_env(env),
                output_byte_limit=output_cap,
            )
        except Exception as err:  # the client could not start it: Tiller's runner will
            log.warning("terminal/create failed (%s); running the command here", err)
            return None
        terminal_id = created.terminal_id
        poller = asyncio.get_running_loop().create_task(self._poll(terminal_id, live))
        try:
            return await self._finish(terminal_id, time_limit)
        except Exception as err:
            log.warning("terminal %s failed (%s)", terminal_id, err)
            return CommandRun(f"(the editor's terminal failed: {err})", None)
        finally:
            poller.cancel()
            # Release kills the command if it still runs (a cancel, a failure); in the
            # background: an interrupt does not wait for the client.
            self._release_later(terminal_id)

    async def _finish(self, terminal_id: str, time_limit: float) -> CommandRun:
        ids = {"session_id": self.session_id, "terminal_id": terminal_id}
        try:
            ended = await asyncio.wait_for(self.client.wait_for_terminal_exit(**ids), time_limit)
        except TimeoutError:
            await self.client.kill_terminal(**ids)
            final = await self.client.terminal_output(**ids)
            return CommandRun(final.output, None, timed_out=True)
        final = await self.client.terminal_output(**ids)
        return CommandRun(final.output, exit_code_of(ended.exit_code, ended.signal))

    async def _poll(self, terminal_id: str, live: LiveOutput | None) -> None:
        """The output as it grows, into the tool's live view (growth only: a client that
        drops the beginning of a long output stops the view, not the command)."""
        if live is None:
            return
        seen = ""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                now = await self.client.terminal_output(
                    session_id=self.session_id, terminal_id=terminal_id
                )
            except Exception:  # the final answer reports failures
                return
            if now.output.startswith(seen) and len(now.output) > len(seen):
                live.feed(now.output[len(seen) :].encode("utf-8", "surrogatepass"))
                seen = now.output
            if now.exit_status is not None or now.truncated:
                return

    def _release_later(self, terminal_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._release(terminal_id))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _release(self, terminal_id: str) -> None:
        try:
            await self.client.release_terminal(session_id=self.session_id, terminal_id=terminal_id)
        except Exception as err:
            log.info("terminal/release %s: %s", terminal_id, err)
