"""The kernel sandbox for commands: which backend works here, and the argv that confines one.

On Linux the backend is bubblewrap (``bwrap``): the whole filesystem read-only (the workspace
too, or writable for approved commands under ``sandbox: "always"``), a private ``/tmp`` and
``/run`` (so host sockets such as a Docker daemon's are out of reach), no network, a new PID
namespace whose processes all die with it, and ``--die-with-parent``. Whether bwrap works is
probed once (a container without user namespaces may refuse it) and the answer is cached.
A macOS backend would add a ``sandbox-exec`` branch to :func:`confine` (see docs/security.md).
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..tool_env import EnvRules, tool_env

log = logging.getLogger(__name__)

SandboxSetting = Literal["auto", "always", "off"]
SandboxBackend = Literal["bwrap", "none"]
SANDBOX_SETTINGS: tuple[SandboxSetting, ...] = ("auto", "always", "off")

PROBE_TIMEOUT_SECONDS = 10.0


def _bwrap_base(bwrap: str) -> list[str]:
    return [
        bwrap,
        *("--ro-bind", "/", "/"),
        *("--dev", "/dev"),
        *("--proc", "/proc"),
        *("--tmpfs", "/tmp"),
        *("--tmpfs", "/run"),
        "--unshare-all",  # user (when possible), ipc, pid, net, uts, cgroup
        "--die-with-parent",
        "--new-session",
    ]


@functools.cache
def bwrap_works() -> bool:
    """Whether bubblewrap can start a confined ``true`` here. Run once; the answer is cached."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    try:
        done = subprocess.run(
            [*_bwrap_base(bwrap), "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:
        log.warning("bubblewrap probe failed: %s", err)
        return False
    if done.returncode != 0:
        log.warning("bubblewrap does not work here: %s", done.stderr.decode(errors="replace"))
    return done.returncode == 0


def choose_backend(setting: SandboxSetting) -> SandboxBackend:
    """The backend for a ``sandbox`` setting: bwrap when wanted and working, else none."""
    match setting:
        case "off":
            return "none"
        case "auto" | "always":
            return "bwrap" if bwrap_works() else "none"


@dataclass(frozen=True)
class Unconfined:
    """Run as the user, with the scrubbed environment only."""


@dataclass(frozen=True)
class Confined:
    """Run inside the sandbox; ``writable`` makes the workspace (and nothing else) writable."""

    writable: bool


@dataclass(frozen=True)
class Unavailable:
    """The settings demand a sandbox this machine does not have: do not run."""

    reason: str


Confinement = Unconfined | Confined | Unavailable


@dataclass(frozen=True)
class ShellPolicy:
    """How commands run in this server: fixed at start, shared by every turn.

    ``setting`` is the user's ``sandbox`` setting, ``backend`` what the start-up probe found,
    ``env`` the scrubbed environment every command gets.
    """

    setting: SandboxSetting = "off"
    backend: SandboxBackend = "none"
    env: Mapping[str, str] = field(default_factory=tool_env)

    def confinement(self, *, asked: bool) -> Confinement:
        """How to run a command; ``asked``: the user approved it (else it runs unasked)."""
        if not asked:
            # Read-only by classification: the sandbox where there is one, else the
            # classifier alone decided.
            return Confined(writable=False) if self.backend == "bwrap" else Unconfined()
        if self.setting != "always":
            return Unconfined()
        if self.backend == "bwrap":
            return Confined(writable=True)
        return Unavailable(
            'the setting sandbox: "always" asks for a sandbox, but bubblewrap (bwrap) does not '
            'work here; install the package bubblewrap or set sandbox to "auto"'
        )


def shell_policy(setting: SandboxSetting, scrub_env: Iterable[str] = ()) -> ShellPolicy:
    """The policy for the ``sandbox`` and ``scrubEnv`` settings: build it once at start.

    Probes bubblewrap (once per process, a few tens of ms, blocking) when the setting wants it.
    """
    rules = EnvRules.from_setting(scrub_env)
    return ShellPolicy(setting, choose_backend(setting), tool_env(rules))


def confine(argv: list[str], workspace: Path, writable: bool) -> list[str]:
    """``argv`` wrapped in bwrap, run from ``workspace`` (bound read-only unless writable)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    root = str(workspace)
    bind = "--bind" if writable else "--ro-bind"
    return [*_bwrap_base(bwrap), bind, root, root, "--chdir", root, "--", *argv]
