"""``tiller-server`` / ``python -m tiller``: serve JSON-RPC over stdio (``faces/serve.py`` says
which protocol and how). Logs go to stderr."""

from __future__ import annotations

from tiller.faces.serve import main

if __name__ == "__main__":
    main()
