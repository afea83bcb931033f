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
    from .rpc import build_server

    build_server().start_io()


if __name__ == "__main__":
    main()
