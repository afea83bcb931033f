"""Keeping a file of the user's own out of git: ``.tiller/settings.local.json`` holds the user's
"Always allow" rules for a folder, never the team's, so when Tiller writes it git is told to
ignore it, unless git already ignores or tracks it.

Claude Code does the same for its ``.claude/settings.local.json``: when it writes the file
inside a git repository that does not ignore it yet (``git check-ignore``), it appends
``**/.claude/settings.local.json`` to the user's global excludes file (``~/.config/git/ignore``).
Tiller follows it but for the place: it appends the file's own path to the repository's
``info/exclude`` (``git rev-parse --git-path``, which linked worktrees share), which git never
tracks, where a global excludes file is often a tracked file of a dotfiles repository, and
which changes nothing outside the repository the file is in. The user's ``.gitignore`` is never
touched.

Git runs with its location variables removed and with nothing a repository's configuration
could make it start (``core.fsmonitor`` off, no hooks): a folder's ``.git/config`` is a
stranger's until the folder is trusted. Blocking (three quick git runs): call it off the loop.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Final

GIT_SECONDS: Final = 5.0
SAFE: Final = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
_SPECIAL = re.compile(r"([*?\[\\])")  # what a gitignore pattern reads as a wildcard


def keep_out_of_git(path: Path) -> Path | None:
    """Make git ignore ``path`` (a file Tiller writes for the user alone) in the repository it
    lies in. Returns the exclude file written; None when there was nothing to do (not in a
    repository, already ignored, tracked) or git could not tell (missing, failing)."""
    where = path.parent
    found = _git(where, "rev-parse", "--show-toplevel", "--git-path", "info/exclude")
    if found is None or len(found.splitlines()) != 2:
        return None
    top, exclude_path = found.splitlines()
    exclude = where / exclude_path  # relative to ``where`` unless absolute
    try:
        relative = Path(os.path.realpath(path)).relative_to(os.path.realpath(top)).as_posix()
    except ValueError:
        return None
    if _git(where, "check-ignore", "-q", "--", str(path)) is not None:
        return None  # ignored already (a .gitignore, the excludes, Claude Code's global rule)
    if _git(where, "ls-files", "--error-unmatch", "--", str(path)) is not None:
        return None  # tracked: the repository chose to keep it
    line = "/" + _SPECIAL.sub(r"\\\1", relative)
    try:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if line in text.splitlines():
            return None
        joiner = "" if not text or text.endswith("\n") else "\n"
        with exclude.open("a", encoding="utf-8") as out:
            out.write(f"{joiner}# the user's own Tiller settings (Tiller added this line)\n")
            out.write(f"{line}\n")
    except OSError:
        return None
    return exclude


def _git(where: Path, *args: str) -> str | None:
    """git's output in ``where``, or None when it fails (a non-zero exit is an answer too:
    ``check-ignore`` and ``ls-files --error-unmatch`` say "no" that way)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            ["git", *SAFE, *args], cwd=where, env=env, capture_output=True, text=True,
            timeout=GIT_SECONDS, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
