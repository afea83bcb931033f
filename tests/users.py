"""Running test processes as root and as an unprivileged user, for the sandbox tests.

A test parametrized with ``USERS`` runs once ``as_root`` (skipped unless the tests run as
root, as CI does) and once ``as_nobody``: through ``setpriv`` as uid 65534 when the tests run
as root, else as the user running them. Paths such a process uses must be its own and
reachable: ``user_dir`` makes them under /var/tmp (pytest's tmp_path is private to root, and
the sandbox hides the host's /tmp).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

User = Literal["root", "nobody"]
NOBODY = 65534
USERS = (pytest.param("root", id="as_root"), pytest.param("nobody", id="as_nobody"))


def require(user: User) -> None:
    """Skip a root variant when the tests do not run as root."""
    if user == "root" and os.geteuid() != 0:
        pytest.skip("needs root (CI runs the tests as root)")
    if user == "nobody" and os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to run the unprivileged variant as root")


def uid_of(user: User) -> int:
    if user == "root":
        return 0
    return NOBODY if os.geteuid() == 0 else os.geteuid()


def as_user(user: User, argv: list[str]) -> list[str]:
    """``argv`` run as ``user``."""
    if user == "nobody" and os.geteuid() == 0:
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return argv


@contextmanager
def user_dir(user: User, prefix: str = "tiller-test-") -> Iterator[Path]:
    """A fresh directory owned by ``user``, outside /tmp (visible in the sandbox)."""
    base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        path.chmod(0o755)
        if os.geteuid() == 0:
            os.chown(path, uid_of(user), uid_of(user))
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make_dir(path: Path, user: User) -> Path:
    """``path`` created and owned by ``user``."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, uid_of(user), uid_of(user))
    return path


def chown_tree(root: Path, user: User) -> None:
    if os.geteuid() != 0:
        return
    uid = uid_of(user)
    os.chown(root, uid, uid, follow_symlinks=False)
    for path in root.rglob("*"):
        os.chown(path, uid, uid, follow_symlinks=False)


def _import_path() -> str:
    """Where this interpreter finds Tiller and its dependencies."""
    import tiller

    server = str(Path(tiller.__file__).resolve().parents[1])
    packages = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return os.pathsep.join([server, *packages])


@functools.cache
def python_for(user: User) -> tuple[str, dict[str, str]]:
    """An interpreter ``user`` can run that finds Tiller and its dependencies, and the
    variables it needs for that. The venv's own first; else the system's Python of the same
    version with the venv's packages on ``PYTHONPATH`` (the venv may live under /root).

    The check finds the modules a server imports and loads the compiled core they share
    (pydantic's): what a Python the user cannot use fails at. Importing them all took ~3.7 s
    of CPU per test process, and the server the test starts next imports them anyway."""
    if user == "root" or os.geteuid() != 0:
        return sys.executable, {}
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    env = {"PYTHONPATH": _import_path()}
    candidates = [sys.executable, shutil.which(f"python{version}"), f"/usr/bin/python{version}"]
    check = (
        "import importlib.util, pydantic_core._pydantic_core; assert all(map("
        "importlib.util.find_spec, ['tiller.faces.lsp.rpc', 'tiller.faces.acp.agent', "
        "'anthropic', 'pygls', 'acp', 'bashlex']))"
    )
    for python in dict.fromkeys(c for c in candidates if c):
        try:
            done = subprocess.run(  # through sh: the server must be able to exec it too
                as_user(user, ["/bin/sh", "-c", 'exec "$0" -c "$1"', python, check]),
                env={**os.environ, **env},
                cwd="/",
                capture_output=True,
                timeout=60,
                check=False,
            )
        except OSError:
            continue
        if done.returncode == 0:
            return python, env
    pytest.skip(f"no Python {version} that uid {NOBODY} can run finds Tiller here")
