"""``tiller trust [DIR] [--no]``: the user's decision for a folder, recorded in the user's own
state (``extend/trust.py``), and what it means for the folder's settings files, said."""

from __future__ import annotations

import sys
from pathlib import Path

from tiller.extend.settings_layer import read_settings
from tiller.extend.trust import Trust, record

EXIT_OK = 0
EXIT_USAGE = 64


def trust_folder(folder: Path, *, trusted: bool) -> int:
    """Record the decision; print where it is kept and what the folder's files hold."""
    if not folder.is_dir():
        print(f"tiller trust: error: not a folder: {folder}", file=sys.stderr)
        return EXIT_USAGE
    folder = folder.resolve()
    where = record(folder, trusted)
    held = read_settings(folder, Trust(False, "tiller trust")).withheld()
    if trusted:
        print(f"Trusted {folder} (kept in {where}).")
        if held:
            print("Its settings files may now run programs and widen grants:")
            print("".join(f"  {line}\n" for line in held), end="")
    else:
        print(f"Not trusting {folder} (kept in {where}).")
        if held:
            print("Left out of every session there (deny and ask rules still apply):")
            print("".join(f"  {line}\n" for line in held), end="")
    return EXIT_OK
