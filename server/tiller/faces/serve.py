"""Serving a protocol on this process's stdio: the Tiller protocol (``faces/lsp``) or ACP
(``faces/acp``), here or from the warm template. ``python -m tiller`` (``tiller/__main__.py``)
and ``tiller connect``/``tiller acp`` (``faces/command_line.py``) start here.

- ``python -m tiller``: the Tiller protocol (what ``tiller run`` and ``tiller chat`` spawn
  when no warm template serves them);
- ``python -m tiller --acp``: the Agent Client Protocol (docs/acp.md);
- ``python -m tiller --warm [--acp]`` (``tiller connect``, what the VS Code extension
  starts): the same on this process's stdio, served by a server forked from the warm
  template (``tiller.warm``; this process only waits for it and passes signals on), or here
  when there is no template to be had.

The server's modules load with the collector's full passes paused (``tiller.preload``: ~25 %
faster). The Tiller protocol's server does not import the SDK here but on ``initialized``, in
a thread: started any earlier it only competes with these imports for the GIL (measured:
``initialize`` answered ~0.2-2 s later, the first answer no sooner; see bench/README.md).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

from tiller import allocator, preload
from tiller.hardening import make_undumpable


def _log_to_stderr() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("TILLER_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def serve(args: list[str]) -> None:
    """Serve in this process: ACP with ``["--acp"]``, else the Tiller protocol."""
    # Before anything holds a secret: commands running as the same user cannot read this
    # process's environment or memory (hardening.py).
    make_undumpable()
    allocator.tune()  # before the server allocates much (allocator.py: issue 36)
    if args == ["--acp"]:  # the Agent Client Protocol instead (docs/acp.md)
        with preload.full_collections_paused():
            from tiller.faces.acp import serve as serve_acp

        serve_acp()
        return
    with preload.full_collections_paused():
        from tiller.faces.lsp.pygls_adapter import serve_stdio
        from tiller.faces.lsp.rpc import build_server

    serve_stdio(build_server())


def serve_warm(args: list[str]) -> NoReturn:
    """A server on this process's stdio: forked from the warm template, else served here."""
    _log_to_stderr()
    from tiller.faces.forked.client import serve_forked

    code = serve_forked(args)
    if code is None:
        serve(args)
        code = 0
    sys.exit(code)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--warm"]:
        serve_warm(args[1:])
    _log_to_stderr()
    serve(args)
