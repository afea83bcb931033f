"""``tiller-server`` / ``python -m tiller``: serve JSON-RPC over stdio. Logs go to stderr.

The server's modules load with the collector's full passes paused (``tiller.preload``: ~25 %
faster). The SDK is not imported here but on ``initialized``, in a thread: started any earlier
it only competes with these imports for the GIL (measured: ``initialize`` answered ~0.2-2 s
later, the first answer no sooner; see bench/README.md).
"""

from __future__ import annotations

import logging
import os
import sys

from tiller import preload
from tiller.hardening import make_undumpable


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("TILLER_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Before anything holds a secret: commands running as the same user cannot read this
    # process's environment or memory (hardening.py).
    make_undumpable()
    if sys.argv[1:] == ["--acp"]:  # the Agent Client Protocol instead (docs/acp.md)
        with preload.full_collections_paused():
            from tiller.faces.acp import serve

        serve()
        return
    with preload.full_collections_paused():
        from tiller.faces.lsp.pygls_adapter import serve_stdio
        from tiller.faces.lsp.rpc import build_server

    serve_stdio(build_server())


if __name__ == "__main__":
    main()
