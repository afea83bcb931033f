"""Tiller as an Agent Client Protocol (ACP v1) agent over stdio: ``tiller-server --acp``.

The same ``Session``/``Turn`` core as the Tiller protocol; this package only maps one
protocol onto it (see docs/acp.md). Built on the official SDK (``agent-client-protocol``).
"""

from __future__ import annotations

import sys

from tiller import preload
from tiller.faces.acp.opening import Opening, read_opening, write_all

AGENT_MODULE = "tiller.faces.acp.agent"  # the agent, the core and the ACP SDK: ~1.5 s cold


def serve() -> None:
    """Serve ACP on stdin/stdout until the client closes stdin (or SIGTERM).

    The agent, then the Anthropic SDK, start loading now in a thread (``tiller.preload``):
    an editor sends its first prompt soon after ``initialize``, and the imports are most of a
    cold start. Meanwhile the client's first line is read here and, when it is an
    ``initialize``, answered at once (`tiller.faces.acp.opening`). In a server forked from
    the warm template all is loaded already: the SDK reads everything, as it always did.
    """
    loaded = AGENT_MODULE in sys.modules
    preload.after(AGENT_MODULE, lambda: preload.start(preload.SDK_MODULE))
    loading = preload.start(AGENT_MODULE)
    opening = Opening(b"") if loaded else read_opening(sys.stdin.fileno())
    write_all(sys.stdout.fileno(), opening.answer)
    loading.result()
    from tiller.faces.acp.stdio import serve_stdio

    serve_stdio(opening)
