"""The server's own process: non-dumpable, and its key gone from its environment block.

Each test runs a small Python process that calls ``tiller.hardening`` and waits, and looks at
it from outside through /proc, the way a command would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from users import User, as_user, python_for, require

SECRET = "sk-ant-hardening-7d6c5b4a39281706"

CHILD = """
import ctypes, os, sys
from tiller import hardening
print("started", flush=True)
sys.stdin.readline()
{action}
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print("done", repr(os.environ.get("ANTHROPIC_API_KEY")), libc.getenv(b"ANTHROPIC_API_KEY"),
      flush=True)
sys.stdin.readline()
"""


class Child:
    """A process that does ``action`` when told to, then waits for the end of its stdin."""

    def __init__(self, action: str, user: User = "root") -> None:
        """``user``: root runs it as whoever runs the tests."""
        python, env = python_for(user)
        self.process = subprocess.Popen(
            as_user(user, [python, "-c", CHILD.format(action=action)]),
            env={**os.environ, **env, "ANTHROPIC_API_KEY": SECRET, "OTHER_SETTING": "kept"},
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        assert self.process.stdout.readline() == "started\n"

    @property
    def environ(self) -> Path:
        return Path(f"/proc/{self.process.pid}/environ")

    def act(self) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return self.process.stdout.readline()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(10)


@pytest.fixture
def child() -> Iterator[Child]:
    found = Child("hardening.forget_credentials()")
    yield found
    found.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_forgotten_key_is_gone_from_proc_environ(child: Child) -> None:
    assert SECRET.encode() in child.environ.read_bytes()  # as exec left it
    said = child.act()
    assert said == "done '' b''\n"  # blank for Python and for C
    block = child.environ.read_bytes()
    assert SECRET.encode() not in block
    entries = block.split(b"\0")
    assert b"ANTHROPIC_API_KEY=" in entries and b"OTHER_SETTING=kept" in entries


def _read_as_nobody(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        as_user("nobody", ["cat", str(path)]), capture_output=True, text=True, check=False
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_undumpable_server_environ_and_mem_are_closed_to_its_own_user() -> None:
    """A process of the same user read the server's environment and memory from /proc."""
    require("nobody")
    child = Child("hardening.make_undumpable()", user="nobody")
    try:
        before = _read_as_nobody(child.environ)
        assert before.returncode == 0 and SECRET in before.stdout  # the route was open
        assert child.act().startswith("done")
        for name in ("environ", "mem", "maps"):
            after = _read_as_nobody(Path(f"/proc/{child.process.pid}/{name}"))
            assert after.returncode != 0 and "Permission denied" in after.stderr, name
            assert SECRET not in after.stdout
        assert Path(f"/proc/{child.process.pid}/status").stat().st_uid == 0  # root's now
    finally:
        child.close()
