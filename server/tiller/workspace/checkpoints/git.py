"""The git of a shadow repository: ``GIT_DIR`` under ``dataDir``, the workspace as work tree,
an index of its own, and nothing from the user's git environment or system config, so the
user's own ``.git`` is never read or written.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from tiller.errors import TillerError

_IDENTITY = {
    "GIT_AUTHOR_NAME": "tiller",
    "GIT_AUTHOR_EMAIL": "tiller@localhost",
    "GIT_COMMITTER_NAME": "tiller",
    "GIT_COMMITTER_EMAIL": "tiller@localhost",
}


GIT_TIMEOUT_S = 120.0  # one git run of a snapshot or a restore; gc gets longer

# Given to every run (``-c`` overrides what the repository's config says, so repositories
# made by earlier versions, which wrote these into their config, behave the same): five
# ``git config`` runs fewer for each new repository.
SETTINGS = tuple(
    arg
    for setting in (
        "core.quotepath=off",
        "core.autocrlf=false",
        "core.filemode=true",
        "core.symlinks=true",
        "gc.auto=0",  # gc runs between turns, when it has work (``ShadowRepo.collect``)
        "commit.gpgsign=false",
    )
    for arg in ("-c", setting)
)


class CheckpointError(TillerError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="checkpoint")


class Entry(NamedTuple):
    """One file as git sees it: mode (``100644``, ``100755``, ``120000``) and blob id.
    (A named tuple: a snapshot makes and compares tens of thousands of them.)"""

    mode: str
    blob: str


@dataclass(frozen=True)
class ShadowGit:
    """Runs git on the shadow repository ``git_dir`` with ``workspace`` as its work tree."""

    git_dir: Path
    workspace: Path

    def _env(self, index: Path | None = None) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k == "GIT_EXEC_PATH"
        }
        env.update(_IDENTITY)
        env["GIT_DIR"] = str(self.git_dir)
        env["GIT_WORK_TREE"] = str(self.workspace)
        env["GIT_INDEX_FILE"] = str(index or self.git_dir / "tiller-index")
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_TERMINAL_PROMPT"] = "0"
        return env

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        index: Path | None = None,
        work_tree: Path | None = None,
        timeout: float = GIT_TIMEOUT_S,
    ) -> bytes:
        """git's output; CheckpointError with its stderr when it fails or outlasts
        ``timeout`` (then it is killed: a checkpoint never holds a turn for good)."""
        env = self._env(index)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        try:
            done = subprocess.run(
                ["git", *SETTINGS, *args],
                input=stdin,
                capture_output=True,
                env=env,
                cwd=self.workspace,
                check=False,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise CheckpointError(f"git {args[0]} took longer than {timeout:.0f} s") from None
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip()
            raise CheckpointError(f"git {args[0]} failed: {why}")
        return done.stdout

    def ensure(self) -> bool:
        """Create the repository unless it exists (its settings come with every run); True
        when it was created now."""
        if (self.git_dir / "HEAD").exists():
            return False
        self.git_dir.mkdir(parents=True, exist_ok=True)
        self.run("init", "--quiet", "--template=")  # no sample hooks: 9 files, not 27
        return True
