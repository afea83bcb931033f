"""``tiller-server`` / ``python -m tiller``: serve JSON-RPC over stdio. Logs go to stderr."""

from __future__ import annotations

import logging
import os
import sys

from . import preload


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("TILLER_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    at = os.environ.get("PRE_AT", "initialized")
    if at == "start":
        preload.start(preload.SDK_MODULE)
    if sys.argv[1:] == ["--acp"]:  # the Agent Client Protocol instead (docs/acp.md)
        with preload.collector_paused():
            from .acp import serve

        serve()
        return
    if os.environ.get("NOGC"):
        from .pygls_adapter import serve_stdio
        from .rpc import build_server
    else:
        with preload.collector_paused():
            from .pygls_adapter import serve_stdio
            from .rpc import build_server
    if at == "imported":
        preload.start(preload.SDK_MODULE)
    serve_stdio(build_server())


if __name__ == "__main__":
    main()
