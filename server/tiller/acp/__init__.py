"""Tiller as an Agent Client Protocol (ACP v1) agent over stdio: ``tiller-server --acp``.

The same ``Session``/``Turn`` core as the Tiller protocol; this package only maps one
protocol onto it (see docs/acp.md). Built on the official SDK (``agent-client-protocol``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

log = logging.getLogger(__name__)


def serve() -> None:
    """Serve ACP on stdin/stdout until the client closes stdin (or SIGTERM)."""
    asyncio.run(_serve())


async def _serve() -> None:
    from acp import run_agent

    from .agent import TillerAgent

    agent = TillerAgent()
    loop = asyncio.get_running_loop()
    stopping: set[asyncio.Task[None]] = set()

    async def terminate() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(agent.shutdown(), 5)
        logging.shutdown()
        os._exit(128 + signal.SIGTERM)

    loop.add_signal_handler(signal.SIGTERM, lambda: stopping.add(loop.create_task(terminate())))
    try:
        await run_agent(agent)
    finally:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(agent.shutdown(), 5)
