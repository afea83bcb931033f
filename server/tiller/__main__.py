"""``tiller-server`` / ``python -m tiller``: serve JSON-RPC over stdio. Logs go to stderr."""

from __future__ import annotations

import logging
import os
import sys


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("TILLER_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if sys.argv[1:] == ["--acp"]:  # the Agent Client Protocol instead (docs/acp.md)
        from .acp import serve

        serve()
        return
    from .pygls_adapter import serve_stdio
    from .rpc import build_server

    serve_stdio(build_server())


if __name__ == "__main__":
    main()
