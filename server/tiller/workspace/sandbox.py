"""The kernel sandbox for commands: which backend works here, and the argv that confines one.

On Linux the backend is bubblewrap (``bwrap``). A command that runs without the user's yes
gets the whole filesystem read-only (the workspace too, or writable for approved commands
under ``sandbox: "always"``), a private ``/tmp`` and ``/run`` (so host sockets such as a
Docker daemon's are out of reach), no network, a new PID namespace whose processes all die
with it, and ``--die-with-parent``. It also gets a user namespace of its own with every
capability dropped, no nested user namespaces and a read-only ``/proc/sys``: bwrap started by
root would otherwise keep root's capabilities, and with them ``mount``, remounting the
read-only binds writable, and the host's sysctls (``kernel.core_pattern``).

A command the user approved (under the default ``sandbox: "auto"``) runs as the user, with a
writable filesystem and the network, but in a PID namespace of its own (:func:`isolate`): the
server (whose memory holds the API key) and every other process outside do not exist for it.

Whether bwrap works is probed once (a container without user namespaces may refuse it, an
older bwrap lacks ``--disable-userns``) and the answer is cached. A macOS backend would add a
``sandbox-exec`` branch to :func:`confine` (see docs/security.md).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tiller.workspace.tool_env import EnvRules, tool_env

log = logging.getLogger(__name__)

SandboxSetting = Literal["auto", "always", "off"]
SandboxBackend = Literal["bwrap", "none"]
SANDBOX_SETTINGS: tuple[SandboxSetting, ...] = ("auto", "always", "off")

PROBE_TIMEOUT_SECONDS = 10.0

# What holds the sandbox closed for a root server, strongest first (the probe takes the first
# that works): its own user namespace, no capabilities, no user namespaces inside it.
HARDENED = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")
# bubblewrap before 0.8 has no --disable-userns: a nested user namespace stays possible, but
# the mounts it inherits are locked, so it cannot make them writable.
HARDENED_OLD_BWRAP = ("--unshare-user", "--cap-drop", "ALL")
# Without user namespaces (some containers): root still loses every capability ...
ROOT_WITHOUT_USERNS = ("--cap-drop", "ALL")
# ... and a normal user has none to lose (a setuid bwrap refuses --cap-drop from it).
USER_WITHOUT_USERNS = ()


def _hardenings() -> tuple[tuple[str, ...], ...]:
    last = ROOT_WITHOUT_USERNS if os.geteuid() == 0 else USER_WITHOUT_USERNS
    return (HARDENED, HARDENED_OLD_BWRAP, last)


def _bwrap_base(bwrap: str, hardening: tuple[str, ...]) -> list[str]:
    return [
        bwrap,
        *("--ro-bind", "/", "/"),
        *("--dev", "/dev"),
        *("--proc", "/proc"),
        # The sandbox's /proc is writable: its /proc/sys would let uid 0 set the host's
        # sysctls (kernel.core_pattern runs a program as root), capabilities or not.
        *("--ro-bind", "/proc/sys", "/proc/sys"),
        *("--tmpfs", "/tmp"),
        *("--tmpfs", "/run"),
        "--unshare-all",  # user (when possible), ipc, pid, net, uts, cgroup
        *hardening,
        "--die-with-parent",
        "--new-session",
    ]


def _isolation_base(bwrap: str) -> list[str]:
    """An approved command's bwrap: everything as on the host (writable, devices, network),
    except a PID namespace of its own and a /proc that shows only it."""
    return [
        bwrap,
        *("--bind", "/", "/"),
        *("--dev-bind", "/dev", "/dev"),
        *("--proc", "/proc"),
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
    ]


def _failure(argv: list[str]) -> str | None:
    """Why ``argv`` (a bwrap running ``true``) does not exit 0; None when it does."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)
    if done.returncode != 0:
        return done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
    return None


@functools.cache
def sandbox_hardening() -> tuple[str, ...] | None:
    """The hardening flags the sandbox uses here (see HARDENED), or None: bwrap does not work.
    Probed once; the answer is cached."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    failures: list[str] = []
    for hardening in _hardenings():
        failure = _failure([*_bwrap_base(bwrap, hardening), "--", "true"])
        if failure is None:
            if failures:
                log.warning("bubblewrap runs with fewer restrictions here (%s)", failures[0])
            return hardening
        failures.append(failure)
    log.warning("bubblewrap does not work here: %s", failures[0])
    return None


@functools.cache
def bwrap_works() -> bool:
    """Whether bubblewrap can start both a sandboxed and an isolated ``true`` here. Probed
    once; the answer is cached."""
    if sandbox_hardening() is None:
        return False
    bwrap = shutil.which("bwrap") or "bwrap"
    failure = _failure([*_isolation_base(bwrap), "--", "true"])
    if failure is not None:
        log.warning("bubblewrap cannot give commands a PID namespace here: %s", failure)
        return False
    return True


def probed_bwrap() -> str | None:
    """Probe bubblewrap now (a warm template does, before it forks); the ``bwrap`` probed."""
    bwrap_works()
    return shutil.which("bwrap")


def keep_probe_if_same(bwrap: str | None) -> None:
    """In a process forked after `probed_bwrap`: the inherited answer holds where ``PATH``
    finds the same ``bwrap``; else it is forgotten, and probed again on first use."""
    if shutil.which("bwrap") != bwrap:
        sandbox_hardening.cache_clear()
        bwrap_works.cache_clear()


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
class Isolated:
    """Run as the user (writable, with the network) in a PID namespace of its own: the server
    and every other process outside it are invisible to it."""


@dataclass(frozen=True)
class Confined:
    """Run inside the sandbox; ``writable`` makes the workspace (and nothing else) writable.
    ``also``: the workspace's other roots, bound like it (``/tmp`` and ``/run`` are empty in
    the sandbox: a root there would be missing otherwise)."""

    writable: bool
    also: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Unavailable:
    """The settings demand a sandbox this machine does not have: do not run."""

    reason: str


Confinement = Unconfined | Isolated | Confined | Unavailable


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
        match self.setting, self.backend:
            case "always", "bwrap":
                return Confined(writable=True)
            case "always", _:
                return Unavailable(
                    'the setting sandbox: "always" asks for a sandbox, but bubblewrap (bwrap) '
                    'does not work here; install the package bubblewrap or set sandbox to "auto"'
                )
            case _, "bwrap":
                return Isolated()
            case _:
                return Unconfined()


def shell_policy(setting: SandboxSetting, scrub_env: Iterable[str] = ()) -> ShellPolicy:
    """The policy for the ``sandbox`` and ``scrubEnv`` settings: build it once at start.

    Probes bubblewrap (once per process, a few tens of ms, blocking) when the setting wants it.
    """
    rules = EnvRules.from_setting(scrub_env)
    return ShellPolicy(setting, choose_backend(setting), tool_env(rules))


def confine(
    argv: list[str], workspace: Path, writable: bool, also: Sequence[Path] = ()
) -> list[str]:
    """``argv`` wrapped in bwrap, run from ``workspace``; it and the other roots ``also`` are
    bound read-only unless writable (nothing else is ever writable)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    hardening = sandbox_hardening()
    if hardening is None:  # callers confine only where the probe found bwrap working
        hardening = HARDENED
    root = str(workspace)
    bind = "--bind" if writable else "--ro-bind"
    binds = [arg for path in (workspace, *also) for arg in (bind, str(path), str(path))]
    return [*_bwrap_base(bwrap, hardening), *binds, "--chdir", root, "--", *argv]


def isolate(argv: list[str], cwd: Path) -> list[str]:
    """``argv`` in a PID namespace of its own (and otherwise as on the host), run from ``cwd``."""
    bwrap = shutil.which("bwrap") or "bwrap"
    return [*_isolation_base(bwrap), "--chdir", str(cwd), "--", *argv]
