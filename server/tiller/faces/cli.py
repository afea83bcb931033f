"""``tiller``: the terminal clients' command (the ``tiller`` script), a front door cheap to import.

- ``tiller acp`` goes to the ACP face at once: an editor waits for its ``initialize`` answer.
- ``tiller run ...`` is handed, descriptors, environment and all, to a fork of the warm
  template (``tiller.faces.forked.client.run_forked``), which has the client and the server imported
  already and runs the command as this process would. This process only waits for it, passes
  signals on and exits with its code. Importing the client alone costs a fresh process more
  than the rest of a warm one-shot (bench/README.md).
- Everything else, and every ``run`` no template can take (none ready, ``TILLER_WARM=0``, not
  Linux), is parsed and run here: ``tiller.faces.command_line`` (its doc lists the commands,
  options and exit codes).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["acp"]:
        from tiller.faces.serve import serve_warm

        serve_warm(["--acp"])
    if args[:1] == ["run"]:
        from tiller.faces.forked.client import run_forked

        code = run_forked(args)
        if code is not None:
            sys.exit(code)
    from tiller.faces.command_line import main as run_here

    run_here(args)


if __name__ == "__main__":
    main()
